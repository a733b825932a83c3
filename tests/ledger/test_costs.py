"""What calls cost: genai-prices' figure for the reported usage, per call, per part and per session."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal

import genai_prices
import pytest
import sqlalchemy as sa

from hango import worker
from hango.agent.deps import Deps
from hango.config import ConfigError, load_config
from hango.db.schema import pending_part_costs
from hango.messages import TOKEN_FIELDS, Message, Response, TextBlock, Usage
from hango.providers.prices import Prices, Tokens
from hango.store import TenantStore
from hango.store.part_costs import fold_waiting
from tests.inspector.conftest import assistant, user
from tests.inspector.test_suggestions import answered
from tests.ledger.helpers import call_detail, oldest_first

SONNET = "anthropic/claude-sonnet-4-6"
# Uncached input, cache reads, cache writes, output: a call that read most of its prompt from the cache.
USAGE = Usage(1_200, 80, 30_000, 2_500)


def answer(usage: Usage = USAGE) -> Response:
    return Response(Message("assistant", (TextBlock("the roses"),)), "end_turn", usage)


def table_price(bare: str, usage: Usage, provider: str = "anthropic") -> float:
    """genai-prices' own figure, where input counts every input token (hango's excludes the cache's)."""
    counted = genai_prices.Usage(
        input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
    )
    return float(genai_prices.calc_price(counted, bare, provider_id=provider).total_price)


def one_call(lab, model: str = SONNET) -> dict:
    session = lab.session(lab.agent(model=model), [user("hello"), assistant("hi")])
    lab.fake.reply(answer())
    assert lab.say(session, "which flowers?").status_code == 201
    (call,) = oldest_first(lab, session)
    return {"session": session, **call}


def test_a_calls_cost_is_genai_prices_figure_for_its_reported_usage(lab):
    call = one_call(lab)

    assert call["cost"]["usd"] == pytest.approx(table_price("claude-sonnet-4-6", USAGE), rel=1e-12)
    assert call["cost"]["source"].startswith("genai-prices ") and call["cost"]["reason"] is None


def test_a_usage_records_tokens_are_read_by_field_name_whatever_order_it_lists_them():
    usage = {"output_tokens": 4, "cache_write_tokens": 3, "input_tokens": 1, "cache_read_tokens": 2}
    assert Tokens.of(usage) == Tokens(input=1, cache_read=2, cache_write=3, output=4)


def test_cache_reads_are_priced_at_the_cache_read_price_not_the_input_price():
    model = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=1), "claude-sonnet-4-6", provider_id="anthropic"
    )
    rates = model.model_price
    prices = Prices()

    read = prices.cost(SONNET, Tokens(0, 1_000_000, 0, 0)).usd
    uncached = prices.cost(SONNET, Tokens(1_000_000, 0, 0, 0)).usd

    assert read == rates.cache_read_mtok and uncached == rates.input_mtok
    assert read < uncached


def test_an_unknown_model_costs_null_with_a_reason_never_a_guess(lab):
    call = one_call(lab, model="anthropic/claude-test")

    assert call["cost"]["usd"] is None
    assert "no price" in call["cost"]["reason"] and "claude-test" in call["cost"]["reason"]


def test_the_offline_model_is_priced_at_its_reference_models_prices_labelled_simulated(lab):
    session = lab.session(lab.agent(model="offline/echo"), [])
    assert lab.say(session, "hello").status_code == 201

    (call,) = oldest_first(lab, session)

    usage = Usage(**{name: call["usage"][name] for name in TOKEN_FIELDS})
    assert call["cost"]["usd"] > 0
    assert call["cost"]["usd"] == pytest.approx(table_price("claude-sonnet-4-6", usage), rel=1e-12)
    assert call["cost"]["source"].startswith("genai-prices ")
    assert call["cost"]["simulated_at"] == SONNET


def test_a_price_in_configuration_wins_over_the_table(make_lab):
    negotiated = {SONNET: {"input_mtok": 1, "cache_read_mtok": 0.1, "cache_write_mtok": 2, "output_mtok": 4}}
    lab = make_lab(prices=json.dumps(negotiated))

    call = one_call(lab)

    expected = (1_200 * 1 + 30_000 * 0.1 + 2_500 * 2 + 80 * 4) / 1_000_000
    assert call["cost"] == {
        "usd": pytest.approx(expected),
        "source": "HANGO_PRICES",
        "reason": None,
        "simulated_at": None,
    }


def test_a_malformed_price_configuration_is_refused_at_start():
    with pytest.raises(ConfigError, match="HANGO_PRICES"):
        load_config(env={"HANGO_PRICES": json.dumps({SONNET: {"input_mtok": -1}})})


