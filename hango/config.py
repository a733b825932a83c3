"""Typed configuration: code defaults, then ``HANGO_*`` environment, then a mapping from tests."""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from hango.cache_rules import CacheRules

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Config:
    database_url: str | None = None
    data_dir: Path = REPO_ROOT / ".hango"
    max_body_bytes: int = 2 * 1024 * 1024
    run_timeout: float = 300.0
    context_try_timeout: float = 120.0
    token_count_timeout: float = 5.0
    compact_trigger: float = 0.8
    suggest_large_result_tokens: int = 1_000
    suggest_old_turns: int = 10
    suggest_tool_window: int = 500
    suggest_tool_min_answers: int = 50
    max_turns: int = 12
    default_rate_limit: int = 600
    auth_failure_limit: int = 20
    trusted_proxies: str | None = None
    anthropic_base_url: str | None = None
    anthropic_api_key: str | None = None
    openai_base_url: str | None = None
    openai_api_key: str | None = None
    otlp_endpoint: str | None = None
    otlp_traces_endpoint: str | None = None
    otlp_metrics_endpoint: str | None = None
    traces_exporter: str = "otlp"  # OpenTelemetry's own switch: "none" exports no traces
    metrics_exporter: str = "otlp"  # "none" for a trace-only backend such as Arize Phoenix
    trace_project: str = "hango"
    call_ledger: bool = True
    cache_rules: str | None = None  # JSON by provider: {"anthropic": {"ttl_seconds": 300, ...}}
    prices: str | None = None  # JSON by model: {"anthropic/claude-x": {"input_mtok": 3, ...}}
    check_schema: bool = True
    worker_concurrency: int = 4  # runs one worker process works on at once
    queue_headroom: int = 0  # of those, slots kept for tenants with nothing running (``hango.worker``)
    job_queue: str = "runs"  # the procrastinate queue the web defers to and the workers take from
    max_runs_per_member: int = 8  # runs queued or running per member (0: no cap)
    max_runs_per_tenant: int = 32  # and per tenant
    reaper_interval: int = 10  # seconds between the periodic reaper's passes (divides 60)
    worker_heartbeat: float = 5.0  # a worker silent for 3 heartbeats is dead: its jobs are failed
    secret_key: str | None = None  # encrypts the MCP servers' header secrets at rest
    mcp_catalog: Path | None = None  # the operator's stdio MCP servers (``docs/learning/mcp-tools.md``)
    mcp_allow_networks: str | None = None  # networks an MCP URL may reach beyond the public internet
    mcp_connect_timeout: float = 10.0  # seconds to reach an MCP server and start its session
    mcp_call_timeout: float = 30.0  # seconds for one tools/list or tools/call answer
    # seconds for a whole listing at attach or refresh (connect and every page): under gunicorn's 30 s
    mcp_list_timeout: float = 20.0
    mcp_max_answer_bytes: int = 1_000_000  # the largest answer read from an MCP server
    mcp_pool_idle_seconds: float = 300.0  # a worker closes an MCP connection no call used for this long
    mcp_pool_max: int = 32  # MCP connections (stdio processes) one worker process holds at most

    def __post_init__(self) -> None:
        self.proxy_networks  # noqa: B018 - a bad address fails here, at start, not on a request
        self.mcp_networks  # noqa: B018

    @property
    def proxy_networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        """The proxies of ``HANGO_TRUSTED_PROXIES`` (addresses or networks, comma-separated)."""
        return _networks("HANGO_TRUSTED_PROXIES", self.trusted_proxies)

    @property
    def mcp_networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        """The networks of ``HANGO_MCP_ALLOW_NETWORKS`` an MCP server's URL may resolve into."""
        return _networks("HANGO_MCP_ALLOW_NETWORKS", self.mcp_allow_networks)

    @property
    def worker_timeout(self) -> int:
        """Gunicorn's worker timeout: above both the run and the try deadline."""
        return int(max(self.run_timeout, self.context_try_timeout)) + 30


