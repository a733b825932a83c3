"""Queries on ``usage_records``: token totals per UTC calendar month, the last call, calibration."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa

from hango.audit import CALL_ERROR, MCP_SERVER_CALL
from hango.db.schema import audit_log, runs, tenants, usage_records
from hango.messages import TOKEN_FIELDS, prompt_tokens
from hango.store.base import Scoped, new_id
from hango.store.recorded_changes import KEPT

# The recent calls of an agent and model whose median of reported ÷ estimated input is its calibration.
CALIBRATION_CALLS = 20


def month_start(now: dt.datetime) -> dt.datetime:
    """The first instant of ``now``'s calendar month in UTC."""
    utc = now.astimezone(dt.UTC)
    return utc.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_month(start: dt.datetime) -> dt.datetime:
    """The first instant of the month after the one starting at ``start``."""
    return (start + dt.timedelta(days=32)).replace(day=1)


def _quota_left_statement() -> sa.Select:
    """The tenant's quota less its tokens since ``the_month``, never below 0: the month's usage is summed
    only when the tenant has a quota (PostgreSQL runs a subquery of a ``CASE`` branch only when it takes
    the branch)."""
    tenant = sa.bindparam("the_tenant", type_=tenants.c.id.type)
    spent = sum(usage_records.c[name] for name in TOKEN_FIELDS)
    used = (
        sa.select(sa.func.coalesce(sa.func.sum(spent), 0))
        .where(
            usage_records.c.tenant_id == tenant,
            usage_records.c.created_at >= sa.bindparam("the_month", type_=usage_records.c.created_at.type),
        )
        .scalar_subquery()
    )
    left = sa.case(
        (tenants.c.token_quota.is_(None), None), else_=sa.func.greatest(tenants.c.token_quota - used, 0)
    )
    return sa.select(tenants.c.token_quota, left.label("left")).where(tenants.c.id == tenant)


_QUOTA_LEFT = _quota_left_statement()


class Usage(Scoped):
    table = usage_records

    def totals(self, start: dt.datetime, end: dt.datetime) -> list[sa.Row]:
        """Calls and token sums per purpose, provider and model for records in ``[start, end)``."""
        sums = [sa.func.coalesce(sa.func.sum(usage_records.c[name]), 0).label(name) for name in TOKEN_FIELDS]
        groups = (usage_records.c.purpose, usage_records.c.provider, usage_records.c.model)
        query = (
            sa.select(*groups, sa.func.count().label("calls"), *sums)
            .where(self.where(usage_records.c.created_at >= start, usage_records.c.created_at < end))
            .group_by(*groups)
            .order_by(*groups)
        )
        return list(self.conn.execute(query).all())

    def mcp_calls(self, start: dt.datetime, end: dt.datetime) -> list[sa.Row]:
        """The runs' MCP tool calls in ``[start, end)`` per server and tool, with how many ended in an
        error: counted from their audit rows (one index range of ``audit_log_action_idx``)."""
        server, tool = audit_log.c.detail["server"].astext, audit_log.c.detail["tool"].astext
        errors = sa.func.count().filter(audit_log.c.detail["outcome"].astext == CALL_ERROR)
        query = (
            sa.select(server.label("server"), tool.label("tool"), sa.func.count().label("calls"))
            .add_columns(errors.label("errors"))
            .where(
                audit_log.c.tenant_id == self.tenant_id,
                audit_log.c.action == MCP_SERVER_CALL,
                audit_log.c.created_at >= start,
                audit_log.c.created_at < end,
            )
            .group_by(server, tool)
            .order_by(server, tool)
        )
        return list(self.conn.execute(query).all())

    def of_session(self, session_id: Any) -> list[sa.Row]:
        """Every call of the session: provider, model, time and tokens, grouped where they are equal.

        Calls of one model with the same tokens in the same minute are one row with ``calls``:
        a price is in force from a date on, so the minute never splits a price.
        """
        minute = sa.func.date_trunc("minute", usage_records.c.created_at).label("at")
        groups = (
            usage_records.c.provider,
            usage_records.c.model,
            minute,
            *(usage_records.c[n] for n in TOKEN_FIELDS),
        )
        query = (
            sa.select(*groups, sa.func.count().label("calls"))
            .where(self.where(usage_records.c.session_id == session_id))
            .group_by(*groups)
        )
        return list(self.conn.execute(query).all())

    def record(self, **values: Any) -> None:
        """Write one usage row (one model call)."""
        self.insert_row(id=new_id(), **values)

    def this_month(self, now: dt.datetime) -> dict[str, Any]:
        """``now``'s UTC calendar month: its bounds, its totals per purpose and model (``totals``), the
        tokens they add up to, the runs' MCP tool calls per server and tool (``mcp_calls``), the tenant's quota and what is left of it (``quota_left``)."""
        start = month_start(now)
        end = next_month(start)
        totals = self.totals(start, end)
        quota = self._quota(now)
        return {
            "period_start": start,
            "period_end": end,
            "totals": totals,
            "mcp_calls": self.mcp_calls(start, end),
            "used_tokens": sum(getattr(row, name) for row in totals for name in TOKEN_FIELDS),
            "token_quota": quota.token_quota,
            "quota_left": quota.left,
        }

    def quota_left(self, now: dt.datetime) -> int | None:
        """Tokens the tenant may still spend this UTC month, never below 0; None when it has no quota (then
        nothing is summed)."""
        return self._quota(now).left

    def _quota(self, now: dt.datetime) -> sa.Row:
        """The tenant's ``token_quota`` and what is ``left`` of it this month (one statement)."""
        return self.conn.execute(
            _QUOTA_LEFT, {"the_tenant": self.tenant_id, "the_month": month_start(now)}
        ).one()

    def recent(self, session_id: Any, agent_id: Any, provider: str, model: str, calls: int) -> sa.Row:
        """The session's last call and the agent's calibration for ``model``, in one statement.

        ``purpose``, ``estimated``, ``reported``, ``run_id`` and ``at`` are the session's most recent
        ``run`` call of a message run that ended keeping its turn (no try, no cancelled or failed run,
        no summarize call; null before the first);
        ``ratio`` is the median of reported ÷ estimated input tokens over the agent's last ``calls``
        calls of ``provider``/``model`` that have an estimate, and ``calibration_calls`` their number.
        """
        values = {"the_tenant": self.tenant_id, "the_session": session_id, "the_agent": agent_id}
        values.update(the_provider=provider, the_model=model, the_calls=calls)
        return self.conn.execute(_RECENT, values).one()

    def calibration(self, agent_id: Any, provider: str, model: str, calls: int = CALIBRATION_CALLS) -> sa.Row:
        """The agent's calibration for ``provider``/``model`` alone (``ratio``, ``calibration_calls``)."""
        query = sa.select(_calibration(self.tenant_id, agent_id, provider, model, calls))
        return self.conn.execute(query).one()


