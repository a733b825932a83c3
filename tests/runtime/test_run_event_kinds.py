"""Run-event kinds are one closed set (``hango.run_events``), as audit actions are: the store refuses
any other kind, every writer names its kind through the table, and the document lists the same set."""

from __future__ import annotations

import ast
import uuid

import pytest

from hango.config import REPO_ROOT
from hango.run_events import RUN_EVENT_KINDS
from hango.store import TenantStore

WRITERS = {"emit", "add", "add_next"}


def test_the_store_refuses_an_unknown_kind_before_the_database(acme, engine):
    store_of = lambda conn: TenantStore(conn, uuid.UUID(acme.id)).run_events  # noqa: E731
    with engine.begin() as conn, pytest.raises(ValueError, match="unknown run event kind"):
        store_of(conn).add(uuid.uuid4(), 1, "run_exploded", {})
    with engine.begin() as conn, pytest.raises(ValueError, match="unknown run event kind"):
        store_of(conn).add_next(uuid.uuid4(), "run_exploded", {})


def _bare_kinds() -> list[str]:
    """Every step written with its kind as a string literal rather than through the table."""
    found = []
    for path in sorted((REPO_ROOT / "hango").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in WRITERS:
                continue
            steps = node.func.attr == "emit" or "run_events" in ast.unparse(node.func.value)
            literals = [a for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if steps and literals:
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    return found


def test_every_step_names_its_kind_through_the_table():
    assert _bare_kinds() == []


def test_the_document_lists_the_table_as_the_kinds_a_client_may_read(session_app):
    document = session_app.test_client().get("/openapi.json").get_json()
    schema = document["components"]["schemas"]["RunEvent"]["properties"]["kind"]
    assert tuple(schema["enum"]) == RUN_EVENT_KINDS
