"""A request with provenance: what the model wrappers work on before the provider sees it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hango.agent.parts import SourcedBlock, SourcedMessage
from hango.agent.report import NOTHING, Report
from hango.messages import Request, ToolDef

NATIVE_SEARCH = "bm25"  # the provider's search a native deferral sends (Anthropic's BM25 tool search)


@dataclass(frozen=True)
class Draft:
    """The next model call: system blocks and messages carry their part ids, tools their names.

    ``report`` is what the slots did to it so far (what each left out and why, compaction): it is
    no part of the request, so two drafts that send the same request are equal whatever their reports.
    """

    model: str
    system: tuple[SourcedBlock, ...]
    tools: tuple[ToolDef, ...]
    messages: tuple[SourcedMessage, ...]
    max_tokens: int = 4096
    # a native deferral's tools, marked deferred (``Toolset.sent_deferred``): sent after the loaded ones
    # with the provider's search; ``tools`` keeps the ones the call counts as input (the revealed ones)
    sent_deferred: tuple[ToolDef, ...] = ()
    report: Report = field(default=NOTHING, compare=False, repr=False)

    def with_(self, **changes) -> Draft:
        return replace(self, **changes)

    def unoverridden(self) -> Draft:
        """This call as it would be without its overrides, from what the slots applying them kept
        (``Report.unoverridden``): itself when it has none."""
        kept = self.report.unoverridden
        if kept is None:
            return self
        return replace(
            self,
            system=self.system if kept.system is None else kept.system,
            tools=self.tools if kept.tools is None else kept.tools,
            messages=self.messages if kept.messages is None else kept.messages,
        )

    @property
    def every_tool(self) -> tuple[ToolDef, ...]:
        """Its tools, then the deferred ones it does not send (``Report.deferred``): every tool part."""
        return (*self.tools, *self.report.deferred) if self.report.deferred else self.tools

    def to_request(self, model: str | None = None) -> Request:
        """The provider-facing request: provenance stripped, nothing hango-specific left."""
        return Request(
            model=model or self.model,
            system=tuple(s.block for s in self.system),
            tools=self._wire_tools(),
            messages=tuple(m.message for m in self.messages),
            max_tokens=self.max_tokens,
            tool_search=NATIVE_SEARCH if self.sent_deferred else None,
        )

    def _wire_tools(self) -> tuple[ToolDef, ...]:
        """The tools as sent: the loaded ones, then a native deferral's marked deferred."""
        if not self.sent_deferred:
            return self.tools
        deferred = {t.name for t in self.sent_deferred}
        return (*(t for t in self.tools if t.name not in deferred), *self.sent_deferred)