def test_a_calls_parts_share_its_input_cost_at_the_rate_each_was_read_at(lab):
    call = one_call(lab)

    detail = call_detail(lab, call["session"], call["id"])

    parts = detail["parts"]
    assert all(p["cost_usd"] is not None and p["cost_usd"] > 0 for p in parts)
    # The first part lies in the cached prefix: priced at the cache-read rate, a tenth of input.
    rates = Prices().rates(SONNET).price
    assert parts[0]["cost_usd"] == pytest.approx(
        float(parts[0]["tokens"] * rates.cache_read_mtok / 1_000_000)
    )
    # the call's input cost and its tools, added up once by the server (the CLI's and panel's A/B show them)
    assert detail["input_usd"] == pytest.approx(sum(p["cost_usd"] for p in parts))
    assert detail["tools_sent"] == sum(1 for p in parts if p["kind"] == "tool") > 0


def test_a_sessions_cost_is_the_sum_of_its_calls_per_model(lab):
    call = one_call(lab)
    lab.fake.reply(answer(Usage(500, 40, 0, 0)))
    assert lab.say(call["session"], "and the tulips?").status_code == 201

    response = lab.who.get(f"/v1/sessions/{call['session']}/cost")

    assert response.status_code == 200
    body = response.get_json()
    expected = table_price("claude-sonnet-4-6", USAGE) + table_price(
        "claude-sonnet-4-6", Usage(500, 40, 0, 0)
    )
    assert (body["calls"], body["priced_calls"], body["unpriced_reason"]) == (2, 2, None)
    assert body["usd"] == pytest.approx(expected)
    assert body["by_model"] == [
        {"model": SONNET, "calls": 2, "usd": pytest.approx(expected), "reason": None, "simulated_at": None}
    ]


def test_inspect_gives_the_next_calls_expected_input_cost_from_its_tokens(lab):
    session = lab.session(lab.agent(model=SONNET), [user("hello"), assistant("hi")])

    body = lab.who.get(f"/v1/sessions/{session}/context").get_json()

    expected = body["next_call_cost"]
    tokens = Tokens(**expected["tokens"])
    assert tokens.output == 0 and tokens.cache_read == body["cache"]["expected_read_tokens"]
    assert sum(tokens) == body["total_after"]
    assert expected["usd"] == pytest.approx(float(Prices().cost(SONNET, tokens).usd))


def test_suggestions_give_the_money_saved_per_call_next_to_the_tokens(lab):
    listing = "/src/a.py\n/src/b.py\n/src/c.py"
    history = [
        user("what is in src?"),
        *answered("glob", listing, pattern="*.py", path="/src"),
        assistant("three files"),
        *answered("glob", listing, pattern="**/*.py", path="/src"),
        assistant("still three"),
    ]
    session = lab.session(lab.agent(model=SONNET), history)

    (found,) = lab.who.get(f"/v1/sessions/{session}/context/suggestions").get_json()["suggestions"]

    rates = Prices().rates(SONNET)
    # those parts would be read from the cache on every later call: saved at the cache-read price
    assert found["usd_saved_per_call"] == pytest.approx(rates.usd(found["tokens_saved"], "cache_read_mtok"))
    write_less_read = rates.usd(found["cache_loss_tokens"], "cache_write_mtok", "cache_read_mtok")
    assert found["usd_cache_loss"] == pytest.approx(write_less_read)


def test_a_parts_total_cost_so_far_is_the_sum_of_its_cost_on_every_call_it_rode_in(lab):
    call = one_call(lab)
    lab.fake.reply(answer(Usage(500, 40, 0, 0)))
    assert lab.say(call["session"], "and the tulips?").status_code == 201
    calls = [call_detail(lab, call["session"], c["id"]) for c in oldest_first(lab, call["session"])]

    rode: dict[str, list[float]] = {}
    for detail in calls:
        for part in detail["parts"]:
            rode.setdefault(part["id"], []).append(part["cost_usd"])
    for detail in calls:  # a past call shows the same totals: so far is through the session's latest call
        for part in detail["parts"]:
            costs = rode[part["id"]]
            assert part["cost_so_far"] == {
                "calls": len(costs),
                "priced_calls": len(costs),
                "usd": pytest.approx(sum(costs), rel=1e-9),
            }, part["id"]
    assert {len(costs) for costs in rode.values()} == {1, 2}  # the new messages rode in the second call only


