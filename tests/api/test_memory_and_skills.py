"""Memory files under ``/memories/`` and skills, on an agent."""

from __future__ import annotations

import pytest

from hango.errors import Unprocessable
from hango.store.memory_files import memory_path
from tests.support.clients import error_code
from tests.support.world import MEMORY_CONTENT, SKILL_BODY, World


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("AGENTS.md", "/memories/AGENTS.md"),
        ("memories/AGENTS.md", "/memories/AGENTS.md"),
        ("/memories/team/notes.md", "/memories/team/notes.md"),
        ("team/.hidden", "/memories/team/.hidden"),
    ],
)
def test_memory_paths_are_normalised_under_memories(raw, path):
    assert memory_path(raw) == path


@pytest.mark.parametrize(
    "raw", ["a/../b", "..", "a/./b", "a//b", "dir/", "memories/", "bad\x01name", "bad\x7fname", "x" * 491]
)
def test_bad_memory_paths_are_refused(raw):
    with pytest.raises(Unprocessable) as refused:
        memory_path(raw)
    assert refused.value.code == "invalid_path"


def test_a_long_path_is_fine_up_to_500_characters():
    assert len(memory_path("x" * 490)) == 500


@pytest.mark.parametrize("raw", ["a/%2E%2E/b", "a//b", "dir/", "bad%01name", "x" * 491])
def test_the_api_refuses_bad_memory_paths(raw, acme, world: World, engine):
    response = acme.member.put(f"/v1/agents/{world.agent}/memory/{raw}", json={"content": "x"})
    assert response.status_code == 422
    assert error_code(response) == "invalid_path"


def test_memory_put_creates_then_replaces(acme, world: World):
    url = f"/v1/agents/{world.agent}/memory"
    first = acme.member.put(f"{url}/memories/plan.md", json={"content": "v1"})
    assert first.get_json()["path"] == "/memories/plan.md"
    acme.member.put(f"{url}/plan.md", json={"content": "v2"})
    assert acme.member2.get(f"{url}/plan.md").get_json()["content"] == "v2"
    listing = acme.member2.get(url).get_json()["items"]
    assert [(e["path"], e["chars"]) for e in listing] == [
        ("/memories/AGENTS.md", len(MEMORY_CONTENT)),
        ("/memories/plan.md", 2),
        ("/memories/style.md", len("short answers")),
    ]
    assert acme.member.delete(f"{url}/plan.md").status_code == 204
    assert acme.member.get(f"{url}/plan.md").status_code == 404
    assert acme.member.delete(f"{url}/plan.md").status_code == 404


def test_skills_list_without_bodies_and_names_are_unique(acme, world: World):
    url = f"/v1/agents/{world.agent}/skills"
    listing = acme.member2.get(url).get_json()["items"]
    assert {s["name"] for s in listing} == {"review", "deploy"}
    assert all("body" not in s for s in listing)
    assert acme.member2.get(f"{url}/review").get_json()["body"] == SKILL_BODY
    again = acme.member.post(url, json={"name": "review"})
    assert (again.status_code, error_code(again)) == (409, "skill_exists")
    repeated = acme.member.post(url, json={"name": "x", "allowed_tools": ["grep", "grep"]})
    assert repeated.status_code == 422


def test_skill_put_replaces_every_field(acme, world: World):
    url = f"/v1/agents/{world.agent}/skills/deploy"
    replaced = acme.admin.put(url, json={"body": "new steps"}).get_json()
    assert (replaced["description"], replaced["body"], replaced["allowed_tools"]) == ("", "new steps", [])
    assert acme.admin.put(f"/v1/agents/{world.agent}/skills/nope", json={}).status_code == 404
    assert acme.admin.put(url, json={"name": "renamed"}).status_code == 422