def _networks(var: str, raw: str | None) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The comma-separated addresses or networks of ``var``; a bad one is a ConfigError."""
    entries = [part.strip() for part in (raw or "").split(",") if part.strip()]
    try:
        return [ipaddress.ip_network(entry) for entry in entries]
    except ValueError as exc:
        raise ConfigError(f"{var}={raw!r}: {exc}") from exc


_ENV = {
    "database_url": "HANGO_DATABASE_URL",
    "data_dir": "HANGO_DATA_DIR",
    "max_body_bytes": "HANGO_MAX_BODY_BYTES",
    "run_timeout": "HANGO_RUN_TIMEOUT",
    "context_try_timeout": "HANGO_CONTEXT_TRY_TIMEOUT",
    "token_count_timeout": "HANGO_TOKEN_COUNT_TIMEOUT",
    "compact_trigger": "HANGO_COMPACT_TRIGGER",
    "suggest_large_result_tokens": "HANGO_SUGGEST_LARGE_RESULT_TOKENS",
    "suggest_old_turns": "HANGO_SUGGEST_OLD_TURNS",
    "suggest_tool_window": "HANGO_SUGGEST_TOOL_WINDOW",
    "suggest_tool_min_answers": "HANGO_SUGGEST_TOOL_MIN_ANSWERS",
    "max_turns": "HANGO_MAX_TURNS",
    "default_rate_limit": "HANGO_DEFAULT_RATE_LIMIT",
    "auth_failure_limit": "HANGO_AUTH_FAILURE_LIMIT",
    "trusted_proxies": "HANGO_TRUSTED_PROXIES",
    "anthropic_base_url": "HANGO_ANTHROPIC_BASE_URL",
    "anthropic_api_key": "ANTHROPIC_API_KEY",
    "openai_base_url": "HANGO_OPENAI_BASE_URL",
    "openai_api_key": "OPENAI_API_KEY",
    "otlp_endpoint": "OTEL_EXPORTER_OTLP_ENDPOINT",
    "otlp_traces_endpoint": "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "otlp_metrics_endpoint": "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "traces_exporter": "OTEL_TRACES_EXPORTER",
    "metrics_exporter": "OTEL_METRICS_EXPORTER",
    "trace_project": "HANGO_TRACE_PROJECT",
    "call_ledger": "HANGO_CALL_LEDGER",
    "cache_rules": "HANGO_CACHE_RULES",
    "worker_concurrency": "HANGO_WORKER_CONCURRENCY",
    "queue_headroom": "HANGO_QUEUE_HEADROOM",
    "job_queue": "HANGO_JOB_QUEUE",
    "max_runs_per_member": "HANGO_MAX_RUNS_PER_MEMBER",
    "max_runs_per_tenant": "HANGO_MAX_RUNS_PER_TENANT",
    "reaper_interval": "HANGO_REAPER_INTERVAL",
    "worker_heartbeat": "HANGO_WORKER_HEARTBEAT",
    "prices": "HANGO_PRICES",
    "secret_key": "HANGO_SECRET_KEY",
    "mcp_catalog": "HANGO_MCP_CATALOG",
    "mcp_allow_networks": "HANGO_MCP_ALLOW_NETWORKS",
    "mcp_connect_timeout": "HANGO_MCP_CONNECT_TIMEOUT",
    "mcp_call_timeout": "HANGO_MCP_CALL_TIMEOUT",
    "mcp_list_timeout": "HANGO_MCP_LIST_TIMEOUT",
    "mcp_max_answer_bytes": "HANGO_MCP_MAX_ANSWER_BYTES",
    "mcp_pool_idle_seconds": "HANGO_MCP_POOL_IDLE_SECONDS",
    "mcp_pool_max": "HANGO_MCP_POOL_MAX",
}


class ConfigError(ValueError):
    """A configuration value that cannot be parsed."""


def _parse(name: str, kind: Any, raw: str) -> Any:
    try:
        if kind in ("int", int):
            return int(raw)
        if kind in ("float", float):
            return float(raw)
        if kind in ("Path", Path):
            return Path(raw).expanduser().resolve()
        if kind in ("bool", bool):
            return raw.strip().lower() in ("1", "true", "yes", "on")
    except ValueError as exc:
        raise ConfigError(f"{_ENV.get(name, name)}={raw!r} is not a valid {kind}") from exc
    return raw or None


def load_config(env: Mapping[str, str] | None = None, overrides: Mapping[str, Any] | None = None) -> Config:
    """Build the configuration from defaults, the environment and explicit overrides."""
    env = os.environ if env is None else env
    kinds = {f.name: f.type for f in fields(Config)}
    values: dict[str, Any] = {}
    for name, var in _ENV.items():
        if env.get(var):
            kind = str(kinds[name]).split(" | ")[0]
            values[name] = _parse(name, kind, env[var])
    config = replace(replace(Config(), **values), **dict(overrides or {}))
    _check_cache_rules(config.cache_rules)
    _check_prices(config.prices)
    return config


def _check_prices(raw: str | None) -> None:
    """Refuse ``HANGO_PRICES`` unless it maps models to known price keys (at start, not on a request)."""
    try:
        parse_prices(raw)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


PRICE_KEYS = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")


def parse_prices(raw: str | None) -> dict[str, dict[str, float]]:
    """``HANGO_PRICES`` as a mapping of models to price keys; raises ValueError when malformed."""
    if raw is None:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not all(_valid_rates(rates) for rates in parsed.values()):
        keys = ", ".join(PRICE_KEYS)
        raise ValueError(
            "HANGO_PRICES must be a JSON object of <provider>/<model> to objects of "
            f"{keys} (USD per million tokens, non-negative numbers)"
        )
    return parsed


def _valid_rates(rates: Any) -> bool:
    return (
        isinstance(rates, dict)
        and set(rates) <= set(PRICE_KEYS)
        and all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in rates.values())
    )


CACHE_RULE_KEYS = frozenset(CacheRules.CONFIGURABLE)


def _check_cache_rules(raw: str | None) -> None:
    """Refuse ``HANGO_CACHE_RULES`` unless it maps provider names to objects of known rule keys."""
    if raw is None:
        return
    try:
        rules = json.loads(raw)
    except ValueError:
        rules = None
    if not isinstance(rules, dict) or not all(
        isinstance(rule, dict) and set(rule) <= CACHE_RULE_KEYS for rule in rules.values()
    ):
        keys = ", ".join(sorted(CACHE_RULE_KEYS))
        raise ConfigError(f"HANGO_CACHE_RULES must be a JSON object of providers to objects of {keys}")
