"""The options an agent is configured from are derived from the registries: the default stack's tools and the provider factories."""

from __future__ import annotations

from hango.agent import options
from hango.agent.stack import build_chain
from hango.agent.state import RunState
from hango.providers import split_model


def test_catalog_lists_exactly_the_tools_the_default_stack_provides(state: RunState) -> None:
    provided = build_chain().tools(state)

    assert sorted(options.BUILTIN_TOOLS) == sorted(provided)


def test_catalog_lists_exactly_the_providers_the_registry_knows() -> None:
    for name in options.PROVIDERS:
        assert split_model(f"{name}/some-model") == (name, "some-model")
    assert split_model(options.DEFAULT_MODEL)[0] in options.PROVIDERS
