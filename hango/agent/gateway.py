"""The base model handler: quota check, one provider call, its usage row and its ledger entry."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from hango import run_events, telemetry
from hango.agent import chat_span
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.estimator import estimate_request
from hango.agent.ledger.causes import Facts, facts_of
from hango.agent.ledger.record import Lineage, SentCall, sent_call
from hango.agent.ledger.simulated_cache import simulated_usage
from hango.agent.ledger.verdict import Verdict, judge, provider_units, rules_for
from hango.agent.parts import SUMMARY, is_scratch
from hango.agent.state import TRY_PURPOSE, RunState
from hango.call_log import failed_call
from hango.errors import QuotaExhausted
from hango.messages import TOKEN_FIELDS, Request, Response, prompt_tokens
from hango.providers import SPECS, Provider, split_model
from hango.providers.errors import ProviderFailure, ProviderTimeout
from hango.providers.prices import Tokens, costs_by_part, prices_of
from hango.store import TenantStore
from hango.telemetry import names


@dataclass(frozen=True)
class Sent:
    """One call as the ledger records it: its parts, its cache verdict, when and how long."""

    model: str
    call: SentCall
    verdict: Verdict
    started_at: dt.datetime
    duration_ms: int

    @property
    def ended_at(self) -> dt.datetime:
        return self.started_at + dt.timedelta(milliseconds=self.duration_ms)


@dataclass
class Gateway:
    """Sends drafts to the provider for one run (or try), billing every call to ``state``.

    ``timeout`` caps each call; a state with a deadline (a run) caps it further.
    The gateway follows its lineage in the call ledger: the first call reads the
    lineage's latest entry, later ones continue from the previous call in memory.
    ``HANGO_CALL_LEDGER=0`` records usage only (the behaviour before the ledger).
    """

    deps: Deps
    state: RunState
    timeout: float
    lineage: Lineage = field(default_factory=Lineage, compare=False)
    # The model whose next call's quota check (``check_quota`` with a store) was made already.
    checked_ahead: str | None = field(default=None, init=False, compare=False)
    # Entered around each call's record transaction; what it yields (if not None) writes more rows in
    # that transaction, which commits before it exits (a try's audit row: ``hango.inspector.try_audit``).
    alongside: Callable[[], AbstractContextManager[Callable[[TenantStore], object] | None]] = field(
        default=nullcontext, compare=False
    )

    @property
    def ledger(self) -> bool:
        return self.deps.config.call_ledger

    def check_quota(self, model: str | None = None, store: TenantStore | None = None) -> None:
        """Raise ``QuotaExhausted`` when the tenant's tokens for this month are used up.

        Before a call of ``model`` it also reads what the call's verdict needs, in the same
        transaction: the lineage (once), and the agent's calibration for the model when the
        previous call has no plausible report (``calibrate``). With ``store`` the reads run in
        the caller's transaction, ahead of the next call of ``model``, which then checks nothing
        more (a try reads them in its request's transaction, which ends before the call).
        """
        if store is None:
            with self.deps.engine.begin() as conn:
                left = self._quota_left(TenantStore(conn, self.state.tenant_id), model)
        else:
            left = self._quota_left(store, model)
            self.checked_ahead = model
        if left is not None and left <= 0:
            raise QuotaExhausted()

    def _quota_left(self, store: TenantStore, model: str | None) -> int | None:
        left = store.usage.quota_left(dt.datetime.now(dt.UTC))
        if self.ledger and not self.lineage.loaded:
            self.lineage.load(store.model_calls, self.state.session_id, self.state.mode.purpose)
        if self.ledger and model is not None:
            self.calibrate(store, model)
        return left

    def calibrate(self, store: TenantStore, model: str) -> None:
        """Read the agent's calibration ratio for ``model`` (once), when the expected read falls back to it.

        That is only when the provider caches and the previous call's report is missing or not of
        the same prompt (``provider_units``): a usual call reads nothing more.
        """
        lineage, (provider, bare) = self.lineage, split_model(model)
        if lineage.calibration_read or lineage.previous is None:
            return
        if not rules_for(provider, self.deps.config.cache_rules).enabled:
            return
        if provider_units(lineage.previous)[1] == "provider":
            return
        row = store.usage.calibration(self.state.agent.id, provider, bare)
        lineage.calibrated = float(row.ratio) if row.ratio is not None and row.calibration_calls else None
        lineage.calibration_read = True

    def __call__(self, draft: Draft) -> Response:
        """The chain's base handler."""
        return self.send(draft)

    def send(self, draft: Draft) -> Response:
        """Check the quota, call the provider in a ``chat`` span, record usage and ledger in one statement.

        Provenance is stripped here, before the provider sees anything.
        """
        request = draft.to_request()
        if self.checked_ahead == request.model:
            self.checked_ahead = None
        else:
            self.check_quota(request.model)
        provider, bare = self.deps.provider(request.model)
        estimated = estimate_request(request)
        call = sent_call(draft) if self.ledger else None
        started, clock = dt.datetime.now(dt.UTC), time.monotonic()
        self.state.steps.emit(
            run_events.MODEL_CALL_STARTED, model=request.model, purpose=self.state.mode.purpose
        )
        with telemetry.tracer().start_as_current_span(names.SPAN_CHAT, record_exception=False) as span:
            chat_span.start(span, self.state, request, provider.name, draft.report.excluded_tokens)
            timeout = self.state.time_left(self.timeout)  # never past the run's deadline
            if timeout <= 0:  # spent before the call (a loaded worker): an SDK given 0 s fails otherwise
                raise ProviderTimeout(f"{provider.name} did not answer in time", {"provider": provider.name})
            response = self._complete(provider, replace(request, model=bare), timeout)
            if call is not None and SPECS[provider.name].simulates is not None:
                response = self._simulated(response, call, started, provider.name, bare)
            chat_span.finish(span, self.state, response)
            verdict = self._judge(call, started, provider.name, bare, response) if call else None
            if verdict is not None:
                chat_span.cache_verdict(span, verdict)
        usage = self._usage(provider.name, bare, response, estimated)
        duration_ms = int((time.monotonic() - clock) * 1000)
        call_id = None
        if call is None:
            self._store(lambda store: store.usage.record(**usage))
        else:
            call_id = self._record(usage, Sent(request.model, call, verdict, started, duration_ms))
        self.state.steps.emit(
            run_events.MODEL_CALL_FINISHED,
            call_id=str(call_id) if call_id else None,
            purpose=self.state.mode.purpose,
            duration_ms=duration_ms,
            usage={k: usage[k] for k in TOKEN_FIELDS},
            **self._cost(request.model, usage, started),
            cache=verdict.as_dict() if verdict is not None else None,
        )
        return response

    def _complete(self, provider: Provider, request: Request, timeout: float) -> Response:
        """One provider call, hung up by a cancel; a failed one is logged with why (``hango.call_log``)."""
        try:
            with self.state.steps.model_call():
                return provider.complete(request, timeout=timeout)
        except ProviderFailure as exc:  # a hung-up call ends ``Cancelled``: no failure to tell
            details = exc.details
            failed_call(
                "provider",
                provider.name,
                self.state.run_id,
                exc,
                host=details.get("host"),
                attempt=details.get("attempt"),
            )
            raise

    def _cost(self, model: str, usage: dict[str, Any], started: dt.datetime) -> dict[str, str | None]:
        """The call's price in USD at the rates in force when it started: ``cost_usd``, a decimal string
        (None: no price), and ``cost_simulated_at``, the reference model of a simulated price."""
        cost = prices_of(self.deps.config.prices).cost(model, Tokens.of(usage), started)
        return {
            "cost_usd": None if cost.usd is None else str(cost.usd),
            "cost_simulated_at": cost.simulated_at,
        }

    def _simulated(
        self, response: Response, call: SentCall, started: dt.datetime, provider: str, bare: str
    ) -> Response:
        """A stand-in provider's response with the usage its reference model's cache would report."""
        usage = simulated_usage(
            response.usage,
            self.lineage.previous,
            call,
            started_at=started,
            rules=rules_for(provider, self.deps.config.cache_rules),
            model=bare,
            calibrated=self.lineage.calibrated,
        )
        return replace(response, usage=usage)

    def _judge(
        self, call: SentCall, started: dt.datetime, provider: str, bare: str, response: Response
    ) -> Verdict:
        return judge(
            self.lineage.previous,
            call,
            started_at=started,
            rules=rules_for(provider, self.deps.config.cache_rules),
            model=bare,
            facts=self._facts,
            reported=response.usage.cache_read_tokens,
            calibrated=self.lineage.calibrated,
        )

    def _facts(self) -> Facts:
        """What was recorded since the lineage's previous call (one query, on a connection of its own)."""
        state, trying = self.state, self.state.mode.billed_purpose == TRY_PURPOSE
        if self.lineage.base_id is None or state.session_id is None:
            return Facts(tried=trying)
        with self.deps.engine.connect() as conn:
            found = TenantStore(conn, state.tenant_id).recorded_changes.between(
                state.session_id, state.agent.id, self.lineage.base_id, None
            )
        return facts_of(found, later_try=trying)

    def _usage(self, provider: str, bare: str, response: Response, estimated: int) -> dict[str, Any]:
        """The call's ``usage_records`` row."""
        usage, state = response.usage, self.state
        return {
            "api_key_id": state.caller.api_key_id,
            "user_id": state.caller.user_id,
            "agent_id": state.agent.id,
            "session_id": state.session_id,
            "run_id": state.run_id,
            "purpose": state.mode.billed_purpose,
            "provider": provider,
            "model": bare,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "estimated_input_tokens": estimated,
        }

    def _record(self, usage: dict[str, Any], sent: Sent) -> Any:
        """The usage row and the ledger row, the call stored as a delta against its lineage's previous call."""
        stored = self.lineage.delta(sent.call)
        call = {
            "session_id": self.state.session_id,
            "run_id": self.state.run_id,
            "purpose": self.state.mode.billed_purpose,
            "model": sent.model,
            "started_at": sent.started_at,
            "duration_ms": sent.duration_ms,
            "base_id": self.lineage.base_id,
            "prefix_parts": stored.prefix_parts,
            "tail": stored.tail,
            "breakpoints": list(sent.call.breakpoints),
            "parts_count": len(sent.call.parts),
            "expected_cache_read": sent.verdict.expected_read_tokens,
            "miss_reason": sent.verdict.miss_reason,
            "miss_part": sent.verdict.miss_part,
            "miss_cause": sent.verdict.miss_cause,
        }
        costs = self._part_costs(usage, sent)
        call_id = self._store(lambda store: store.model_calls.record(usage, call, costs))
        reported = prompt_tokens(usage)
        self.lineage.advance(call_id, sent.call, sent.ended_at, self.lineage.depth_after(stored), reported)
        return call_id

    def _part_costs(self, usage: dict[str, Any], sent: Sent) -> list[tuple[str, Any]]:
        """What each part cost on this call, at the prices in force when it started (None: no price)."""
        tokens = Tokens.of(usage)
        rates = prices_of(self.deps.config.prices).rates(sent.model, sent.started_at)
        costs = costs_by_part(rates, sent.call.parts, tokens)
        return [(part, cost) for part, cost in costs if not self._scratch_only(part)]

    def _scratch_only(self, part: str) -> bool:
        """A part only a try holds: a message it added (a scratch part) or the summary a scratch turn made.
        Its cost is no session part's cost so far."""
        summary = self.state.summary
        return is_scratch(part) or (part == SUMMARY and summary is not None and summary.scratch is not None)

    def _store(self, write):
        """Run ``write(store)`` in its own transaction (a call's rows never wait for the run's turn), with the
        rows ``alongside`` adds."""
        with self.alongside() as also, self.deps.engine.begin() as conn:
            store = TenantStore(conn, self.state.tenant_id)
            written = write(store)
            if also is not None:
                also(store)
            return written
