"""Schemathesis against the live server's own /openapi.json, as an owner and as a member.

0 server errors, every response conforms to the document, every refusal of
schema-valid data carries a documented code, and another tenant's ids are 404.
Seeded and bounded: ``HANGO_FUZZ_EXAMPLES`` cases per operation and mode (the
soak script raises it).
"""

from __future__ import annotations

import os

import pytest
import sqlalchemy as sa

from tests.reliability.conftest import Live
from tests.reliability.figures import record
from tests.reliability.fuzzing import Target, fuzz, summary
from tests.support.clients import Tenant
from tests.support.world import build_world

pytestmark = pytest.mark.server

SEED = 20_251_130
EXAMPLES = int(os.environ.get("HANGO_FUZZ_EXAMPLES", "6"))


@pytest.mark.parametrize("role", ["owner", "member"])
def test_fuzzing_finds_no_server_error_and_every_response_conforms(
    role: str, live: Live, acme: Tenant, globex: Tenant, engine: sa.Engine
) -> None:
    own, foreign = build_world(engine, acme), build_world(engine, globex)

    findings = fuzz(Target(live.url, getattr(acme, role).key, own, foreign), EXAMPLES, SEED)

    record(f"fuzz_{role}", examples_per_operation_and_mode=EXAMPLES, **summary(findings))
    assert findings.problems == {}, "\n\n".join(f"{k}\n{v}" for k, v in findings.problems.items())
    assert findings.server_errors() == 0, findings.statuses
    assert findings.foreign > 0 and findings.requests > 300


def test_the_document_states_what_the_fuzzer_found_missing(session_app) -> None:
    """Every listing documents its bad-cursor 400, the default error lists the generic codes, agents'
    ``tools`` are unique and ``model`` has its pattern: without these, schema-valid requests were refused."""
    document = session_app.test_client().get("/openapi.json").get_json()
    operations = [op for item in document["paths"].values() for op in item.values() if isinstance(op, dict)]
    listings = [op for op in operations if any(p["name"] == "cursor" for p in op.get("parameters", []))]
    assert len(listings) >= 8
    assert all("`invalid_cursor`" in op["responses"]["400"]["description"] for op in listings)
    default = document["components"]["responses"]["DEFAULT_ERROR"]["description"]
    assert "`nul_character`" in default and "`database_unavailable`" in default
    agent = document["components"]["schemas"]["Agent"]["properties"]
    assert agent["tools"]["uniqueItems"] is True
    assert agent["model"]["pattern"].startswith("^(")
