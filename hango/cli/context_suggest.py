"""How ``hango context suggest`` and ``hango context compact`` print the server's answers."""

from __future__ import annotations

from typing import Any

from hango.cli.context_table import SAVED_FOR_AGENT, visible, wrap
from hango.cli.money import cache_cost, change_price

NOTHING_LOOKS_DEAD = "nothing in the next request looks like dead weight"
NO_SUGGESTIONS = f"no suggestions: {NOTHING_LOOKS_DEAD}"


def render_suggestions(result: dict[str, Any], width: int) -> list[str]:
    """The ranked list (a numbered line each, its parts and reason under it), or what ``--apply`` did."""
    if "applied" in result:
        return _applied(result, width)
    items = result["suggestions"]
    if not items:
        return [NO_SUGGESTIONS]
    lines = []
    for number, item in enumerate(items, 1):
        lines += wrap(
            f"{number}. {item['kind']} on the {item['target']}: saves {item['tokens_saved']} tokens, "
            f"{cache_cost(item['cache_loss_tokens'])}",
            width,
        )
        lines += wrap(change_price(item), width, "   ")
        lines += wrap(", ".join(item["parts"]) or "(compaction)", width, "   ")
        lines += wrap(visible(item["reason"]), width, "   ")
    shown = len(items)
    total = result["total_after"]
    lines += wrap(f"{shown} of {result['count']} suggestions; the next request is {total} tokens", width)
    simulated = items[0]["simulated_at"]
    return lines + (wrap(f"dollars simulated at {simulated} prices", width) if simulated else [])


def _applied(result: dict[str, Any], width: int) -> list[str]:
    item = result["applied"]
    if "compacted" in result:
        return render_compaction(result["compacted"], width)
    if "defer" in result:
        deferred = ", ".join(result["defer"]["tools"])
        said = f"deferred {', '.join(item['parts'])}: saves {item['tokens_saved']} tokens a call"
        return wrap(said, width) + wrap(f"the agent now defers {deferred} (tool_search reveals them)", width)
    added = result["saved"].get("added", [])
    said = f"excluded {', '.join(item['parts'])} on the {item['target']}: saves {item['tokens_saved']} tokens"
    pulled = f"pulled in as tool pair companions: {', '.join(added)}"
    scope = [line for text in result["scope"] for line in wrap(SAVED_FOR_AGENT.format(text), width)]
    return wrap(said, width) + (wrap(pulled, width) if added else []) + scope


def render_compaction(result: dict[str, Any], width: int) -> list[str]:
    first, last = result["summarize"]
    said = f"summarized messages {first}-{last} ({result['tokens_summarized']} tokens) into the session's summary"
    kept = (
        f"kept from message {result['keep_from']} ({result['tokens_kept']} tokens)"
        if result["keep_from"] is not None
        else "kept no message"
    ) + "; stored messages are unchanged"
    return wrap(said, width) + wrap(kept, width)
