"""What a model call costs, in US dollars, from ``genai-prices`` (pydantic's maintained price table).

hango's usage figures split a call's input into uncached input, cache reads and
cache writes; genai-prices counts ``input_tokens`` as all three together, so a
call's usage is handed over as ``input_tokens = uncached + read + write`` with
the cache figures beside it, and each is priced at its own rate (cache reads at
the cache-read price). The table's price in force at the call's start is used
(it records price changes over time). Each provider's registry row names its id
in the table (``ProviderSpec.prices``). ``offline`` only stands in for a model: its
calls are priced at its reference model's prices (``ProviderSpec.simulates``,
``anthropic/claude-sonnet-4-6``), and every such cost names that model in
``simulated_at``, so no simulated figure reads as money spent. A model the
table does not know costs ``None`` with a reason, never a guess.
``HANGO_PRICES`` (JSON: ``{"anthropic/claude-x": {"input_mtok": 3, ...}}``, USD
per million tokens) overrides the table per model, for negotiated rates.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from importlib.metadata import version
from typing import Any, NamedTuple

from genai_prices import Usage
from genai_prices.data_snapshot import get_snapshot
from genai_prices.types import ModelPrice

from hango.config import parse_prices
from hango.messages import TOKEN_FIELDS, prompt_tokens
from hango.providers import SPECS, UnknownProvider, split_model

TABLE = f"genai-prices {version('genai-prices')}"


class Tokens(NamedTuple):
    """A call's tokens as hango reports them: input excludes the cache reads and writes."""

    input: int
    cache_read: int
    cache_write: int
    output: int

    @classmethod
    def of(cls, usage: Mapping[str, int]) -> Tokens:
        """The tokens of a usage record: a call's usage dict, or a stored row's ``_mapping``."""
        return cls(**{name.removesuffix("_tokens"): usage[name] for name in TOKEN_FIELDS})

    @property
    def prompt(self) -> int:
        """The prompt the provider counted (``hango.messages.prompt_tokens``)."""
        return prompt_tokens({f"{name}_tokens": count for name, count in self._asdict().items()})


@dataclass(frozen=True)
class Cost:
    """A price in USD, or None with the reason it is unknown; ``source`` says where the price came from.

    ``simulated_at`` names the reference model whose prices priced a simulated call (None: a real price).
    """

    usd: Decimal | None
    source: str | None = None
    reason: str | None = None
    simulated_at: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "usd": None if self.usd is None else float(self.usd),
            "source": self.source,
            "reason": self.reason,
            "simulated_at": self.simulated_at,
        }


@dataclass(frozen=True)
class Rates:
    """The prices one model's calls are charged at, and where they came from (or why there are none).

    ``simulated_at``: the reference model these are the prices of, for a provider that stands in for it.
    """

    price: ModelPrice | None
    source: str | None = None
    reason: str | None = None
    simulated_at: str | None = None

    def cost(self, tokens: Tokens) -> Cost:
        if self.price is None:
            return Cost(None, reason=self.reason, simulated_at=self.simulated_at)
        return Cost(_priced(self.price, tokens), self.source, simulated_at=self.simulated_at)

    def per_token(self, kind: str) -> Decimal | None:
        """USD per token of ``kind`` (a price key such as ``cache_read_mtok``), None without prices."""
        if self.price is None:
            return None
        value = getattr(self.price, kind, None)
        if kind.startswith("cache_") and value is None:
            value = getattr(self.price, "input_mtok", None)
        return None if value is None or not isinstance(value, Decimal) else value / 1_000_000

    def usd(self, tokens: int, kind: str, less: str | None = None) -> float | None:
        """``tokens`` priced at ``kind``'s rate (less ``less``'s), None without prices."""
        rate, minus = self.per_token(kind), self.per_token(less) if less else Decimal(0)
        return None if rate is None or minus is None else float(tokens * (rate - minus))


class Prices:
    """The price table with ``HANGO_PRICES`` on top: built once per app from its configuration."""

    def __init__(self, configured: str | None = None) -> None:
        self.overrides = {model: _model_price(rates) for model, rates in parse_prices(configured).items()}

    def rates(self, model: str, at: dt.datetime | None = None) -> Rates:
        """The rates of ``model`` (``<provider>/<model>``) in force at ``at`` (now when None)."""
        if model in self.overrides:
            return Rates(self.overrides[model], "HANGO_PRICES")
        try:
            provider, bare = split_model(model)
        except UnknownProvider as exc:
            return Rates(None, reason=str(exc))
        spec = SPECS[provider]
        if spec.simulates is not None:
            return replace(self.rates(spec.simulates, at), simulated_at=spec.simulates)
        table_id = spec.prices
        if table_id is None:
            return Rates(None, reason=f"provider {provider!r} has no price table")
        return _table_rates(table_id, bare, at or dt.datetime.now(dt.UTC))

    def cost(self, model: str, tokens: Tokens, at: dt.datetime | None = None) -> Cost:
        """What a call of ``model`` with ``tokens`` cost, priced as at ``at``."""
        return self.rates(model, at).cost(tokens)


