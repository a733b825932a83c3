"""Suggestions measured, not added up: each one's saving and cache price from the request with it applied.

Leaving a part out can change other parts (dropping ``tool:grep`` rewrites
``system:filesystem``; dropping ``tool:task`` drops ``system:subagent``), so a
sum of the dropped parts' tokens is not what applying a suggestion saves. Here
the request is assembled again through the chain with the suggestion's
overrides added to the stored ones: ``tokens_saved`` is the estimated total
before minus after, so applying it changes inspect's (estimated) total by
exactly that; ``cache_loss_tokens`` is the one cache model's price of the change
(``change_cache_loss``), the figure the preview gives for saving it.
"""

from __future__ import annotations

import dataclasses

from hango.agent.assembly import capture
from hango.agent.estimator import estimate_request
from hango.agent.ledger.record import sent_call
from hango.agent.ledger.verdict import Outlook, change_cache_loss
from hango.agent.overrides import EXCLUDE, Override, Overrides
from hango.inspector.inspection import Assembly
from hango.inspector.suggestions import Suggestion


def applied(overrides: Overrides, suggestion: Suggestion) -> Overrides:
    """The stored overrides with ``suggestion``'s exclusions added on its route."""
    added = {p: Override(p, EXCLUDE) for p in suggestion.parts}
    if suggestion.target == "agent":
        return Overrides({**overrides.agent, **added}, overrides.session)
    return Overrides(overrides.agent, {**overrides.session, **added})


def measured(assembly: Assembly, ahead: Outlook, found: list[Suggestion]) -> list[Suggestion]:
    """``found`` with each override suggestion's saving and cache price (by ``ahead``) measured on the applied
    request."""
    base = assembly.captured
    before = estimate_request(base.to_request())
    base_call = sent_call(base)
    out = []
    for suggestion in found:
        if not suggestion.parts:  # would_compact: priced by its compaction preview
            out.append(suggestion)
            continue
        state = dataclasses.replace(assembly.state, overrides=applied(assembly.state.overrides, suggestion))
        after = capture(assembly.chain, state)
        loss = change_cache_loss(base_call, sent_call(after), ahead)
        saved = before - estimate_request(after.to_request())
        out.append(dataclasses.replace(suggestion, tokens_saved=saved, cache_loss_tokens=loss))
    return out
