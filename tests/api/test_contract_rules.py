"""What the OpenAPI document promises, the server does: one test per kind of failure issue 29 listed.

Schemathesis found each of these against a live server; here each is a named case, so a
regression fails with its name (the fuzzing run itself is tests/reliability/test_fuzz_openapi.py).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blueprints.memory import PATH_PARAMETER
from hango.agent.parts import MAX_PART_CHARS, PART_ID_PATTERN, MalformedPart, kind_of
from hango.errors import Unprocessable
from hango.store.memory_files import memory_path
from tests.inspector.test_contract import validator
from tests.support.clients import Tenant, error_code
from tests.support.world import World

FEW = settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture
def document(session_app) -> dict[str, Any]:
    return session_app.test_client().get("/openapi.json").get_json()


def operations(document: dict) -> dict[tuple[str, str], dict]:
    return {
        (method, path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "responses" in operation
    }


def matches(schema: dict, value: str) -> bool:
    return jsonschema_rs.validator_for(schema).is_valid(value)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PATCH", "/v1/agents/{agent}"),
        ("PATCH", "/v1/api-keys/{key}"),
        ("PATCH", "/v1/tenant"),
        ("POST", "/v1/api-keys"),
    ],
)
def test_a_patch_without_a_body_is_422(method: str, path: str, acme: Tenant, world: World) -> None:
    response = acme.owner.request(method, path.format(**world.values()))

    assert response.status_code == 422, response.get_json()
    assert error_code(response) == "missing_body"


def test_a_body_that_is_not_json_is_415_and_changes_nothing(acme: Tenant) -> None:
    response = acme.owner.patch("/v1/tenant", data="name=Renamed", content_type="text/plain")

    assert response.status_code == 415
    assert error_code(response) == "unsupported_media_type"
    assert acme.owner.get("/v1/tenant").get_json()["name"] == "Acme"


def test_compact_and_try_take_no_body(acme: Tenant, world: World) -> None:
    """Their bodies are optional in the document; without one they get to their own answers."""
    session = world.values()["session"]
    for path in (f"/v1/sessions/{session}/compact", f"/v1/sessions/{session}/context/try"):
        response = acme.member.post(path)
        assert response.status_code != 422 or error_code(response) != "missing_body", path


def test_inspect_of_an_empty_session_with_a_small_window_matches_its_schema(
    acme: Tenant, document: dict
) -> None:
    agent = acme.owner.post("/v1/agents", json={"name": "small", "context_window": 1024}).get_json()
    session = acme.owner.post("/v1/sessions", json={"agent_id": agent["id"]}).get_json()

    body = acme.owner.get(f"/v1/sessions/{session['id']}/context").get_json()

    assert body["free"] < 0 and body["messages"] == [] and body["would_compact"] is True
    assert body["compaction"] is None, "nothing before the last turn to summarize"
    errors = [str(e) for e in validator(document, "Inspect").iter_errors(body)]
    assert errors == []


@pytest.mark.parametrize(
    "body",
    [
        {"name": "\ud800"},
        {"name": "ok", "settings": {"deep": [{"key": "\udfff"}]}},
        {"name": "ok", "settings": {"\udbff": 1}},
    ],
)
def test_a_lone_surrogate_in_any_text_is_422_not_500(body: dict, acme: Tenant) -> None:
    # json.dumps keeps a lone surrogate as its \\u escape, as a client's JSON would carry it.
    response = acme.owner.post("/v1/agents", data=json.dumps(body), content_type="application/json")

    assert response.status_code == 422
    assert error_code(response) == "lone_surrogate"


@pytest.mark.parametrize("settings_", [{"a": {"b": ["\x00"]}}, {"a": {"\x00": 1}}, {"\x00": True}])
def test_nul_in_nested_settings_is_refused_and_the_document_says_so(
    settings_: dict, acme: Tenant, document: dict
) -> None:
    response = acme.owner.post("/v1/agents", json={"name": "n", "settings": settings_})

    assert response.status_code == 422 and error_code(response) == "nul_character"
    assert not validator(document, "Agent").is_valid({"name": "n", "settings": settings_})


def test_settings_nested_deeper_than_the_document_says_are_refused(acme: Tenant, document: dict) -> None:
    fits, too_deep = {"a": [[[{"b": 1}]]]}, {"a": [[[[{"b": 1}]]]]}

    assert validator(document, "Agent").is_valid({"name": "n", "settings": fits})
    assert not validator(document, "Agent").is_valid({"name": "n", "settings": too_deep})
    assert acme.owner.post("/v1/agents", json={"name": "n", "settings": fits}).status_code == 201
    assert acme.owner.post("/v1/agents", json={"name": "n", "settings": too_deep}).status_code == 422


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"token_quota": "5"}, "token_quota"),
        ({"token_quota": 1.5}, "token_quota"),
        ({"trace_llm_content": 1}, "trace_llm_content"),
    ],
)
def test_a_json_value_of_the_wrong_type_is_refused(body: dict, field: str, acme: Tenant) -> None:
    response = acme.owner.patch("/v1/tenant", json=body)

    assert response.status_code == 422
    assert field in response.get_json()["error"]["details"]["json"]


def test_every_operation_lists_every_status_it_can_answer(document: dict) -> None:
    for (method, path), operation in operations(document).items():
        responses = operation["responses"]
        wanted = {"401", "429", "500", "503"} | ({"404"} if "{" in path else set())
        if "requestBody" in operation:
            wanted |= {"400", "413", "415", "422"}
        if any(p["in"] == "query" for p in operation.get("parameters", [])):
            wanted |= {"400", "422"}
        assert wanted <= responses.keys(), (method, path, sorted(responses))
        for status in wanted:
            assert responses[status]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/Error"
            }
    assert "`too_many_failures`" in operations(document)[("get", "/v1/me")]["responses"]["429"]["description"]


def test_the_screened_errors_are_documented_where_the_server_gives_them(
    acme: Tenant, world: World, document: dict
) -> None:
    """415 without a JSON content type, 400 naming where the JSON broke, 400 naming the accepted query."""
    listed = operations(document)
    patch = listed[("patch", "/v1/tenant")]["responses"]
    agents = listed[("get", "/v1/agents")]["responses"]

    broken = acme.owner.patch("/v1/tenant", data='{"name": "x",\n}', content_type="application/json")
    unknown = acme.owner.get("/v1/agents", query_string={"colour": "red"})
    plain = acme.owner.patch("/v1/tenant", data="name=x", content_type="text/plain")

    assert (broken.status_code, error_code(broken)) == (400, "bad_request")
    assert "`bad_request`" in patch["400"]["description"] and "line" in patch["400"]["description"]
    assert (unknown.status_code, error_code(unknown)) == (400, "unknown_parameter")
    assert "`unknown_parameter`" in agents["400"]["description"]
    assert (plain.status_code, error_code(plain)) == (415, "unsupported_media_type")
    assert "without a JSON content type" in patch["415"]["description"]


def test_every_text_property_says_it_holds_no_nul(document: dict) -> None:
    def strings(node: Any) -> list[dict]:
        if isinstance(node, list):
            return [s for item in node for s in strings(item)]
        if not isinstance(node, dict):
            return []
        here = [node] if node.get("type") == "string" and not {"format", "enum"} & node.keys() else []
        return here + [s for value in node.values() for s in strings(value)]

    texts = strings(document["components"]["schemas"]) + strings(document["paths"])
    assert len(texts) > 100
    assert [t for t in texts if "pattern" not in t and t.get("not") != {"pattern": "\\x00"}] == []
    assert all(not matches(t, "a\x00b") for t in texts if t.get("pattern") != "^[A-Za-z0-9_-]*$")


@FEW
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
    | st.from_regex(r"\A(tool|message|system):", fullmatch=False)
)
def test_the_part_id_pattern_is_exactly_the_grammar_the_server_reads(candidate: str) -> None:
    schema = {"type": "string", "pattern": PART_ID_PATTERN, "maxLength": MAX_PART_CHARS}
    try:
        kind_of(candidate)
        accepted = True
    except MalformedPart:
        accepted = False
    assert matches(schema, candidate) == accepted


@pytest.mark.parametrize(
    "part",
    ["summary", "message:2147483647", "tool:read_file", "system:agent", "system:memory:/memories/a/./b.md"],
)
def test_well_formed_part_ids_match_the_pattern(part: str, document: dict) -> None:
    schema = document["components"]["schemas"]["Override"]["properties"]["part"]
    assert matches(schema, part)
    assert not matches(schema, part + "\n"), "a trailing newline is no part id"


@FEW
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=30))
def test_the_memory_path_pattern_is_the_rule_the_server_applies(raw: str) -> None:
    try:
        memory_path(raw)
        accepted = True
    except Unprocessable:
        accepted = False
    assert matches(PATH_PARAMETER["schema"], raw) == accepted


@pytest.mark.parametrize("raw", ["notes\u0001.md", "a\u200bb", "a/../b", "a//b", "x\x7f"])
def test_a_path_with_a_refused_character_or_segment_breaks_the_documented_pattern(
    raw: str, acme: Tenant, world: World
) -> None:
    assert not matches(PATH_PARAMETER["schema"], raw)
    response = acme.owner.put(f"/v1/agents/{world.agent}/memory/{raw}", json={"content": "x"})
    assert response.status_code in (404, 422), response.get_json()


@pytest.mark.parametrize(
    "value", ["last\n", "0123456789abcdef0123456789abcdef", "{12345678-1234-1234-1234-123456789abc}"]
)
def test_diff_takes_only_a_hyphenated_call_id_or_the_keyword(
    value: str, acme: Tenant, world: World, document: dict
) -> None:
    parameter = next(
        p
        for p in operations(document)[("get", "/v1/sessions/{session_id}/context/diff")]["parameters"]
        if p["name"] == "from"
    )
    response = acme.member.get(f"/v1/sessions/{world.session}/context/diff", query_string={"from": value})

    assert not matches(parameter["schema"], value)
    assert response.status_code == 422


def test_the_document_says_skill_tools_are_unique(document: dict) -> None:
    assert document["components"]["schemas"]["Skill"]["properties"]["allowed_tools"]["uniqueItems"] is True


def test_a_well_formed_cursor_no_list_handed_out_is_the_documented_400(acme: Tenant, document: dict) -> None:
    operation = operations(document)[("get", "/v1/agents")]
    cursor = next(p for p in operation["parameters"] if p["name"] == "cursor")["schema"]

    response = acme.owner.get("/v1/agents", query_string={"cursor": "0" * 40})

    assert matches(cursor, "0" * 40)
    assert response.status_code == 400 and error_code(response) == "invalid_cursor"
    assert "`invalid_cursor`" in operation["responses"]["400"]["description"]
