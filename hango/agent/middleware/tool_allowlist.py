"""The last slot: only the tools the call's toolset sends (``hango.agent.toolset``) are sent."""

from __future__ import annotations

from dataclasses import replace

from hango.agent.draft import Draft
from hango.agent.estimator import estimate_tool
from hango.agent.middleware.base import Middleware, ModelHandler
from hango.agent.parts import part_of
from hango.agent.report import DEFERRED, OVERRIDDEN, LeftOut
from hango.agent.state import RunState
from hango.agent.toolset import toolset_of
from hango.messages import Response, referenced_tools


class ToolAllowlistMiddleware(Middleware):
    """Innermost of the stack, so no middleware after it can add a tool back (an excluded one included)."""

    name = "tool_allowlist"

    def wrap_model_call(self, draft: Draft, state: RunState, call_next: ModelHandler) -> Response:
        tools = draft.report.toolset or toolset_of(state.agent, state)  # the call's, made with its draft
        excluded = tools.left_out(draft.tools)
        left_out = LeftOut(
            self.name,
            OVERRIDDEN,
            tuple(part_of(t) for t in excluded),
            sum(estimate_tool(t) for t in excluded),
        )
        sent = tools.in_sending_order(draft.tools)
        report = draft.report.leaving_out(left_out)
        if tools.deferred:  # not input until a search reveals them (no override's doing)
            deferred = tools.deferred_of(draft.tools)
            parts = tuple(part_of(t) for t in deferred)
            entry = LeftOut(self.name, DEFERRED, parts, sum(estimate_tool(t) for t in deferred))
            report = replace(report.leaving_out(entry), deferred=deferred)
        if state.overrides:  # the enabled tools before the tool overrides, for the inspector
            report = report.keeping(tools=tools.unoverridden().in_sending_order(draft.tools))
        # a native deferral's tools, sent marked deferred (a revealed one while its search result is sent)
        referenced = referenced_tools(m.message for m in draft.messages) if tools.native else frozenset()
        deferred_wire = tools.sent_deferred(draft.tools, referenced)
        return call_next(draft.with_(tools=sent, sent_deferred=deferred_wire, report=report))
