"""The ``defer_server`` suggestion: an MCP server whose tools are all sent, deferred instead; its figures
are the inspect answer's, applied by the agent PATCH it names."""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest

from hango.agent.toolset import TOOL_SEARCH
from hango.providers.prices import Prices
from tests.inspector.conftest import OFFLINE, Lab, assistant, by_id, excluding, user
from tests.inspector.test_deferred_tools import GIT_TOOLS, LOADED, groups
from tests.inspector.test_suggestions import answered, of_kind, suggestions
from tests.support.mcp import store_server

SONNET = "anthropic/claude-sonnet-4-6"  # a model with known prices: the money rule has figures
SEARCH = f"tool:{TOOL_SEARCH}"


def agent_with_git(
    lab: Lab, tools: list[str] = LOADED, defer: dict[str, Any] | None = None, model: str = OFFLINE
) -> str:
    """An agent of ``tools`` and the ``git`` server's three tools, deferring ``defer``."""
    agent = lab.agent(model=model, tools=tools, **({"defer": defer} if defer else {}))
    lab.store(lambda s: store_server(s, uuid.UUID(agent), "git", GIT_TOOLS))
    return agent


def held_session(lab: Lab, agent: str) -> str:
    """A session whose first call was made, so the provider holds a prefix past the cache's minimum."""
    session = lab.session(agent, [user("read this " * 2_000)])
    assert lab.say(session, "go").status_code == 201
    return session


def defer_suggestions(lab: Lab, session: str) -> list[dict[str, Any]]:
    return of_kind(suggestions(lab, session), "defer_server")


def patch_defer(lab: Lab, agent: str, suggestion: dict[str, Any]) -> None:
    response = lab.who.patch(f"/v1/agents/{agent}", json=suggestion["apply"])
    assert response.status_code == 200, response.get_json()


def test_defer_server_saves_the_groups_sent_tokens_less_what_the_search_tools_definition_grows_by(lab: Lab):
    agent = agent_with_git(lab, tools=[*LOADED, "grep"], defer={"tools": ["tool:grep"]})
    session = lab.session(agent, [user("hi")])
    before = lab.inspect(session)
    git = groups(before)["git"]

    [found] = defer_suggestions(lab, session)
    assert (found["parts"], found["target"]) == (["tool:git/*"], "defer")
    assert found["apply"] == {"defer": {"tools": ["tool:grep", "tool:git/*"], "auto_percent": None}}

    patch_defer(lab, agent, found)
    after = lab.inspect(session)
    grown = by_id(after)[SEARCH]["tokens"] - by_id(before)[SEARCH]["tokens"]  # it names the git server now
    assert grown > 0
    assert found["tokens_saved"] == git["tokens"] - grown == before["total_after"] - after["total_after"]
    assert groups(after)["git"]["deferred_tokens"] == git["tokens"]
    assert defer_suggestions(lab, session) == []  # a deferred server is not suggested again


def test_defer_server_for_an_agent_deferring_nothing_counts_the_search_tool_it_starts_sending(lab: Lab):
    agent = agent_with_git(lab)
    session = lab.session(agent, [user("hi")])
    before = lab.inspect(session)
    assert SEARCH not in by_id(before)

    [found] = defer_suggestions(lab, session)
    assert found["apply"] == {"defer": {"tools": ["tool:git/*"], "auto_percent": None}}

    patch_defer(lab, agent, found)
    after = lab.inspect(session)
    search = by_id(after)[SEARCH]
    assert search["included"] is True
    assert found["tokens_saved"] == groups(before)["git"]["tokens"] - search["tokens"]
    assert found["tokens_saved"] == before["total_after"] - after["total_after"]


def test_defer_server_writes_the_cache_from_the_servers_first_tool_on_less_its_own_tools(lab: Lab):
    session = held_session(lab, agent_with_git(lab, model=SONNET))
    git = groups(lab.inspect(session))["git"]

    [found] = defer_suggestions(lab, session)

    # the one cache model's price, as for leaving the server out by an override: what is sent from the
    # server's first tool on is written again (the group's figure), but its own tools are not sent at all
    left_out = lab.who.post(
        f"/v1/sessions/{session}/context/preview", json={"agent": excluding("tool:git/*")}
    )
    assert left_out.status_code == 200, left_out.get_json()
    assert found["cache_loss_tokens"] == left_out.get_json()["pending"]["cache_loss_tokens"]
    assert 0 < found["cache_loss_tokens"] < git["cache_loss_tokens"]


def test_defer_server_break_even_is_the_cache_write_over_the_per_call_saving_at_the_models_prices(lab: Lab):
    session = held_session(lab, agent_with_git(lab, model=SONNET))
    rates = Prices().rates(SONNET)

    [found] = defer_suggestions(lab, session)

    saved = rates.usd(found["tokens_saved"], "cache_read_mtok")
    loss = rates.usd(found["cache_loss_tokens"], "cache_write_mtok", "cache_read_mtok")
    assert found["usd_saved_per_call"] == pytest.approx(saved)
    assert found["usd_cache_loss"] == pytest.approx(loss) and loss > 0
    assert found["break_even_calls"] == math.ceil(loss / saved) >= 1


def test_defer_server_counts_the_calls_of_the_servers_tools_in_the_history(lab: Lab):
    history = [
        user("what changed?"),
        *answered("git__git_log", "commit 1"),  # the name the model calls a server's tool by
        *answered("git__git_status", "clean"),
        *answered("ls", "a.py", path="/"),
        *answered("git__git_log", "commit 2"),
        assistant("nothing much"),
    ]
    session = lab.session(agent_with_git(lab), history)

    [found] = defer_suggestions(lab, session)

    assert (found["calls"], found["answers"]) == (3, 5)
    assert "called 3 times in the last 5 answers" in found["reason"]


@pytest.mark.parametrize(
    "defer",
    [
        {"tools": ["tool:git/*"]},  # deferred already
        {"tools": ["tool:git/git_log"]},  # one of its tools deferred: not all sent
    ],
)
def test_defer_server_is_not_suggested_for_a_server_the_agent_defers(lab: Lab, defer: dict[str, Any]):
    session = lab.session(agent_with_git(lab, defer=defer), [user("hi")])
    assert defer_suggestions(lab, session) == []


@pytest.mark.parametrize(
    ("tools", "defer"),
    [
        ([], None),  # the server's tools are the agent's only ones
        (["grep"], {"tools": ["tool:grep"]}),  # its only built-in is deferred already
    ],
)
def test_defer_server_is_not_suggested_when_it_would_defer_every_tool_of_the_agent(
    lab: Lab, tools: list[str], defer: dict[str, Any] | None
):
    session = lab.session(agent_with_git(lab, tools=tools, defer=defer), [user("hi")])
    assert defer_suggestions(lab, session) == []
