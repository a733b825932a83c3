"""A session's revealed tools (issue 52): the deferred tools its model found with ``tool_search``."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from hango.db.schema import revealed_tools
from hango.store import TenantStore
from hango.store.revealed_tools import RevealedTool
from tests.support.clients import Tenant
from tests.support.world import World, build_world

CONVERT, NOW = (
    ("tool:time/convert_time", "time__convert_time"),
    ("tool:time/get_current_time", "time__get_current_time"),
)


def _store(conn, tenant: Tenant) -> TenantStore:
    return TenantStore(conn, uuid.UUID(tenant.id))


def test_a_revealed_tool_keeps_its_first_seq_and_survives_a_new_store(acme: Tenant, world: World, engine):
    session = uuid.UUID(world.session)
    with engine.begin() as conn:
        first = _store(conn, acme).revealed_tools.reveal(session, [NOW, ("tool:grep", "grep")], 2)
    with engine.begin() as conn:
        again = _store(conn, acme).revealed_tools.reveal(session, [NOW, CONVERT], 4)
    with engine.connect() as conn:
        kept = _store(conn, acme).revealed_tools.for_session(session)

    assert first == [RevealedTool("tool:grep", "grep", 2), RevealedTool(*NOW, 2)]
    assert again == [RevealedTool(*CONVERT, 4)]  # only the newly revealed one
    assert kept == [RevealedTool("tool:grep", "grep", 2), RevealedTool(*NOW, 2), RevealedTool(*CONVERT, 4)]


def test_a_forgotten_tool_is_deferred_again_and_found_anew_at_its_new_seq(acme: Tenant, world: World, engine):
    session = uuid.UUID(world.session)
    with engine.begin() as conn:
        store = _store(conn, acme)
        store.revealed_tools.reveal(session, [NOW, CONVERT], 2)
        assert store.revealed_tools.forget(session, [NOW[0], "tool:never/revealed"]) == 1
        assert store.revealed_tools.forget(session, []) == 0
        assert store.revealed_tools.reveal(session, [NOW], 6) == [RevealedTool(*NOW, 6)]
        assert [t.seq for t in store.revealed_tools.for_session(session)] == [2, 6]


def test_another_tenants_revealed_tools_are_invisible(acme: Tenant, globex: Tenant, world: World, engine):
    theirs = build_world(engine, globex)
    session, their_session = uuid.UUID(world.session), uuid.UUID(theirs.session)
    with engine.begin() as conn:
        _store(conn, globex).revealed_tools.reveal(their_session, [NOW], 2)
        _store(conn, acme).revealed_tools.reveal(session, [CONVERT], 2)
    with engine.begin() as conn:
        mine = _store(conn, acme).revealed_tools
        assert mine.for_session(their_session) == []
        assert mine.forget(their_session, [NOW[0]]) == 0
        assert mine.for_session(session) == [RevealedTool(*CONVERT, 2)]
    with engine.connect() as conn:
        assert _store(conn, globex).revealed_tools.for_session(their_session) == [RevealedTool(*NOW, 2)]


def test_deleting_a_session_deletes_its_revealed_tools(acme: Tenant, world: World, engine):
    session = uuid.UUID(world.session)
    with engine.begin() as conn:
        _store(conn, acme).revealed_tools.reveal(session, [NOW, CONVERT], 2)
        _store(conn, acme).revealed_tools.reveal(uuid.UUID(world.other_session), [NOW], 3)

    assert acme.member.delete(f"/v1/sessions/{world.session}").status_code == 204

    with engine.connect() as conn:
        left = conn.execute(sa.select(revealed_tools.c.session_id, revealed_tools.c.part)).all()
    assert left == [(uuid.UUID(world.other_session), NOW[0])]
