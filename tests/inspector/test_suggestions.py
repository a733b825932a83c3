"""``GET /v1/sessions/{id}/context/suggestions``: each kind fires where it must and stays quiet where it must not."""

from __future__ import annotations

from typing import Any

import pytest

from hango.telemetry import names
from tests.fakes.provider_server import COUNT_TOKENS, MESSAGES
from tests.inspector.conftest import OFFLINE, Lab, Stored, assistant, by_id, excluding, user
from tests.support.world import row_counts, snapshot

_ids = iter(range(1, 10_000))


def call(name: str, **arguments: Any) -> tuple[str, Stored]:
    """An assistant message calling ``name`` once, and the call's id."""
    ident = f"toolu_{next(_ids):04d}"
    return ident, ("assistant", [{"type": "tool_use", "id": ident, "name": name, "input": arguments}])


def answered(name: str, result: str, /, *, error: bool = False, **arguments: Any) -> list[Stored]:
    """A call of ``name`` and the user message holding its ``result``."""
    ident, message = call(name, **arguments)
    block = {"type": "tool_result", "tool_use_id": ident, "content": result, "is_error": error}
    return [message, ("user", [block])]


def suggestions(lab: Lab, session: str, **query: Any) -> list[dict[str, Any]]:
    response = lab.who.get(f"/v1/sessions/{session}/context/suggestions", query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["suggestions"]


def kinds(found: list[dict[str, Any]]) -> list[str]:
    return [s["kind"] for s in found]


def of_kind(found: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [s for s in found if s["kind"] == kind]


def session_with(lab: Lab, history: list[Stored], **agent: Any) -> str:
    return lab.session(lab.agent(model=OFFLINE, **agent), history)


# 1 user · 2-3 read /a.py · 4 assistant · 5 user · 6-7 edit /a.py · 8 assistant
def edited_after_read(edit_path: str = "/src/a.py", edit_error: bool = False) -> list[Stored]:
    return [
        user("fix the bug in a.py"),
        *answered("read_file", "1\tdef f():\n2\t    return 1\n" * 20, path="/src/a.py"),
        assistant("I see the bug"),
        user("go ahead"),
        *answered("edit_file", "replaced 1 occurrence", error=edit_error, path=edit_path, old_string="1"),
        assistant("done"),
    ]


def test_superseded_result_fires_for_a_read_that_a_later_edit_made_out_of_date(lab: Lab):
    session = session_with(lab, edited_after_read())

    found = of_kind(suggestions(lab, session), "superseded_result")

    assert [s["parts"] for s in found] == [["message:2", "message:3"]]
    parts = by_id(lab.inspect(session))
    assert found[0]["tokens_saved"] == parts["message:2"]["tokens"] + parts["message:3"]["tokens"]
    assert found[0]["target"] == "session"
    assert "/src/a.py" in found[0]["reason"]
    change = lab.who.post(
        f"/v1/sessions/{session}/context/preview", json={"session": excluding("message:2")}
    ).get_json()["pending"]
    assert found[0]["cache_loss_tokens"] == change["cache_loss_tokens"]


def test_superseded_result_fires_for_a_folder_listing_after_a_write_under_it(lab: Lab):
    history = [
        user("add a module"),
        *answered("ls", "a.py\nb.py", path="/src"),
        assistant("ok"),
        *answered("write_file", "wrote 3 characters to /src/c.py", path="/src/c.py", content="x=1"),
        assistant("done"),
    ]
    found = of_kind(suggestions(lab, session_with(lab, history)), "superseded_result")
    assert [s["parts"] for s in found] == [["message:2", "message:3"]]


def test_superseded_result_fires_for_the_same_grep_run_again(lab: Lab):
    history = [
        user("where is TODO?"),
        *answered("grep", "/src/a.py:3: TODO one", pattern="TODO", path="/src"),
        assistant("one"),
        user("again"),
        *answered("grep", "/src/a.py:3: TODO one\n/src/b.py:9: TODO two", pattern="TODO", path="/src"),
        assistant("two"),
    ]
    found = of_kind(suggestions(lab, session_with(lab, history)), "superseded_result")
    assert [s["parts"] for s in found] == [["message:2", "message:3"]]


@pytest.mark.parametrize(
    "history",
    [
        pytest.param(edited_after_read(edit_path="/src/b.py"), id="another file edited"),
        pytest.param(edited_after_read(edit_error=True), id="the edit failed"),
    ],
)
def test_superseded_result_does_not_fire_when_the_file_did_not_change(lab: Lab, history: list[Stored]):
    assert of_kind(suggestions(lab, session_with(lab, history)), "superseded_result") == []


def test_duplicate_result_fires_for_a_result_a_later_one_repeats(lab: Lab):
    listing = "/src/a.py\n/src/b.py\n/src/c.py"
    history = [
        user("what is in src?"),
        *answered("glob", listing, pattern="*.py", path="/src"),
        assistant("three files"),
        *answered("glob", listing, pattern="**/*.py", path="/src"),
        assistant("still three"),
    ]

    found = suggestions(lab, session_with(lab, history))

    assert [(s["kind"], s["parts"]) for s in found] == [("duplicate_result", ["message:2", "message:3"])]


def test_duplicate_result_does_not_fire_when_the_contents_differ(lab: Lab):
    history = [
        user("what is in src?"),
        *answered("glob", "/src/a.py", pattern="*.py", path="/src"),
        assistant("one"),
        *answered("glob", "/src/b.py", pattern="b*", path="/src"),
        assistant("another"),
    ]
    assert suggestions(lab, session_with(lab, history)) == []


def long_output_then(turns: int) -> list[Stored]:
    """A long command output followed by ``turns`` question/answer pairs."""
    history = [user("run the tests"), *answered("grep", "FAILED test_x.py::test_y\n" * 200, pattern="F")]
    history.append(assistant("one test fails"))
    for turn in range(turns):
        history += [user(f"question {turn}"), assistant(f"answer {turn}")]
    return history


def test_large_old_result_fires_past_the_size_and_age_thresholds(make_lab):
    lab = make_lab(suggest_large_result_tokens=500, suggest_old_turns=3)

    found = suggestions(lab, session_with(lab, long_output_then(3)))

    assert [(s["kind"], s["parts"]) for s in found] == [("large_old_result", ["message:2", "message:3"])]
    assert "4 assistant messages ago" in found[0]["reason"]


@pytest.mark.parametrize(
    ("threshold", "turns"), [pytest.param(500, 2, id="too recent"), pytest.param(100_000, 5, id="too small")]
)
def test_large_old_result_does_not_fire_below_a_threshold(make_lab, threshold: int, turns: int):
    lab = make_lab(suggest_large_result_tokens=threshold, suggest_old_turns=3)
    assert suggestions(lab, session_with(lab, long_output_then(turns))) == []


def listings(count: int) -> list[Stored]:
    history = [user("look around")]
    for n in range(count):
        history += answered("ls", f"listing {n}", path=f"/d{n}")
    return [*history, assistant("seen")]


def test_unused_tool_fires_for_a_tool_no_recent_answer_called_and_counts_the_sessions(make_lab):
    lab = make_lab(suggest_tool_min_answers=3)
    agent = lab.agent(model=OFFLINE, tools=["ls", "read_file"])
    session = lab.session(agent, listings(3))
    lab.session(agent, [user("another session")])

    found = of_kind(suggestions(lab, session), "unused_tool")

    assert [(s["parts"], s["target"], s["sessions_affected"]) for s in found] == [
        (["tool:read_file"], "agent", 2)
    ]
    assert "4 assistant messages" in found[0]["reason"]


def test_unused_tool_says_it_saves_what_applying_it_changes_inspects_total_by(make_lab):
    """Leaving read_file out also rewrites system:filesystem: the saving is measured, not the tool's size."""
    lab = make_lab(suggest_tool_min_answers=3)
    agent = lab.agent(model=OFFLINE, tools=["ls", "read_file"])
    session = lab.session(agent, listings(3))
    before = lab.inspect(session)

    [found] = of_kind(suggestions(lab, session), "unused_tool")
    assert lab.put_agent(agent, excluding(*found["parts"])).status_code == 200

    assert before["total_after"] - lab.inspect(session)["total_after"] == found["tokens_saved"]
    assert found["tokens_saved"] > by_id(before)["tool:read_file"]["tokens"]


def test_unused_tool_does_not_fire_before_enough_answers_or_for_a_tool_another_session_called(make_lab):
    lab = make_lab(suggest_tool_min_answers=3)
    agent = lab.agent(model=OFFLINE, tools=["ls", "read_file"])
    session = lab.session(agent, listings(1))
    assert of_kind(suggestions(lab, session), "unused_tool") == []

    lab.session(agent, [user("read"), *answered("read_file", "text", path="/a"), *listings(2)[1:]])
    assert of_kind(suggestions(lab, session), "unused_tool") == []


def long_chat(turns: int = 20) -> list[Stored]:
    return [m for i in range(turns) for m in (user(f"question {i} " * 30), assistant(f"answer {i} " * 30))]


def test_would_compact_fires_with_the_preview_inspect_shows(lab: Lab):
    session = lab.session(lab.agent(context_window=1024), long_chat())
    inspected = lab.inspect(session)
    assert inspected["would_compact"] is True

    found = of_kind(suggestions(lab, session), "would_compact")

    assert len(found) == 1 and found[0]["parts"] == []
    assert found[0]["compaction"] == inspected["compaction"]
    # before a first call the provider holds nothing: a compaction loses no cache
    # (its price against held prefixes: tests/ledger/test_change_prices.py)
    assert found[0]["cache_loss_tokens"] == inspected["messages"][0]["cache_loss_tokens"] == 0
    assert 0 < found[0]["tokens_saved"] < inspected["compaction"]["tokens_summarized"]


def test_would_compact_does_not_fire_below_the_trigger(lab: Lab):
    session = lab.session(lab.agent(context_window=200_000), long_chat())
    assert of_kind(suggestions(lab, session), "would_compact") == []


def test_suggestions_never_include_an_excluded_part_and_the_list_is_ranked(lab: Lab):
    history = [
        *edited_after_read(),
        user("and b.py"),
        *answered("read_file", "short", path="/src/b.py"),
        *answered("read_file", "short", path="/src/b.py"),
        assistant("same"),
    ]
    session = session_with(lab, history)
    assert len(suggestions(lab, session)) == 2
    assert lab.put_session(session, excluding("message:3")).status_code == 200

    found = suggestions(lab, session)

    assert [s["parts"] for s in found] == [["message:10", "message:11"]]


def test_suggestions_are_ranked_by_tokens_saved(lab: Lab):
    history = [
        *edited_after_read(),
        user("and b.py"),
        *answered("read_file", "short", path="/src/b.py"),
        *answered("read_file", "short", path="/src/b.py"),
        assistant("same"),
    ]
    found = suggestions(lab, session_with(lab, history))
    assert [s["parts"][0] for s in found] == ["message:2", "message:10"]
    assert found[0]["tokens_saved"] > found[1]["tokens_saved"]


def test_suggestions_call_no_model_and_write_nothing(lab: Lab):
    session = lab.session(lab.agent(context_window=1024), [*long_chat(), *edited_after_read()])
    counts, rows = row_counts(lab.engine), snapshot(lab.engine, lab.tenant.id)

    found = suggestions(lab, session)

    assert {"would_compact", "superseded_result"} <= set(kinds(found))
    assert lab.fake.bodies(MESSAGES) == [] and lab.fake.bodies(COUNT_TOKENS) != []
    assert row_counts(lab.engine) == counts
    assert snapshot(lab.engine, lab.tenant.id) == rows


def test_applying_a_suggestion_is_an_ordinary_put_that_saves_what_it_said(lab: Lab):
    session = session_with(lab, edited_after_read())
    before = lab.inspect(session)["total_after"]
    [found] = suggestions(lab, session)

    response = lab.put_session(session, excluding(*found["parts"]))

    assert response.status_code == 200, response.get_json()
    assert before - lab.inspect(session)["total_after"] == found["tokens_saved"]
    assert suggestions(lab, session) == []


def test_suggestions_limit_cuts_the_list_but_counts_every_one(lab: Lab):
    history = [user("look")]
    for n in range(5):
        history += answered("ls", "same", path=f"/d{n}")
    session = session_with(lab, [*history, assistant("ok")])
    response = lab.who.get(f"/v1/sessions/{session}/context/suggestions", query_string={"limit": 2})
    body = response.get_json()
    assert (body["count"], len(body["suggestions"])) == (4, 2)


def test_the_suggestions_answer_carries_the_compaction_preview_inspect_gives_on_request(lab: Lab):
    session = lab.session(lab.agent(), long_chat())
    response = lab.who.get(f"/v1/sessions/{session}/context/suggestions")
    assert response.get_json()["compaction"] == lab.inspect(session, compaction="preview")["compaction"]


def test_the_suggest_span_counts_the_suggestions_and_their_tokens_without_content(lab: Lab, spans):
    session = session_with(lab, edited_after_read())
    spans()
    [found] = suggestions(lab, session)

    [span] = [s for s in spans() if s.name == names.SPAN_CONTEXT_SUGGEST]

    assert span.attributes[names.CONTEXT_SUGGESTIONS] == 1
    assert span.attributes[names.CONTEXT_SUGGESTED_TOKENS] == found["tokens_saved"]
    assert "/src/a.py" not in str(dict(span.attributes))


def test_superseded_result_does_not_fire_for_a_listing_when_a_later_call_only_edited_a_file(lab: Lab):
    history = [
        user("tune it"),
        *answered("ls", "a.py\nb.py", path="/src"),
        assistant("ok"),
        *answered("edit_file", "replaced 1 occurrence", path="/src/a.py", old_string="1", new_string="2"),
        assistant("done"),
    ]
    assert of_kind(suggestions(lab, session_with(lab, history)), "superseded_result") == []


def test_a_message_is_suggested_only_when_every_result_in_it_is_dead(lab: Lab):
    both = [
        (
            "assistant",
            [
                {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "/src/a.py"}},
                {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {"path": "/src/b.py"}},
            ],
        ),
        (
            "user",
            [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "a = 1", "is_error": False},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "b = 1", "is_error": False},
            ],
        ),
    ]
    history = [
        user("read both"),
        *both,
        assistant("ok"),
        *answered("edit_file", "replaced 1 occurrence", path="/src/a.py", old_string="1", new_string="2"),
        *answered("grep", "a = 1", pattern="a", path="/src/a.py"),
        assistant("done"),
    ]
    found = suggestions(lab, session_with(lab, history))
    assert [s for s in found if "message:2" in s["parts"]] == []


def test_applying_a_duplicate_result_suggestion_leaves_a_request_the_put_accepts(lab: Lab):
    listing = "/src/a.py\n/src/b.py"
    history = [
        user("list"),
        *answered("glob", listing, pattern="*.py", path="/src"),
        *answered("glob", listing, pattern="**/*.py", path="/src"),
        assistant("two"),
    ]
    session = session_with(lab, history)
    [found] = suggestions(lab, session)

    assert lab.put_session(session, excluding(*found["parts"])).status_code == 200
    sent = lab.inspect(session, format="request")["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant"]