def record_call(store: TenantStore, session: uuid.UUID, costs: list[tuple[str, Decimal | None]]) -> None:
    """One call's rows as the gateway writes them, its parts' ``costs`` left waiting."""
    usage = {"session_id": session, "purpose": "run", "provider": "anthropic", "model": "claude-sonnet-4-6"}
    usage |= {"input_tokens": 10, "output_tokens": 1, "cache_read_tokens": 0, "cache_write_tokens": 0}
    tail = [[part, "0" * 32, 5] for part, _ in costs]
    call = {"session_id": session, "purpose": "run", "model": SONNET, "started_at": dt.datetime.now(dt.UTC)}
    call |= {"duration_ms": 1, "prefix_parts": 0, "tail": tail, "breakpoints": [], "parts_count": len(costs)}
    store.model_calls.record(usage, call | {"expected_cache_read": 0}, costs)


def test_a_parts_total_so_far_counts_a_call_when_recorded_and_reads_the_same_once_folded(lab):
    session = uuid.UUID(lab.session(lab.agent(model=SONNET), [user("hello"), assistant("hi")]))
    parts = ["message:1", "message:2"]
    mine = pending_part_costs.c.session_id == session
    # One transaction: no other process (a live server's fold on this database) sees these calls.
    with lab.engine.begin() as conn:
        store = TenantStore(conn, uuid.UUID(lab.tenant.id))
        record_call(store, session, [("message:1", Decimal("0.5"))])
        assert fold_waiting(conn) >= 1  # the first call's costs folded: a row to add to
        record_call(store, session, [("message:1", Decimal("0.25")), ("message:2", None)])

        waiting = {p: tuple(row) for p, row in store.part_costs.of(session, parts).items()}
        folded = fold_waiting(conn)
        left = conn.execute(sa.select(sa.func.count()).where(mine)).scalar_one()
        totals = {p: tuple(row) for p, row in store.part_costs.of(session, parts).items()}

    assert waiting == {"message:1": ("message:1", 2, 2, Decimal("0.75")), "message:2": ("message:2", 1, 0, 0)}
    assert (folded >= 1, left) == (True, 0)
    assert totals == waiting  # the same totals, read from the folded rows alone


def test_the_workers_fold_takes_a_batch_per_transaction_until_one_is_not_full(lab, monkeypatch):
    batches = iter([2, 2, 1])
    transactions = []

    def fold(conn, batch):
        transactions.append(conn.in_transaction())
        return min(batch, next(batches))

    monkeypatch.setattr(worker, "FOLD_BATCH", 2)
    monkeypatch.setattr(worker, "fold_waiting", fold)

    folded = worker.fold_part_costs(Deps(lab.engine, lab.who.client.application.config["HANGO"]))

    assert (folded, transactions) == (5, [True, True, True])


def test_the_workers_fold_part_costs_on_the_reapers_tick_once_per_queue(lab):
    deps = Deps(lab.engine, lab.who.client.application.config["HANGO"])

    periodic = {
        (t.task.name, t.periodic_id, t.cron)
        for t in worker.worker_queue(deps).periodic_registry.periodic_tasks.values()
    }

    tick = f"* * * * * */{deps.config.reaper_interval}"
    assert periodic == {
        (worker.reap_task.name, deps.config.job_queue, tick),
        (worker.fold_task.name, deps.config.job_queue, tick),
    }
    assert worker.worker_queue(deps, periodic=False).periodic_registry.periodic_tasks == {}


def test_a_part_of_unpriced_calls_counts_its_calls_and_has_no_total_so_far(lab):
    call = one_call(lab, model="anthropic/claude-test")

    detail = call_detail(lab, call["session"], call["id"])

    assert detail["parts"] and all(
        p["cost_so_far"] == {"calls": 1, "priced_calls": 0, "usd": None} for p in detail["parts"]
    )


def test_a_calls_waiting_costs_are_stored_uncompressed(lab):
    """A waiting row lives until the next fold: compressing it (pglz, ~0.5 ms a call) saved nothing."""
    session = uuid.UUID(lab.session(lab.agent(model=SONNET), [user("hello"), assistant("hi")]))
    costs = [(f"message:{n}", Decimal("0.000012345678")) for n in range(1, 1_001)]
    mine = pending_part_costs.c.session_id == session
    with lab.engine.begin() as conn:  # uncommitted: no fold on this database takes the row first
        record_call(TenantStore(conn, uuid.UUID(lab.tenant.id)), session, costs)
        stored = conn.execute(
            sa.select(
                sa.func.pg_column_compression(pending_part_costs.c.costs),
                sa.func.pg_column_size(pending_part_costs.c.costs),
            ).where(mine)
        ).one()
        conn.rollback()

    assert stored[0] is None  # not compressed
    assert stored[1] > 30_000  # the whole value, out of line