def _calibration(tenant_id: Any, agent_id: Any, provider: Any, model: Any, calls: Any) -> sa.Subquery:
    """The median of reported ÷ estimated input over the agent's last ``calls`` calls of the model
    (each argument a value or a bound parameter)."""
    c = usage_records.c
    reported = prompt_tokens(c)
    ratios = (
        sa.select((sa.cast(reported, sa.Float) / c.estimated_input_tokens).label("ratio"))
        .where(
            sa.and_(
                c.tenant_id == tenant_id, c.agent_id == agent_id, c.provider == provider, c.model == model
            ),
            c.estimated_input_tokens > 0,
        )
        .order_by(c.created_at.desc())
        .limit(calls)
        .subquery()
    )
    return sa.select(
        sa.func.percentile_cont(0.5).within_group(ratios.c.ratio).label("ratio"),
        sa.func.count().label("calibration_calls"),
    ).subquery()


def _recent_statement() -> sa.Select:
    """``Usage.recent``'s statement, built once with its values as bound parameters (an inspect's
    statements took more instructions to build than to run: ``docs/performance.md``)."""
    c = usage_records.c
    tenant_id = sa.bindparam("the_tenant", type_=c.tenant_id.type)
    session_id = sa.bindparam("the_session", type_=c.session_id.type)
    agent_id = sa.bindparam("the_agent", type_=c.agent_id.type)
    provider = sa.bindparam("the_provider", type_=c.provider.type)
    model = sa.bindparam("the_model", type_=c.model.type)
    calls = sa.bindparam("the_calls", type_=sa.Integer)
    reported = prompt_tokens(c)
    r = runs.c
    last = (
        sa.select(
            c.purpose,
            c.estimated_input_tokens.label("estimated"),
            reported.label("reported"),
            c.run_id,
            c.created_at.label("at"),
        )
        .join(runs, sa.and_(r.tenant_id == c.tenant_id, r.id == c.run_id))
        .where(
            sa.and_(c.tenant_id == tenant_id, c.session_id == session_id, c.purpose == "run"),
            # a message run that ended keeping its turn: no try, no cancelled or failed run, no compaction
            r.kind == "message",
            r.status.in_(KEPT),
        )
        .order_by(c.created_at.desc())
        .limit(1)
        .subquery()
    )
    calibration = _calibration(tenant_id, agent_id, provider, model, calls)
    query = sa.select(
        last.c.purpose,
        last.c.estimated,
        last.c.reported,
        last.c.run_id,
        last.c.at,
        calibration.c.ratio,
        calibration.c.calibration_calls,
    )
    return query.select_from(calibration.outerjoin(last, sa.true()))


_RECENT = _recent_statement()
