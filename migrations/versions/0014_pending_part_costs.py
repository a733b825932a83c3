"""A call's part costs wait in one row until a periodic fold adds them to the session's totals.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02

Recording a call used to upsert one ``part_costs`` row per part it sent (about
1,000 at a 1,000-message session) in the statement that records it: a row lock,
a HOT update and its WAL per part, on every model call's answer path. The call's
statement now inserts one ``pending_part_costs`` row instead: what each part
cost on that call, ``{part: usd}`` as JSON text (``json``, not ``jsonb``: it is
written on the answer's path and read only by the fold, so it is kept as sent;
``null`` where the price table has no price). The workers' periodic fold (``hango.fold_part_costs``) moves those
rows into ``part_costs`` in one statement per batch, and reading a part's total
so far adds the session's rows still waiting, so a total is whole the moment
its call is recorded. The upgrade has nothing to move; the downgrade folds what
waits first, so no cost is lost.
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        create table pending_part_costs (
          call_id uuid primary key,
          tenant_id uuid not null,
          session_id uuid not null,
          costs json not null,
          foreign key (tenant_id, session_id) references sessions (tenant_id, id) on delete cascade
        )
        """
    )
    op.execute("create index pending_part_costs_session on pending_part_costs (tenant_id, session_id)")


def downgrade() -> None:
    op.execute(
        """
        insert into part_costs (tenant_id, session_id, part, calls, priced_calls, usd)
        select p.tenant_id, p.session_id, e.key, count(*), count(e.value), coalesce(sum(e.value::numeric), 0)
        from pending_part_costs p, json_each_text(p.costs) e
        group by 1, 2, 3
        on conflict (tenant_id, session_id, part) do update set
          calls = part_costs.calls + excluded.calls,
          priced_calls = part_costs.priced_calls + excluded.priced_calls,
          usd = part_costs.usd + excluded.usd
        """
    )
    op.execute("drop table pending_part_costs")
