"""Smaller holes on a live 2-worker gunicorn: the Host header in redirects, and the text of file paths.

Every memory, skill and session-file path goes through one rule (``hango.paths``):
NFC, so the composed and the decomposed ``café.md`` are one file, and no control or
invisible format characters (zero-width spaces, bidi overrides and isolates, ...).
"""

from __future__ import annotations

import json
import unicodedata

import pytest
import requests

from tests.reliability.conftest import Live, MakeTenant, Proxied
from tests.reliability.http import Http, make_agent, make_session

pytestmark = pytest.mark.server

COMPOSED = unicodedata.normalize("NFC", "café.md")
DECOMPOSED = unicodedata.normalize("NFD", "café.md")
INVISIBLE = {
    "zero-width space": "\u200b",
    "left-to-right embedding": "\u202a",
    "right-to-left override": "\u202e",
    "left-to-right isolate": "\u2066",
    "pop directional isolate": "\u2069",
    "byte order mark": "\ufeff",
    "soft hyphen": "\u00ad",
}


@pytest.mark.parametrize("server", ["gunicorn", "nginx"])
def test_a_forged_host_header_is_never_copied_into_a_redirect(
    live: Live, proxied: Proxied, server: str
) -> None:
    url = live.url if server == "gunicorn" else proxied.nginx

    answer = requests.get(f"{url}/admin", headers={"Host": "evil.example"}, allow_redirects=False, timeout=30)

    assert answer.status_code == 308
    assert answer.headers["Location"] == "/admin/"


def test_composed_and_decomposed_memory_paths_are_one_file(live: Live, live_tenant: MakeTenant) -> None:
    owner = live_tenant(live.url).owner
    memory = f"/v1/agents/{make_agent(owner, 'offline/echo')}/memory"
    assert COMPOSED != DECOMPOSED

    assert owner.put(f"{memory}/{COMPOSED}", json={"content": "first"}).status_code == 200
    assert owner.put(f"{memory}/{DECOMPOSED}", json={"content": "second"}).status_code == 200

    listed = owner.get(memory).json()["items"]
    assert [item["path"] for item in listed] == [f"/memories/{COMPOSED}"]
    for path in (COMPOSED, DECOMPOSED):
        assert owner.get(f"{memory}/{path}").json()["content"] == "second"


@pytest.mark.parametrize("char", INVISIBLE.values(), ids=INVISIBLE.keys())
def test_invisible_format_characters_in_memory_paths_get_a_clear_422(
    live: Live, live_tenant: MakeTenant, char: str
) -> None:
    owner = live_tenant(live.url).owner
    memory = f"/v1/agents/{make_agent(owner, 'offline/echo')}/memory"

    answers = [
        owner.put(f"{memory}/notes{char}.md", json={"content": "x"}),
        owner.get(f"{memory}/notes{char}.md"),
        owner.request("DELETE", f"{memory}/notes{char}.md"),
    ]

    for answer in answers:
        assert answer.status_code == 422
        error = answer.json()["error"]
        assert error["code"] == "invalid_path"
        assert f"U+{ord(char):04X}" in error["message"]
    assert owner.get(memory).json()["items"] == []


def tool_results(who: Http, session_id: str, *calls: tuple[str, dict]) -> list[dict]:
    """Run ``/tool`` lines on the offline model; the tool results of the turn."""
    lines = "\n".join(f"/tool {name} {json.dumps(args, ensure_ascii=False)}" for name, args in calls)
    answer = who.post_and_wait(f"/v1/sessions/{session_id}/messages", json={"content": lines})
    assert answer.status_code == 201, answer.text
    return next(m["content"] for m in answer.json()["messages"] if m["content"][0]["type"] == "tool_result")


def test_session_file_paths_are_nfc_and_refuse_invisible_characters(
    live: Live, live_tenant: MakeTenant
) -> None:
    member = live_tenant(live.url).member
    session = make_session(member, make_agent(member, "offline/echo"))

    results = tool_results(
        member,
        session,
        ("write_file", {"path": f"/notes/{COMPOSED}", "content": "one file"}),
        ("read_file", {"path": f"/notes/{DECOMPOSED}"}),
        ("write_file", {"path": "/notes/evil\u202egpj.md", "content": "x"}),
        ("ls", {"path": "/notes"}),
    )

    assert [r["is_error"] for r in results] == [False, False, True, False]
    assert "one file" in results[1]["content"]
    assert "U+202E" in results[2]["content"]
    assert results[3]["content"].splitlines() == [f"/notes/{COMPOSED}"]


def test_skill_names_and_skill_paths_follow_the_same_rule(live: Live, live_tenant: MakeTenant) -> None:
    owner = live_tenant(live.url).owner
    agent = make_agent(owner, "offline/echo")
    skills = f"/v1/agents/{agent}/skills"

    refused = owner.post(skills, json={"name": "notes\n", "body": "x"})
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid"
    assert owner.post(skills, json={"name": "notes", "body": "the skill"}).status_code == 201

    results = tool_results(
        owner,
        make_session(owner, agent),
        ("read_file", {"path": "/skills/notes/SKILL.md"}),
        ("read_file", {"path": "/skills/notes\u200b/SKILL.md"}),
    )
    assert [r["is_error"] for r in results] == [False, True]
    assert "U+200B" in results[1]["content"]
