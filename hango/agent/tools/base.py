"""The tool interface: a definition the model sees and an executor that runs on stored state."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from hango.agent.state import RunState
from hango.agent.types import ToolDef, ToolResultBlock, ToolUseBlock

if TYPE_CHECKING:
    from hango.agent.chain import Chain
    from hango.agent.deps import Deps
    from hango.store import TenantStore


class ToolFailure(Exception):
    """A tool could not do what was asked; the model receives the message as an error result."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool may touch: the run's tenant store (in the turn's transaction) and its state."""

    store: TenantStore
    state: RunState
    deps: Deps
    chain: Chain


@dataclass(frozen=True)
class Tool:
    definition: ToolDef
    execute: Callable[[dict[str, Any], ToolContext], str]

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
