"""The operator's catalog of stdio MCP servers: the only commands hango ever starts for a tenant.

``HANGO_MCP_CATALOG`` names a JSON file::

    {"servers": {"time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"],
                          "env": {"TZ": "UTC"}}}}

A tenant's owner adds a catalog server by its name; the command, its arguments
and its environment are the operator's alone, so no API call chooses a program.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from hango.config import Config, ConfigError

# single '_' between other characters only: the model knows a server's tool as ``<server>__<tool>``,
# so the first "__" of that name ends the server's, and no two servers' tools share a name
NAME = re.compile(r"^[a-z0-9][a-z0-9-]*(?:_[a-z0-9-]+)*$")
MAX_NAME = 32
NAME_RULE = (
    f"1-{MAX_NAME} lower-case letters, digits, '-' or '_', starting with a letter or digit, "
    "with no '__' and no '_' at the end"
)


def valid_name(name: str) -> bool:
    """Whether ``name`` may name an MCP server (``NAME_RULE``)."""
    return len(name) <= MAX_NAME and bool(NAME.match(name))


@dataclass(frozen=True)
class CatalogServer:
    """One stdio server the operator allows: the program, its arguments and its extra environment."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


def catalog_servers(config: Config) -> dict[str, CatalogServer]:
    """The operator's stdio MCP servers by name, read from ``HANGO_MCP_CATALOG`` (none without one); a
    malformed catalog is a ConfigError, which the app and every command meet at start."""
    try:
        return read_catalog(config.mcp_catalog)
    except ValueError as exc:
        raise ConfigError(f"HANGO_MCP_CATALOG={config.mcp_catalog}: {exc}") from None


def read_catalog(path: Path | None) -> dict[str, CatalogServer]:
    """The catalog's servers by name (none without a file); raises ValueError when it is malformed."""
    if path is None:
        return {}
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the catalog: {exc}") from None
    servers = document.get("servers") if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        raise ValueError('the catalog must be a JSON object {"servers": {name: {command, args, env}}}')
    return {name: _server(name, entry) for name, entry in servers.items()}


def _server(name: str, entry: object) -> CatalogServer:
    if not valid_name(name):
        raise ValueError(f"server name {name!r}: {NAME_RULE}")
    if not isinstance(entry, dict) or set(entry) - {"command", "args", "env"}:
        raise ValueError(f"server {name!r} must be an object of command, args and env")
    command, args, env = entry.get("command"), entry.get("args", []), entry.get("env", {})
    if not isinstance(command, str) or not command:
        raise ValueError(f"server {name!r} needs a command")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"server {name!r}: args must be a list of strings")
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ValueError(f"server {name!r}: env must map names to strings")
    return CatalogServer(name, command, tuple(args), dict(env))
