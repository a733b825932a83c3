"""The one save of pending changes: the agent's and the session's proposed sets stored together.

Both halves are stored in the request's one transaction, each checked against the ETags it
was read with, so both land or neither does; a half left out answers its stored set.
"""

from __future__ import annotations

from typing import Any

from hango.agent.deps import Deps
from hango.agent.overrides import Override
from hango.agent.state import Caller
from hango.auth import Principal
from hango.errors import Unprocessable
from hango.inspector.override_sets import Expected, override_set, put_overrides
from hango.inspector.pending import ROUTES
from hango.store import TenantStore
from hango.store.context_overrides import Target


def save(
    deps: Deps,
    store: TenantStore,
    session: Any,
    caller: Caller,
    halves: dict[str, tuple[list[Override], Expected] | None],
    *,
    who: Principal,
) -> dict[str, Any]:
    """Store the agent's and the session's proposed sets (each with the ETags it was read with) in the
    request's one transaction; each route's stored set, its ``added`` companions and ETag."""
    if all(half is None for half in halves.values()):
        raise Unprocessable("name the agent's set, the session's, or both", code="nothing_to_save")
    saved: dict[str, Any] = {}
    for route in ROUTES:
        target = Target(route, session.agent_id if route == "agent" else session.id)
        half = halves[route]
        if half is None:
            answer, etag = override_set(store, target)
        else:
            overrides, expected = half
            answer, etag = put_overrides(
                deps, store, session, caller, target, overrides=overrides, expected=expected, who=who
            )
        saved[route] = {**answer, "added": answer.get("added", []), "etag": etag}
    return saved
