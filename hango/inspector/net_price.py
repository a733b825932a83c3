"""A change's net price: what leaving parts out saves on every call, what it writes again once, when it pays.

The one rule behind every suggestion's and the preview's price, by the one cache model
(``hango/agent/ledger/verdict.py``):

- **saved per call**: ``tokens_saved`` no longer sent. With a provider that caches, those
  parts would have been read from the cache on every later call, so the money is at the
  cache-read price; without a cache, at the input price.
- **written again, once**: ``cache_loss_tokens``, the next call's expected read without the
  change less the one with it, both against the prefixes the provider holds (the previous
  call, within the lifetime; ``change_cache_loss``); a part left out is saved, not lost. The
  next call writes them instead of reading them: the money is the cache-write price less the
  cache-read price. Negative when the change restores cache (the next call reads what it would
  otherwise write again): a gain, in tokens and money alike.
- **break-even**: the calls it takes for the saving to pay the one write,
  ``ceil(usd_cache_loss / usd_saved_per_call)``: 0 when nothing is written again (or the change
  gains cache), null when it never pays (nothing saved) or a price is unknown.

A simulated price (the ``offline`` provider's) names its reference model in ``simulated_at``.
"""

from __future__ import annotations

import math
from typing import Any

from hango.agent.ledger.verdict import Outlook
from hango.providers.prices import Rates


def net_price(tokens_saved: int, cache_loss_tokens: int, rates: Rates, ahead: Outlook) -> dict[str, Any]:
    """``usd_saved_per_call``, ``usd_cache_loss``, ``break_even_calls`` and ``simulated_at`` of a change, by ``ahead``."""
    per_call = "input_mtok" if ahead.state == "none" else "cache_read_mtok"
    saved = rates.usd(tokens_saved, per_call)
    loss = rates.usd(cache_loss_tokens, "cache_write_mtok", "cache_read_mtok")
    return {
        "usd_saved_per_call": saved,
        "usd_cache_loss": loss,
        "break_even_calls": break_even_calls(saved, loss),
        "simulated_at": rates.simulated_at,
    }


def break_even_calls(saved: float | None, loss: float | None) -> int | None:
    """The calls after which ``saved`` a call has paid ``loss`` once; 0 for no loss, None when it never pays."""
    if saved is None or loss is None:
        return None
    if loss <= 0:
        return 0
    return math.ceil(loss / saved) if saved > 0 else None
