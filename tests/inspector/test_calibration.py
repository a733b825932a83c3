"""Calibration: inspect's calibrated totals from the median of reported ÷ estimated input on recent calls."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest

from hango.db.schema import usage_records
from hango.inspector.calibration import CALLS
from hango.messages import Message, Response, TextBlock, Usage
from tests.inspector.conftest import ANTHROPIC, Lab, by_id, user
from tests.support.sql import count_statements

START = dt.datetime(2026, 1, 5, 12, 0, tzinfo=dt.UTC)


def calls(
    lab: Lab, agent: str, session: str, figures: list[tuple[int, int]], start: dt.datetime = START, **row: Any
) -> None:
    """Usage rows of ``agent``, one a minute from ``start``: (estimated, reported input) each."""
    values = {"provider": "anthropic", "model": "claude-test", "purpose": "run", "output_tokens": 5}
    values |= {"cache_read_tokens": 0, "cache_write_tokens": 0, **row}

    def add(store) -> None:
        for minute, (estimated, reported) in enumerate(figures):
            store.usage.record(
                agent_id=uuid.UUID(agent),
                session_id=uuid.UUID(session),
                input_tokens=reported,
                estimated_input_tokens=estimated,
                created_at=start + dt.timedelta(minutes=minute),
                **values,
            )

    lab.store(add)


@pytest.fixture
def seeded(lab: Lab) -> tuple[str, str]:
    agent = lab.agent(tools=["ls"])
    return agent, lab.session(agent, [user("how big is this?")])


def test_inspect_reports_no_calibration_before_the_agents_first_call(lab: Lab, seeded) -> None:
    _, session = seeded

    body = lab.inspect(session)

    assert body["calibrated_total"] is None and body["calibrated_totals"] is None
    assert body["calibration"] is None and body["last_call"] is None


OPENAI = {"provider": "openai", "model": "gpt-test"}  # a provider without a token counter: estimates


def test_inspect_reports_the_calibrated_total_from_the_median_ratio_and_its_call_count(lab: Lab) -> None:
    agent = lab.agent(model="openai/gpt-test", tools=["ls"])
    session = lab.session(agent, [user("how big is this?")])
    calls(lab, agent, session, [(1000, 1100), (1000, 900), (2000, 2400), (500, 525)], **OPENAI)

    body = lab.inspect(session)

    ratio = (1.05 + 1.1) / 2
    assert body["calibration"] == {"ratio": pytest.approx(ratio, abs=1e-4), "calls": 4}
    estimated = sum(group["after"] for group in body["totals"].values())
    assert body["calibrated_total"] == round(estimated * ratio)
    assert body["last_call"] is None  # these rows belong to no run: like a try's, no call of the session


def test_calibrated_totals_add_up_to_3202_while_calibrated_total_is_3201_no_more(lab: Lab) -> None:
    """Each group rounded on its own could sum to one more than the total: largest-remainder rounding."""
    agent = lab.agent(model="openai/gpt-test", tools=["ls"])
    session = lab.session(agent, [user("how big is this?")])
    calls(lab, agent, session, [(1000, 1005)], **OPENAI)  # 1.005: every group rounds half up alone

    body = lab.inspect(session)

    assert sum(body["calibrated_totals"].values()) == body["calibrated_total"]
    for group, figure in body["calibrated_totals"].items():
        assert abs(figure - body["totals"][group]["after"] * 1.005) < 1


def test_a_provider_counted_agent_shows_groups_scaled_to_the_count_and_no_calibrated_figure(
    lab: Lab, seeded
) -> None:
    agent, session = seeded
    calls(lab, agent, session, [(1000, 1100)])
    lab.fake.count(1871, 1871)

    body = lab.inspect(session)

    assert (body["counted"], body["totals_unit"], body["total_after"]) == (
        "provider",
        "provider_scaled",
        1871,
    )
    assert sum(g["after"] for g in body["totals"].values()) == body["total_after"]
    assert sum(g["before"] for g in body["totals"].values()) == body["total_before"]
    assert body["calibrated_total"] is None and body["calibrated_totals"] is None


def test_calibration_counts_cache_reads_and_writes_as_reported_input(lab: Lab, seeded) -> None:
    agent, session = seeded
    calls(lab, agent, session, [(1000, 200)], cache_read_tokens=700, cache_write_tokens=300)

    assert lab.inspect(session)["calibration"] == {"ratio": 1.2, "calls": 1}


def test_calibration_takes_only_the_last_20_calls_of_that_agent_and_model(lab: Lab, seeded) -> None:
    agent, session = seeded
    other_agent = lab.agent()
    calls(lab, agent, session, [(100, 300)] * 5)  # oldest: fall out of the window
    calls(lab, agent, session, [(100, 110)] * CALLS, start=START + dt.timedelta(hours=1))
    newest = START + dt.timedelta(days=1)
    calls(lab, other_agent, session, [(100, 500)], start=newest)
    calls(lab, agent, session, [(100, 500)], start=newest, model="claude-other")
    calls(lab, agent, session, [(0, 500)], start=newest)  # no estimate: no ratio

    assert lab.inspect(session)["calibration"] == {"ratio": 1.1, "calls": CALLS}


def test_a_run_against_the_provider_calibrates_the_next_inspect(lab: Lab, seeded) -> None:
    _, session = seeded
    lab.fake.reply(Response(Message("assistant", (TextBlock("It is big."),)), "end_turn", Usage(777, 9)))
    assert lab.say(session, "and now?").status_code == 201
    [row] = lab.store(lambda s: list(s.conn.execute(usage_records.select())))

    body = lab.inspect(session)

    assert body["calibration"] == {
        "ratio": pytest.approx(777 / row.estimated_input_tokens, abs=1e-4),
        "calls": 1,
    }
    last = {k: body["last_call"][k] for k in ("purpose", "estimated", "reported", "run_id")}
    assert last == {
        "purpose": "run",
        "estimated": row.estimated_input_tokens,
        "reported": 777,
        "run_id": str(row.run_id),
    }
    assert body["model"] == ANTHROPIC


def test_calibration_adds_no_statement_to_inspect(lab: Lab, seeded) -> None:
    agent, session = seeded
    lab.inspect(session)
    with count_statements(lab.app_engine) as before:
        lab.inspect(session)
    calls(lab, agent, session, [(1000, 1100)])

    with count_statements(lab.app_engine) as after:
        lab.inspect(session)

    assert len(after) == len(before)


def test_before_the_sessions_first_call_the_unit_is_calibrated_and_no_part_costs_cache(lab: Lab) -> None:
    agent = lab.agent(model=ANTHROPIC, tools=["ls"])
    session = lab.session(agent, [user("how big is this?")])
    calls(lab, agent, lab.session(agent), [(1000, 1200)] * 3)  # another session's calls: ratio 1.2

    body = lab.inspect(session)

    assert (body["cache"]["outlook"], body["cache"]["unit"]) == ("first_call", "calibrated")
    # the provider holds nothing of this session yet: a change loses no cache
    assert all(p["cache_loss_tokens"] == 0 for p in by_id(body).values())
