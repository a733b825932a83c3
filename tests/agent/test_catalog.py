"""The catalog is derived from the registries: the default stack's tools and the provider factories."""

from __future__ import annotations

from hango.agent import catalog
from hango.agent.stack import build_chain
from hango.agent.state import RunState
from hango.providers import split_model


def test_catalog_lists_exactly_the_tools_the_default_stack_provides(state: RunState) -> None:
    provided = build_chain().tools(state)

    assert sorted(catalog.BUILTIN_TOOLS) == sorted(provided)


def test_catalog_lists_exactly_the_providers_the_registry_knows() -> None:
    for name in catalog.PROVIDERS:
        assert split_model(f"{name}/some-model") == (name, "some-model")
    assert split_model(catalog.DEFAULT_MODEL)[0] in catalog.PROVIDERS
