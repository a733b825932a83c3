"""The prompt-cache slot: sets hango's breakpoints (``hango/agent/cache_breakpoints.py``) on every call."""

from __future__ import annotations

from hango.agent.cache_breakpoints import with_breakpoints
from hango.agent.draft import Draft
from hango.agent.middleware.base import Middleware, ModelHandler
from hango.agent.state import RunState
from hango.messages import Response


class PromptCacheMiddleware(Middleware):
    name = "prompt_cache"

    def wrap_model_call(self, draft: Draft, state: RunState, call_next: ModelHandler) -> Response:
        report = draft.report
        if report.unoverridden is not None:  # the call before its overrides, with the marks it would carry
            whole = with_breakpoints(draft.unoverridden())
            report = report.keeping(system=whole.system, messages=whole.messages)
        return call_next(with_breakpoints(draft.with_(report=report)))
