"""A request with provenance: what the model wrappers work on before the provider sees it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hango.agent.parts import SourcedBlock, SourcedMessage
from hango.messages import Request, ToolDef


@dataclass(frozen=True)
class Draft:
    """The next model call: system blocks and messages carry their part ids, tools their names."""

    model: str
    system: tuple[SourcedBlock, ...]
    tools: tuple[ToolDef, ...]
    messages: tuple[SourcedMessage, ...]
    max_tokens: int = 4096

    def with_(self, **changes) -> Draft:
        return replace(self, **changes)

    def to_request(self, model: str | None = None) -> Request:
        """The provider-facing request: provenance stripped, nothing hango-specific left."""
        return Request(
            model=model or self.model,
            system=tuple(s.block for s in self.system),
            tools=self.tools,
            messages=tuple(m.message for m in self.messages),
            max_tokens=self.max_tokens,
        )
