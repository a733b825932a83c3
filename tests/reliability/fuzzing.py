"""Schema-driven fuzzing of a live hango with schemathesis: every operation, positive and negative data.

Each operation gets ``examples`` generated cases per generation mode, a third of
them with the path ids swapped for real objects: the caller's own (so success
bodies are checked against their schemas too) and another tenant's (which must be
404: the isolation table under the fuzzer's ids). Every response goes through all
of schemathesis' checks, with one replaced: where ``positive_data_acceptance``
wants every schema-valid request accepted, hango may refuse one for a reason the
schema cannot say (an unknown agent, a cursor it never handed out) — but only with
an error code that the operation documents, and never with the generic ``invalid``
(that would mean the document misses a constraint). Failures are collected, not
raised, so one run reports every distinct problem.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.support.world import World

PATH_IDS: dict[str, Callable[[World], str]] = {
    "agent_id": lambda w: w.agent,
    "session_id": lambda w: w.session,
    "run_id": lambda w: w.run,
    "key_id": lambda w: w.key,
    "user_id": lambda w: w.users["member2"],
    "name": lambda _: "review",
    "path": lambda _: "AGENTS.md",
}
# Statuses a schema-valid request may always get (schemathesis' own list, 5xx aside).
ACCEPTABLE = {401, 403, 404, 409, 429}
# Gunicorn answers a request line over its limit (8190 bytes) itself, in HTML, before hango runs.
LINE_TOO_LONG = 414


@dataclass
class Findings:
    """What one fuzzing run sent, got and found."""

    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    foreign: int = 0
    problems: dict[str, str] = field(default_factory=dict)

    def add(self, label: str, problem: str) -> None:
        self.problems.setdefault(label, problem)

    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)


@dataclass(frozen=True)
class Target:
    """Who fuzzes where: the live server, the caller's key, and the worlds whose ids are used."""

    url: str
    key: str
    own: World
    foreign: World

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def with_ids(world: World) -> Callable[[Case], Case]:
    """Swap a case's path parameters for ``world``'s objects."""

    def swap(case: Case) -> Case:
        case.path_parameters = {
            name: PATH_IDS[name](world) if name in PATH_IDS else value
            for name, value in (case.path_parameters or {}).items()
        }
        return case

    return swap


def without_security(url: str) -> dict[str, Any]:
    """The document with its bearer requirement left out: every case is sent with ``target.auth``,
    so generated (or deliberately missing) ``Authorization`` headers would only test the key check,
    which tests/reliability/test_security.py does on its own."""
    document = requests.get(f"{url}/openapi.json", timeout=10).json()
    document.pop("security", None)
    return document


def fuzz(target: Target, examples: int, seed_value: int) -> Findings:
    """Fuzz every operation of the live server's document as ``target.key``."""
    schema = schemathesis.openapi.from_dict(without_security(target.url))
    findings = Findings()
    with requests.Session() as http:
        for result in schema.get_all_operations():
            operation = result.ok()
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                cases = _cases(operation.as_strategy(generation_mode=mode), target, "{" in operation.path)
                # Unsatisfiable: nothing to negate, an operation without parameters or body has no negative cases.
                with contextlib.suppress(Unsatisfiable):
                    _run(Probe(target, http, findings, mode), cases, examples, seed_value)
    return findings


def _cases(strategy, target: Target, has_ids: bool):
    """``(case, foreign)``: generated cases and, when the path has ids, cases on own and foreign objects."""
    plain = strategy.map(lambda c: (c, False))
    if not has_ids:
        return plain
    own = strategy.map(with_ids(target.own)).map(lambda c: (c, False))
    foreign = strategy.map(with_ids(target.foreign)).map(lambda c: (c, True))
    return st.one_of(plain, own, foreign)


@dataclass(frozen=True)
class Probe:
    """Sends one case and judges the answer."""

    target: Target
    http: requests.Session
    findings: Findings
    mode: GenerationMode

    def __call__(self, case: Case, foreign: bool) -> None:
        response = case.call(
            base_url=self.target.url, session=self.http, headers=self.target.auth, timeout=30
        )
        findings, label = self.findings, case.operation.label
        findings.requests += 1
        findings.statuses[response.status_code] += 1
        if foreign:
            findings.foreign += 1
            if response.status_code != 404:
                findings.add(f"{label} foreign", f"another tenant's ids answered {response.status_code}")
        if response.status_code == LINE_TOO_LONG and not self.mode.is_positive:
            return
        if self.mode.is_positive:
            self._judge_refusal(case, response)
        self._validate(case, response)

    def _judge_refusal(self, case: Case, response: requests.Response) -> None:
        status = response.status_code
        if status < 400 or status in ACCEPTABLE or status >= 500:
            return
        code = _error_code(response)
        documented = _documented_codes(case, status)
        if code == "invalid" or code not in documented:
            self.findings.add(
                f"{case.operation.label} refused {status} {code}",
                _describe(f"schema-valid data refused with undocumented `{code}`", case, response),
            )

    def _validate(self, case: Case, response: requests.Response) -> None:
        kwargs = {"base_url": self.target.url, "session": self.http, "headers": self.target.auth}
        try:
            case.validate_response(
                response,
                excluded_checks=[positive_data_acceptance],
                headers=self.target.auth,
                transport_kwargs=kwargs,
            )
        except FailureGroup as group:
            for failure in group.exceptions:
                self._failed(case, response, failure)
        except Failure as failure:
            self._failed(case, response, failure)

    def _failed(self, case: Case, response: requests.Response, failure: Failure) -> None:
        self.findings.add(
            f"{case.operation.label} {type(failure).__name__}",
            _describe(f"{failure.title}: {failure.message[:400]}", case, response),
        )


def _run(probe: Probe, cases, examples: int, seed_value: int) -> None:
    @seed(seed_value)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(cases)
    def one(pair: tuple[Case, bool]) -> None:
        probe(*pair)

    one()


def _error_code(response: requests.Response) -> str | None:
    try:
        return response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None


def _documented_codes(case: Case, status: int) -> set[str]:
    """The backticked error codes the operation's document gives for ``status`` and for ``default``."""
    responses: dict[str, Any] = case.operation.definition.raw.get("responses", {})
    schema = case.operation.schema.raw_schema
    texts = []
    for key in (str(status), "default"):
        entry = responses.get(key, {})
        if "$ref" in entry:
            entry = schema["components"]["responses"][entry["$ref"].rsplit("/", 1)[-1]]
        texts.append(entry.get("description", ""))
    return set(re.findall(r"`([a-z_]+)`", " ".join(texts)))


def _describe(title: str, case: Case, response: requests.Response) -> str:
    return (
        f"{title}\n  sent {case.method} {case.formatted_path} query={case.query!r} "
        f"body={str(case.body)[:300]}\n  got {response.status_code} {response.text[:300]}"
    )


def summary(findings: Findings) -> dict[str, Any]:
    """The run's figures, for the report."""
    return {
        "requests": findings.requests,
        "statuses": dict(sorted(findings.statuses.items())),
        "foreign_ids": findings.foreign,
        "problems": len(findings.problems),
    }
