"""Schemathesis run the way an outsider runs it: the ``st`` command against a live gunicorn's /openapi.json.

All checks, every phase (examples, coverage, fuzzing, stateful), as an owner and as a member,
seeded so a CI run repeats; DELETE is left out (the run would revoke its own key). The
server's auth-failure throttle is set high for this server only: the checks send keyless
and bad-key requests on purpose, and a throttled 429 would hide the 401 they expect.
``tests/reliability/schemathesis.toml`` is the run's configuration; the one test below it
holds that file to its rule (a check accepts only statuses the document lists).

``HANGO_FUZZ_EXAMPLES`` sets the examples per operation (the soak script raises it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from tests.fakes.provider_server import TEST_API_KEY, FakeProviderServer
from tests.reliability.anthropic_rules import Ledger
from tests.reliability.conftest import principal, provider_env
from tests.reliability.figures import record
from tests.support.server import gunicorn_server

pytestmark = pytest.mark.server

CONFIG = Path(__file__).with_name("schemathesis.toml")
SEED = 20_251_130
# 5 examples per operation and phase: about 1,800 requests a role, a minute each on this 2-core
# machine; every case of issue 29 has its own regression test, so the run looks for new ones.
EXAMPLES = int(os.environ.get("HANGO_FUZZ_EXAMPLES", "5"))
# What positive_data_acceptance accepts on its own (schemathesis' default list).
ACCEPTED_ANYWAY = {"2xx", "3xx", "401", "403", "404", "409", "429", "5xx"}
RUN_TIMEOUT = 1500


@pytest.fixture(scope="module")
def fuzz_server(database_url: str) -> Iterator[str]:
    """A 2-worker gunicorn whose providers are the judging fake, and whose auth-failure throttle is off."""
    with FakeProviderServer(validator=Ledger()) as provider:
        env = {
            **provider_env(provider),
            "HANGO_OPENAI_BASE_URL": provider.openai_base_url,
            "OPENAI_API_KEY": TEST_API_KEY,
            "HANGO_AUTH_FAILURE_LIMIT": "1000000",
        }
        with gunicorn_server(database_url, env=env) as url:
            yield url


# The ``st`` command, after one import of anyio in the main thread.
ST_WITH_ANYIO = "import sys, anyio; from schemathesis.cli import schemathesis; sys.argv[0] = 'st'; sys.exit(schemathesis())"


def schemathesis(url: str, key: str, report: Path) -> subprocess.CompletedProcess:
    """``st run`` with every check and phase, as a client holding ``key`` would type it.

    ``st`` is started with anyio imported first: schemathesis imports it lazily from each of its
    worker threads, and anyio compiles its own source to an AST as it is imported, which Python 3.11
    cannot do in two threads at once (``SystemError: AST constructor recursion depth mismatch``).
    """
    argv = [sys.executable, "-c", ST_WITH_ANYIO, "--config-file", str(CONFIG), "--no-color", "run"]
    argv += [f"{url}/openapi.json", "--checks", "all", "--phases", "examples,coverage,fuzzing,stateful"]
    argv += ["--max-examples", str(EXAMPLES), "--seed", str(SEED), "--exclude-method", "DELETE"]
    # One minute for an answer, as the request timeout: a 2-core machine shared with other runs is slow.
    argv += ["--header", f"Authorization: Bearer {key}", "--workers", "2", "--request-timeout", "60"]
    argv += ["--max-response-time", "60"]
    argv += ["--generation-database", "none", "--report", "junit", "--report-junit-path", str(report)]
    # In the test's folder: schemathesis keeps files of its own (.schemathesis/) where it runs.
    return subprocess.run(
        argv, check=False, cwd=report.parent, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )


@pytest.mark.parametrize("role", ["owner", "member"])
def test_schemathesis_finds_no_failure_with_every_check_on(
    role: str, fuzz_server: str, engine: sa.Engine, clean_db: None, tmp_path: Path
) -> None:
    caller = principal(engine, fuzz_server, ("Fuzzed", f"{role}@fuzzed.test", role), 1_000_000)

    run = schemathesis(fuzz_server, caller.key, tmp_path / "junit.xml")
    caller.close()

    summary = run.stdout[run.stdout.rfind("SUMMARY") :]
    cases = re.search(r"(\d+) generated", summary)
    record(f"schemathesis_{role}", examples=EXAMPLES, generated=int(cases.group(1)) if cases else None)
    assert run.returncode == 0, run.stdout[-20_000:] + run.stderr[-2_000:]
    tested = re.search(r"Tested: (\d+)", summary)
    assert tested and int(tested.group(1)) >= 38, summary  # every operation but the DELETEs


def _operations(document: dict) -> dict[str, dict]:
    """``"METHOD /path"`` (schemathesis' operation names) → the operation."""
    return {
        f"{method.upper()} {path}": operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "responses" in operation
    }


def test_the_run_accepts_only_statuses_the_document_lists_for_each_operation(session_app) -> None:
    operations = _operations(session_app.test_client().get("/openapi.json").get_json())
    entries = tomllib.loads(CONFIG.read_text())["operations"]

    for entry in entries:
        names = [entry["include-name"]] if "include-name" in entry else []
        matched = [n for n in operations if n in names or re.search(entry.get("include-name-regex", "^$"), n)]
        extra = set(entry["checks"]["positive_data_acceptance"]["expected-statuses"]) - ACCEPTED_ANYWAY
        assert matched, f"{entry} names no operation"
        for name in matched:
            assert extra <= operations[name]["responses"].keys(), f"{name} does not document {extra}"


def test_the_fuzz_server_answers_a_bad_key_401_however_often(fuzz_server: str) -> None:
    """The throttle is high for the fuzzing server only: the keyless checks get 401, never 429."""
    with requests.Session() as http:
        statuses = {
            http.get(f"{fuzz_server}/v1/me", headers={"Authorization": "Bearer nope"}, timeout=30).status_code
            for _ in range(40)
        }
    assert statuses == {401}


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
