"""``hango demo`` (what ``scripts/run`` runs each time) keeps two live demo keys: each run revokes the last pair."""

from __future__ import annotations

import sqlalchemy as sa

from hango.auth import hash_key
from hango.cli import demo
from hango.config import load_config
from hango.db.schema import api_keys, audit_log


def test_every_run_of_the_demo_revokes_the_previous_pair_of_keys(
    engine: sa.Engine, database_url: str, clean_db
):
    config = load_config(overrides={"database_url": database_url})
    runs = [demo.seed(engine, config) for _ in range(3)]

    with engine.connect() as conn:
        live = (
            conn.execute(sa.select(api_keys.c.key_hash).where(api_keys.c.revoked_at.is_(None)))
            .scalars()
            .all()
        )
        revoked = conn.execute(sa.select(audit_log).where(audit_log.c.action == "api_key.delete")).all()

    assert sorted(live) == sorted(hash_key(runs[-1][key]) for key in ("owner_key", "member_key"))
    assert len(revoked) == 4 and all(row.detail["prefix"] for row in revoked)
