"""A contract: every answer of the inspector has a schema in /openapi.json, and real answers match it.

The example in docs/learning/context-inspector.md is a real response too: this
file regenerates it (``HANGO_UPDATE_GOLDEN=1``) and fails when it went stale.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from tests.inspector.conftest import OFFLINE, Lab, assistant, calls, override_set, results, user

DOC = Path(__file__).parents[2] / "docs" / "learning" / "context-inspector.md"
EXAMPLE = re.compile(r"(<!-- inspect-example -->\n```json\n)(.*?)(\n```)", re.DOTALL)
UPDATE = "HANGO_UPDATE_GOLDEN"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def as_json_schema(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema: ``nullable`` becomes a ``null`` alternative, refs stay."""
    if isinstance(node, list):
        return [as_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: as_json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        if "enum" in out:
            out["enum"] = [*out["enum"], None] if None not in out["enum"] else out["enum"]
        return {"anyOf": [{"type": "null"}, out]}
    return out


def validator(document: dict[str, Any], name: str) -> jsonschema_rs.Validator:
    schemas = as_json_schema(document["components"]["schemas"])
    root = {"$ref": f"#/components/schemas/{name}", "components": {"schemas": schemas}}
    return jsonschema_rs.Draft7Validator(root)


@pytest.fixture
def document(lab: Lab) -> dict[str, Any]:
    return lab.who.get("/openapi.json").get_json()


def _session(lab: Lab, model: str) -> tuple[str, str]:
    agent = lab.agent(model=model, tools=["read_file"], system_prompt="You keep the team's notes.")
    history = [user("What is in notes.md?"), calls("t1"), results("t1"), assistant("It lists three tasks.")]
    session = lab.session(agent, history)
    lab.put_session(session, override_set(["message:2"], {"message:4": "Three tasks."}))
    return agent, session


@pytest.mark.parametrize(
    ("name", "model", "query"),
    [
        ("Inspect", OFFLINE, {}),
        ("FullPart", OFFLINE, {"full": "message:4"}),
        ("FullPart", OFFLINE, {"full": "tool:read_file"}),
        ("NeutralRequest", OFFLINE, {"format": "request"}),
        ("AnthropicBody", "anthropic/claude-test", {"format": "anthropic"}),
        ("OpenAIBody", "openai/gpt-test", {"format": "openai"}),
    ],
)
def test_every_inspector_answer_matches_its_schema_in_openapi(lab: Lab, document, name, model, query):
    _, session = _session(lab, model)
    operation = document["paths"]["/v1/sessions/{session_id}/context"]["get"]
    answers = operation["responses"]["200"]["content"]["application/json"]["schema"]["anyOf"]
    assert {"$ref": f"#/components/schemas/{name}"} in answers

    body = lab.inspect(session, **query)

    errors = [str(e) for e in validator(document, name).iter_errors(body)]
    assert errors == []


def test_the_part_schema_is_closed_so_an_undocumented_field_fails(lab: Lab, document):
    _, session = _session(lab, OFFLINE)
    part = lab.inspect(session)["messages"][0]
    part_validator = validator(document, "Part")
    assert part_validator.is_valid(part)
    assert not part_validator.is_valid({**part, "surprise": 1})


def test_the_document_names_a_bearer_security_scheme_for_every_operation(document):
    assert document["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    assert document["security"] == [{"bearer": []}]


CONTENTS = [
    "hello",
    "   ",
    "a\x00b",
    "x" * 200_001,
    [],
    [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
    [{"type": "text", "text": " "}],
    [{"type": "text", "text": "x", "extra": 1}],
    [{"type": "image", "text": "x"}],
    [{"type": "text", "text": "x"}] * 101,
    42,
    {"type": "text", "text": "a dict is no list"},
]


@pytest.mark.parametrize("content", CONTENTS, ids=lambda c: repr(c)[:30])
def test_new_messages_schema_matches_what_it_accepts(lab: Lab, document, content):
    session = lab.session(lab.agent(model=OFFLINE))

    response = lab.who.post_and_wait(f"/v1/sessions/{session}/messages", json={"content": content})

    assert response.status_code in (201, 422), response.get_json()
    assert validator(document, "NewMessage").is_valid({"content": content}) == (response.status_code == 201)


def example_response(lab: Lab) -> str:
    """A real inspect response of a small fixed session, ids replaced, as the doc shows it."""
    agent, session = _session(lab, OFFLINE)
    lab.put_agent(agent, override_set(["system:memory"]))
    body = lab.inspect(session)
    text = json.dumps(body, indent=2, ensure_ascii=False)
    return UUID.sub("…", text)


def test_the_learning_doc_example_is_a_real_inspect_response(lab: Lab):
    generated = example_response(lab)
    doc = DOC.read_text(encoding="utf-8")
    if os.environ.get(UPDATE) == "1":
        DOC.write_text(EXAMPLE.sub(lambda m: m[1] + generated + m[3], doc), encoding="utf-8")
        doc = DOC.read_text(encoding="utf-8")
    match = EXAMPLE.search(doc)
    assert match, "docs/learning/context-inspector.md lost its <!-- inspect-example --> block"
    assert match[2] == generated, f"the example went stale: rerun with {UPDATE}=1 and review the diff"