@functools.cache
def prices_of(configured: str | None) -> Prices:
    """The ``Prices`` of a configuration's ``HANGO_PRICES`` (built once per value)."""
    return Prices(configured)


def part_costs(rates: Rates, sizes: list[int], tokens: Tokens) -> list[Decimal | None]:
    """What each part (``sizes``: its tokens, in the order sent) cost on one call.

    The provider read the first ``cache_read`` tokens from the cache and wrote the next
    ``cache_write``; a part is priced at the rate of the stretch it lies in (split where it
    straddles two), the rest at the input price.
    """
    read_rate, write_rate, input_rate = (
        rates.per_token(kind) for kind in ("cache_read_mtok", "cache_write_mtok", "input_mtok")
    )
    if read_rate is None or write_rate is None or input_rate is None:
        return [None] * len(sizes)
    read_end = tokens.cache_read
    write_end = read_end + tokens.cache_write
    costs, start = [], 0
    for size in sizes:
        end = start + size
        if end <= read_end:  # most parts lie in one stretch: one product
            costs.append(size * read_rate)
        elif start >= write_end:
            costs.append(size * input_rate)
        else:
            read = max(0, read_end - start)
            write = max(0, min(end, write_end) - max(start, read_end))
            costs.append(read * read_rate + write * write_rate + (size - read - write) * input_rate)
        start = end
    return costs


def costs_by_part(rates: Rates, parts: Sequence[Any], tokens: Tokens) -> list[tuple[str, Decimal | None]]:
    """``part_costs`` of a call's sent parts (each with ``.part`` and ``.tokens``), by part id."""
    shares = part_costs(rates, [p.tokens for p in parts], tokens)
    return [(p.part, share) for p, share in zip(parts, shares, strict=True)]


def _table_rates(table_id: str, bare: str, at: dt.datetime) -> Rates:
    model = _table_model(table_id, bare)
    if model is None:
        return Rates(None, reason=f"{TABLE} has no price for {table_id} model {bare!r}")
    return Rates(model.get_prices(at), TABLE)


@functools.cache
def _table_model(table_id: str, bare: str) -> Any:
    try:
        return get_snapshot().find_provider_model(bare, None, table_id, None)[1]
    except LookupError:
        return None


def _priced(price: ModelPrice, tokens: Tokens) -> Decimal:
    usage = Usage(
        input_tokens=tokens.prompt,  # genai-prices counts the cache's tokens inside the input
        cache_read_tokens=tokens.cache_read,
        cache_write_tokens=tokens.cache_write,
        output_tokens=tokens.output,
    )
    return price.calc_price(usage)["total_price"]


def _model_price(rates: dict[str, float]) -> ModelPrice:
    return ModelPrice(**{key: Decimal(str(value)) for key, value in rates.items()})


def session_cost(rows: list[Any], prices: Prices) -> dict[str, Any]:
    """A session's cost so far from its usage rows (``Usage.of_session``): total, and per model.

    Calls the table cannot price are counted, not guessed: ``usd`` sums the priced ones.
    ``simulated_at`` names the reference model of the simulated calls among them (None: none is).
    """
    by_model: dict[str, dict[str, Any]] = {}
    reason = simulated = None
    for row in rows:
        model = f"{row.provider}/{row.model}"
        cost = prices.cost(
            model,
            Tokens.of(row._mapping),
            row.at,
        )
        entry = by_model.setdefault(
            model,
            {"model": model, "calls": 0, "usd": None, "reason": None, "simulated_at": cost.simulated_at},
        )
        entry["calls"] += row.calls
        simulated = simulated or cost.simulated_at
        if cost.usd is None:
            entry["reason"] = reason = cost.reason
        else:
            entry["usd"] = (entry["usd"] or Decimal(0)) + cost.usd * row.calls
    models = sorted(by_model.values(), key=lambda m: m["model"])
    priced = [m for m in models if m["usd"] is not None]
    return {
        "calls": sum(m["calls"] for m in models),
        "priced_calls": sum(m["calls"] for m in priced),
        "usd": float(sum(m["usd"] for m in priced)) if priced else None,
        "unpriced_reason": reason,
        "simulated_at": simulated,
        "by_model": [{**m, "usd": None if m["usd"] is None else float(m["usd"])} for m in models],
    }
