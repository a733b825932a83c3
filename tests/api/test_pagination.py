"""Every list pages as ``{items, next_cursor}``: limit bounds, cursors, the last page."""

from __future__ import annotations

import pytest

from tests.api.examples import EXAMPLES, PAGED_ROUTES, Example
from tests.support.clients import error_code
from tests.support.world import World

BAD_LIMITS = ["0", "-1", "max+1", str(10**30), "ten"]


def _list_url(example: Example, world: World, **params: object) -> str:
    path, _ = example.for_world(world.values())
    query = "&".join(f"{name}={value}" for name, value in params.items())
    return f"{path}?{query}"


def _identity(item: dict) -> object:
    return item.get("id") or item.get("user_id") or item["path"]


def _walk(caller, example: Example, world: World) -> list[dict]:
    """Every item of a list, fetched one per page."""
    items, position = [], {}
    for _ in range(50):
        body = caller.get(_list_url(example, world, limit=1, **position)).get_json()
        assert len(body["items"]) <= 1
        items += body["items"]
        if body["next_cursor"] is None:
            return items
        position = {example.paged: body["next_cursor"]}
    raise AssertionError("the cursor never reached the end")


@pytest.mark.parametrize("example", PAGED_ROUTES, ids=lambda e: e.rule)
def test_one_item_pages_walk_the_whole_list(example: Example, acme, world: World):
    everything = acme.owner.get(_list_url(example, world, limit=1000)).get_json()
    assert everything["next_cursor"] is None
    assert len(everything["items"]) >= 2, "the world needs two objects for this list"
    # Compared without times: listing keys updates the caller's key's last_used_at.
    walked = _walk(acme.owner, example, world)
    assert [_identity(item) for item in walked] == [_identity(item) for item in everything["items"]]


@pytest.mark.parametrize("limit", BAD_LIMITS)
@pytest.mark.parametrize("example", PAGED_ROUTES, ids=lambda e: e.rule)
def test_limits_out_of_bounds_are_422(example: Example, limit: str, acme, world: World):
    most = 10_000 if example.paged == "after_seq" else 1000
    assert acme.owner.get(_list_url(example, world, limit=most)).status_code == 200
    response = acme.owner.get(_list_url(example, world, limit=limit.replace("max+1", str(most + 1))))
    assert response.status_code == 422
    assert error_code(response) == "invalid"


@pytest.mark.parametrize("example", [e for e in PAGED_ROUTES if e.paged == "cursor"], ids=lambda e: e.rule)
@pytest.mark.parametrize("cursor", ["not-a-cursor", "!!!", "Z2FyYmFnZXx4"])
def test_a_cursor_we_did_not_make_is_400(example: Example, cursor: str, acme, world: World):
    response = acme.owner.get(_list_url(example, world, cursor=cursor))
    assert response.status_code == 400
    assert error_code(response) == "invalid_cursor"


def test_every_list_route_is_in_the_paging_tests(acme, world: World):
    lists = []
    for example in EXAMPLES:
        if example.method == "GET":
            body = acme.owner.get(example.for_world(world.values())[0]).get_json()
            if set(body) == {"items", "next_cursor"}:
                lists.append(example)
    assert lists == PAGED_ROUTES


def test_messages_page_by_seq_up_to_ten_thousand(acme, world: World):
    url = f"/v1/sessions/{world.session}/messages"
    first = acme.member.get(f"{url}?limit=1").get_json()
    assert [m["seq"] for m in first["items"]] == [1]
    assert first["next_cursor"] == "1"
    rest = acme.member.get(f"{url}?after_seq={first['next_cursor']}&limit=10000").get_json()
    assert [m["seq"] for m in rest["items"]] == [2]
    assert rest["next_cursor"] is None
    assert rest["items"][0]["run_id"] == world.run
    for bad in ("10001", "0"):
        assert acme.member.get(f"{url}?limit={bad}").status_code == 422
    for bad in ("-1", "abc", str(2**31)):
        assert acme.member.get(f"{url}?after_seq={bad}").status_code == 422
