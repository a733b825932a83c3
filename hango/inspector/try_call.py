"""A one-call try sent: one model call with the current overrides plus the body's, nothing of the session kept.

The request's transaction is committed before the call, so nothing is left open while the
provider answers; the ``context.try`` audit row commits with the call's record (the gateway's
``alongside``), or alone when the call fails. Each try counts once, by its outcome.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from hango import telemetry
from hango.agent.assembly import send
from hango.agent.deps import Deps
from hango.agent.state import Caller
from hango.auth import Principal
from hango.errors import HangoError
from hango.inspector import trying
from hango.inspector.call_ledger import prices
from hango.inspector.try_audit import TryAudit
from hango.providers.prices import Tokens
from hango.store import TenantStore
from hango.telemetry import names


def try_call(
    deps: Deps,
    store: TenantStore,
    session: Any,
    caller: Caller,
    body: trying.TryBody,
    *,
    principal: Principal,
    run_in_pool: Callable[[Callable[[], Any], float], Any],
) -> dict[str, Any]:
    """One model call with the current overrides plus ``body``'s; nothing of the session is stored.

    The request's transaction is committed before the call (the reserved seq is kept; nothing is
    left open during the call); ``run_in_pool`` runs the provider call in the try pool by its
    deadline. The ``context.try`` audit row is committed with the call's record, or alone when the
    call fails.
    """
    ready = trying.prepare_try(deps, store, session, caller, body)
    state, plan = ready.state, ready.plan
    audit = TryAudit(session.id, principal, plan.excluded, state.agent.model)
    ready.gateway.alongside = audit.with_call
    _commit(store)
    started = time.monotonic()
    ready = ready.timed(started + deps.config.context_try_timeout)  # the SDK call gets what is left
    state = ready.state
    outcome = "error"
    try:
        response = run_in_pool(lambda: send(ready.chain, ready.draft, state, ready.gateway), state.deadline)
        outcome = "ok"
    except HangoError as exc:
        outcome = exc.code
        raise
    finally:
        if audit.alone(outcome, store):  # a failed call's row, or one the record did not write
            _commit(store)
        telemetry.meter().create_counter(names.METRIC_CONTEXT_TRY).add(1, {"outcome": outcome})
    return {
        "message": trying.answer(response),
        "stop_reason": response.stop_reason,
        "usage": vars(response.usage),
        # what the provider's reported usage costs at the model's prices, as the calls ledger prices it
        "cost": prices(deps).cost(state.agent.model, Tokens.of(vars(response.usage))).as_dict(),
        "model": state.agent.model,
        "excluded": plan.excluded,
        "added": plan.added,
        "duration_ms": int((time.monotonic() - started) * 1000),
    }


def _commit(store: TenantStore) -> None:
    """Commit the request's transaction (``store``'s connection), if one is open."""
    if store.conn.in_transaction():
        store.conn.commit()
