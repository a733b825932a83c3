"""How ``hango context suggest`` and ``hango context compact`` print the server's answers."""

from __future__ import annotations

from typing import Any

NO_SUGGESTIONS = "no suggestions: nothing in the next request looks like dead weight"


def render_suggestions(result: dict[str, Any]) -> list[str]:
    """The ranked list (one numbered line each, the reason under it), or what ``--apply`` did."""
    if "applied" in result:
        return _applied(result)
    items = result["suggestions"]
    if not items:
        return [NO_SUGGESTIONS]
    lines = []
    for number, item in enumerate(items, 1):
        parts = ", ".join(item["parts"]) or "(compaction)"
        lines.append(
            f"{number:>3}. {item['kind']:<17} saves {item['tokens_saved']:>6} tokens  "
            f"cache cost {item['cache_loss_tokens']:>6}  {item['target']:<7}  {parts}"
        )
        lines.append(f"     {item['reason']}")
    shown = len(items)
    total = result["total_after"]
    lines.append(f"{shown} of {result['count']} suggestions; the next request is {total} tokens")
    return lines


def _applied(result: dict[str, Any]) -> list[str]:
    item = result["applied"]
    if "compacted" in result:
        return render_compaction(result["compacted"])
    added = result["saved"].get("added", [])
    said = f"excluded {', '.join(item['parts'])} on the {item['target']}: saves {item['tokens_saved']} tokens"
    return [said] + ([f"pulled in as tool pair companions: {', '.join(added)}"] if added else [])


def render_compaction(result: dict[str, Any]) -> list[str]:
    first, last = result["summarize"]
    return [
        f"summarized messages {first}-{last} ({result['tokens_summarized']} tokens) into the session's summary",
        f"kept from message {result['keep_from']} ({result['tokens_kept']} tokens); stored messages are unchanged",
    ]
