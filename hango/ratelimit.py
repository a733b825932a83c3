"""Request budgets counted in PostgreSQL, so every worker shares them.

- Each member (all of their keys together) has one budget of requests per minute;
  the request is refused when the member's count passes the limit of the key it
  presents. A member cannot multiply the limit by minting keys, and their total in
  a minute never passes the highest limit an owner or admin gave one of their keys.
- Failed authentications are counted per client address and per key prefix. Past
  the limit in a minute, a failure answers 429 instead of 401. A request is counted
  only after its key failed, so a right secret is never refused: nobody can lock a
  key holder out by failing on their prefix or from their address.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hango.auth import Principal
from hango.errors import RateLimited

# One statement per request: stamp the key's last use, count the member's minute,
# and drop the member's windows older than the previous minute.
_COUNT = sa.text(
    """
    with used as (
      update api_keys set last_used_at = now() where id = :key
    ), pruned as (
      delete from rate_limit_windows
      where tenant_id = :tenant and user_id = :user
        and window_start < date_trunc('minute', now()) - interval '1 minute'
    )
    insert into rate_limit_windows (tenant_id, user_id, window_start, count)
    values (:tenant, :user, date_trunc('minute', now()), 1)
    on conflict (tenant_id, user_id, window_start) do update set count = rate_limit_windows.count + 1
    returning count, extract(epoch from window_start + interval '1 minute' - now()) as left
    """
)

# One statement per failure: count it for each subject, drop everyone's windows older than
# the previous minute (a stranger's subjects never come back to prune their own).
_FAIL = sa.text(
    """
    with pruned as (
      delete from auth_failures where window_start < date_trunc('minute', now()) - interval '1 minute'
    )
    insert into auth_failures (subject, window_start, count)
    select subject, date_trunc('minute', now()), 1 from unnest(cast(:subjects as text[])) as subject
    on conflict (subject, window_start) do update set count = auth_failures.count + 1
    returning count, extract(epoch from window_start + interval '1 minute' - now()) as left
    """
)


def _retry_after(left: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, math.ceil(left)))}


def count_request(conn: Connection, who: Principal) -> None:
    """Count one request of the member; raise ``RateLimited`` (429, ``Retry-After``) past the key's limit."""
    values = {"key": who.api_key_id, "tenant": who.tenant_id, "user": who.user_id}
    count, left = conn.execute(_COUNT, values).one()
    limit = who.rate_limit_per_minute
    if count > limit:
        raise RateLimited(
            f"more than {limit} requests this minute for this member's API keys",
            details={"limit_per_minute": limit},
            headers=_retry_after(left),
        )


def count_failure(conn: Connection, subjects: Sequence[str], limit: int) -> None:
    """Count one failed authentication of each subject; raise ``RateLimited`` once one is past ``limit``."""
    rows = conn.execute(_FAIL, {"subjects": list(subjects)}).all()
    over = [left for count, left in rows if count > limit]
    if over:
        raise RateLimited(
            f"more than {limit} failed authentications this minute from this client or for this key",
            code="too_many_failures",
            details={"failures_per_minute": limit},
            headers=_retry_after(max(over)),
        )
