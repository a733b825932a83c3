"""The tool interface: a definition the model sees and an executor that runs on stored state."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import jsonschema_rs

from hango.agent.draft import Draft
from hango.agent.state import RunState, ToolCall
from hango.messages import Response, ToolDef, ToolResultBlock, ToolUseBlock

if TYPE_CHECKING:
    from hango.agent.deps import Deps
    from hango.store import TenantStore


class ToolFailure(Exception):
    """A tool could not do what was asked; the model receives the message as an error result."""


class ToolChain(Protocol):
    """What a tool that drives model turns (the subagent) needs of the chain; ``Chain`` is one.

    A protocol, so this module need not import ``hango.agent.chain`` (which imports the
    middleware, which import the tools): the three modules form no circle.
    """

    def draft(self, state: RunState, max_tokens: int = 4096) -> Draft: ...

    def tools(self, state: RunState) -> dict[str, Tool]: ...

    def call_model(self, draft: Draft, state: RunState, handler: Callable[[Draft], Response]) -> Response: ...

    def call_tool(
        self, call: ToolCall, state: RunState, handler: Callable[[ToolCall], ToolResultBlock]
    ) -> ToolResultBlock: ...


@dataclass(frozen=True)
class ToolContext:
    """What a tool may touch: the run's tenant store (in the turn's transaction) and its state."""

    store: TenantStore
    state: RunState
    deps: Deps
    chain: ToolChain


@dataclass(frozen=True)
class PathUse:
    """What a file tool does with the path it is given: the rules about stale results read this.

    ``access`` is ``read`` (a file's contents), ``list`` (a folder's entries),
    ``search`` (the contents of the files under a folder), ``write`` (creates or
    replaces a file) or ``edit`` (changes a file). ``default`` is the path when
    the argument is left out.
    """

    access: str
    argument: str = "path"
    default: str | None = None

    @property
    def reads(self) -> bool:
        return self.access in ("read", "list", "search")

    @property
    def writes(self) -> bool:
        return self.access in ("write", "edit")


@dataclass(frozen=True)
class Tool:
    definition: ToolDef
    execute: Callable[[dict[str, Any], ToolContext], str]
    paths: PathUse | None = None  # set on the tools that read or write files

    @property
    def name(self) -> str:
        return self.definition.name


def run_tool(tool: Tool | None, use: ToolUseBlock, ctx: ToolContext) -> ToolResultBlock:
    """Validate the input against the tool's schema, run it, and turn failures into error results."""
    if tool is None:
        return _error(use, f"unknown tool {use.name!r}")
    problems = [
        e.message for e in jsonschema_rs.validator_for(tool.definition.input_schema).iter_errors(use.input)
    ]
    if problems:
        return _error(use, f"invalid arguments for {use.name}: " + "; ".join(problems))
    ctx.state.check_deadline()  # no tool starts past the run's deadline; the long ones check on as they work
    try:
        return ToolResultBlock(tool_use_id=use.id, content=tool.execute(use.input, ctx))
    except ToolFailure as exc:
        return _error(use, str(exc))


def _error(use: ToolUseBlock, message: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=use.id, content=message, is_error=True)


def schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A closed JSON Schema object with ``properties``."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
