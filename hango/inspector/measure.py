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
from hango.agent.deps import Deps
from hango.agent.estimator import estimate_request
from hango.agent.ledger.record import sent_call
from hango.agent.ledger.verdict import change_cache_loss, rules_for
from hango.agent.overrides import EXCLUDE, Override, Overrides
from hango.inspector.inspection import Assembly
from hango.inspector.suggestions import Suggestion
from hango.providers import split_model


def applied(overrides: Overrides, suggestion: Suggestion) -> Overrides:
    """The stored overrides with ``suggestion``'s exclusions added on its route."""
    added = {p: Override(p, EXCLUDE) for p in suggestion.parts}
    if suggestion.target == "agent":
        return Overrides({**overrides.agent, **added}, overrides.session)
    return Overrides(overrides.agent, {**overrides.session, **added})


def measured(assembly: Assembly, deps: Deps, found: list[Suggestion]) -> list[Suggestion]:
    """``found`` with each override suggestion's saving and cache price measured on the applied request."""
    base = assembly.captured
    before = estimate_request(base.to_request())
    provider, model = split_model(base.model)
    rules = rules_for(provider, deps.config.cache_rules)
    base_call = sent_call(base) if rules.enabled else None
    out = []
    for suggestion in found:
        if not suggestion.parts:  # would_compact: priced by its compaction preview
            out.append(suggestion)
            continue
        state = dataclasses.replace(assembly.state, overrides=applied(assembly.state.overrides, suggestion))
        after = capture(assembly.chain, state)
        loss = (
            0
            if base_call is None
            else change_cache_loss(base_call, sent_call(after), rules.minimum_for(model))
        )
        saved = before - estimate_request(after.to_request())
        out.append(dataclasses.replace(suggestion, tokens_saved=saved, cache_loss_tokens=loss))
    return out
