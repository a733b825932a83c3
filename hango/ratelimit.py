"""Per-key rate limit: requests per minute, counted in PostgreSQL so every worker shares it."""

from __future__ import annotations

import math
import uuid

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hango.errors import RateLimited

# One statement per request: stamp the key's last use, count this minute's window,
# and drop the key's windows older than the previous minute.
_COUNT = sa.text(
    """
    with used as (
      update api_keys set last_used_at = now() where id = :key
    ), pruned as (
      delete from rate_limit_windows
      where api_key_id = :key and window_start < date_trunc('minute', now()) - interval '1 minute'
    )
    insert into rate_limit_windows (api_key_id, window_start, count)
    values (:key, date_trunc('minute', now()), 1)
    on conflict (api_key_id, window_start) do update set count = rate_limit_windows.count + 1
    returning count, extract(epoch from window_start + interval '1 minute' - now()) as left
    """
)


def count_request(conn: Connection, api_key_id: uuid.UUID, limit: int) -> None:
    """Count one request of the key; raise ``RateLimited`` (429, ``Retry-After``) past ``limit``."""
    count, left = conn.execute(_COUNT, {"key": api_key_id}).one()
    if count > limit:
        retry = str(max(1, math.ceil(left)))
        raise RateLimited(
            f"more than {limit} requests this minute for this API key",
            details={"limit_per_minute": limit},
            headers={"Retry-After": retry},
        )
