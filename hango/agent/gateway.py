"""The base model handler: quota check, one provider call, one usage row."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from hango import telemetry
from hango.agent import chat_span
from hango.agent.deps import Deps
from hango.agent.draft import Draft
from hango.agent.estimator import estimate_request
from hango.agent.state import RunState
from hango.errors import QuotaExhausted
from hango.messages import Request, Response
from hango.providers import split_model
from hango.store import TenantStore
from hango.telemetry import names


@dataclass(frozen=True)
class Gateway:
    """Sends drafts to the provider for one run (or try), billing every call to ``state``.

    ``timeout`` caps each call; a state with a deadline (a run) caps it further.
    """

    deps: Deps
    state: RunState
    timeout: float

    def check_quota(self) -> None:
        """Raise ``QuotaExhausted`` when the tenant's tokens for this month are used up."""
        with self.deps.engine.begin() as conn:
            left = TenantStore(conn, self.state.tenant_id).usage.quota_left(dt.datetime.now(dt.UTC))
        if left is not None and left <= 0:
            raise QuotaExhausted()

    def __call__(self, draft: Draft) -> Response:
        """The chain's base handler: provenance is stripped here, before the provider sees anything."""
        return self.send(draft.to_request())

    def send(self, request: Request) -> Response:
        """Check the quota, call the provider in a ``chat`` span, record usage in its own transaction."""
        self.check_quota()
        provider, bare = self.deps.provider(request.model)
        estimated = estimate_request(request)
        with telemetry.tracer().start_as_current_span(names.SPAN_CHAT, record_exception=False) as span:
            chat_span.start(span, self.state, request, provider.name)
            timeout = self.state.time_left(self.timeout)  # never past the run's deadline
            response = provider.complete(replace(request, model=bare), timeout=timeout)
            chat_span.finish(span, self.state, response)
        self._record(request.model, response, estimated)
        return response

    def _record(self, model: str, response: Response, estimated: int) -> None:
        provider_name, bare = split_model(model)
        usage = response.usage
        with self.deps.engine.begin() as conn:
            TenantStore(conn, self.state.tenant_id).usage.record(
                api_key_id=self.state.caller.api_key_id,
                user_id=self.state.caller.user_id,
                agent_id=self.state.agent.id,
                session_id=self.state.session_id,
                run_id=self.state.run_id,
                purpose=self.state.purpose,
                provider=provider_name,
                model=bare,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                estimated_input_tokens=estimated,
            )
