"""The inspect benchmark's report: p50/p95 per measure, the targets, one Markdown table, the raw JSON."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from hango.config import REPO_ROOT
from scripts.bench.doc_tables import DOC, write_table
from scripts.bench.history import Session, median_chars, tool_share

SIZES = (100, 1_000, 10_000)
LARGE = 50_000  # the 10,000 session's messages five times over: inspected only, paired with the 10,000 one
LARGE_PARTNER = "inspect 10000 (50k pairs)"
# The 50,000 session's inspect answer before issue 28's round (512c6d6), per message: it must not grow.
BYTES_PER_MESSAGE_BEFORE = 27_873_047 / LARGE
# The offline provider's own time on the try's request, one sample per try pair (``try_phase``).
PROVIDER = "offline provider 1000 (in-process)"
# Each measure and the one it was interleaved with, request by request: the table shows the median of
# their pairs' ratios.
PARTNERS = {
    **{f"inspect {n}": f"baseline {n}" for n in SIZES},
    "put 1000": "inspect 1000 (put pairs)",
    "inspect 1000 with 100 parts excluded": "inspect 1000 (excluded pairs)",
    "try 1000": "inspect 1000 (try pairs)",
    f"inspect {LARGE}": LARGE_PARTNER,
    "inspect compacted": "inspect 1000 (compacted pairs)",
    "run compacted": "run 1000",
}


def p50(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def p95(xs: Sequence[float]) -> float:
    return statistics.quantiles(xs, n=20, method="inclusive")[18] if len(xs) > 1 else xs[0]


@dataclass(frozen=True)
class Target:
    name: str
    value: float
    limit: float
    op: str = "≤"  # the value must be at most (≤), under (<) or at least (≥) the limit

    @property
    def ok(self) -> bool:
        return {"≤": self.value <= self.limit, "<": self.value < self.limit, "≥": self.value >= self.limit}[
            self.op
        ]


def paired(samples: dict[str, list[float]], name: str, partner: str, minus: str | None = None) -> float:
    """The median over the pairs of ``name``'s request ÷ its ``partner``'s (``minus``: each pair's sample of
    that measure taken off ``name``'s first).

    Pairs are interleaved so that drift hits both sides alike; a ratio taken pair by pair keeps that,
    where a ratio of the two medians does not: when the machine changes speed halfway through a phase,
    each median can fall in another half.
    """
    taken = samples[minus] if minus else [0.0] * len(samples[name])
    return p50([(a - m) / b for a, b, m in zip(samples[name], samples[partner], taken, strict=True)])


def per_message_us(results: dict[str, Any]) -> dict[str, float]:
    """The p50 cost of an inspect per message (µs) at 10,000 and 50,000, from their interleaved pairs."""
    samples = results["samples_ms"]
    return {
        "10000": p50(samples[LARGE_PARTNER]) * 1000 / 10_000,
        str(LARGE): p50(samples[f"inspect {LARGE}"]) * 1000 / LARGE,
    }


def targets(results: dict[str, Any]) -> list[Target]:
    samples = results["samples_ms"]
    s = {name: p50(xs) for name, xs in samples.items()}

    def ratio(name: str, minus: str | None = None) -> float:
        return paired(samples, name, PARTNERS[name], minus)

    return [
        Target("inspect / baseline at 1,000", ratio("inspect 1000"), 0.8),
        Target("inspect / baseline at 10,000", ratio("inspect 10000"), 0.7),
        Target("inspect(10k) / inspect(1k)", s["inspect 10000"] / s["inspect 1000"], 11),
        Target("inspect per message, 50,000 / 10,000", ratio(f"inspect {LARGE}") * 10_000 / LARGE, 1.1),
        Target(
            "inspect answer at 50,000, bytes per message",
            results["response_bytes"][str(LARGE)] / LARGE,
            BYTES_PER_MESSAGE_BEFORE,
        ),
        Target("inspect compacted / inspect at 1,000", ratio("inspect compacted"), 1.2),
        Target("run compacted / run at 1,000", ratio("run compacted"), 1.2),
        Target("PUT 100 parts / inspect at 1,000", ratio("put 1000"), 2),
        Target("try overhead / inspect at 1,000", ratio("try 1000", minus=PROVIDER), 1.1),
        Target("throughput inspect / baseline, 8 clients", p50(results["concurrency"]["ratios"]), 1.2, "≥"),
        Target("errors", sum(results["errors"].values()) + len(results["problems"]), 0),
        Target("RSS growth over the inspects, MB", results["rss"]["growth_mb"], 20, "<"),
    ]


def render(results: dict[str, Any], checks: list[Target]) -> str:
    """The latency rows, then the target rows, as one Markdown table."""
    lines = [
        "| measure | n | p50 ms | p95 ms | ratio / value | target | ok |",
        "|---|---:|---:|---:|---:|---:|:-:|",
    ]
    samples = results["samples_ms"]
    for name, xs in samples.items():
        partner = PARTNERS.get(name)
        ratio = f"{paired(samples, name, partner):.2f} × {partner}" if partner in samples else ""
        lines.append(f"| {name} | {len(xs)} | {p50(xs):.1f} | {p95(xs):.1f} | {ratio} | | |")
    c = results["concurrency"]
    for kind, rates in c["throughput"].items():
        windows = f"{len(rates)} × {c['window_seconds']:g} s"
        lines.append(
            f"| {kind} 1000, {c['clients']} clients, {windows}: throughput | | | | {p50(rates):.1f} req/s | | |"
        )
    for t in checks:
        lines.append(f"| **{t.name}** | | | | {t.value:.2f} | {t.op} {t.limit:g} | {'✓' if t.ok else '✗'} |")
    per_message, sizes = per_message_us(results), results["response_bytes"]
    lines.append(
        f"\nper message: inspect {per_message['10000']:.1f} µs at 10,000, {per_message[str(LARGE)]:.1f} µs at "
        f"{LARGE:,} (interleaved pairs); the answer {sizes['10000'] / 10_000:.0f} bytes per message at 10,000, "
        f"{sizes[str(LARGE)] / LARGE:.0f} at {LARGE:,}"
    )
    loads = [m["load"][0] for m in results["load"]]
    start, end = results["load"][0]["load"], results["load"][-1]["load"]
    lines.append(
        f"load average (1, 5, 15 min): {start} at the start, {end} at the end; "
        f"1 min between {min(loads):.2f} and {max(loads):.2f} at the phases' ends"
    )
    return "\n".join(lines)


@dataclass
class Load:
    """The machine's load averages (1, 5 and 15 minutes, as ``uptime`` prints them) as phases end."""

    marks: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.mark("start")

    def mark(self, phase: str) -> None:
        self.marks.append({"phase": phase, "load": [round(x, 2) for x in os.getloadavg()]})


def machine() -> dict[str, Any]:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "")
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu or platform.processor(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
    }


def conclude(name: str, results: dict[str, Any], checks: list[Target], table: str, args: Any) -> int:
    """Print ``table``, write the raw figures (and, with ``--write-doc``, the document's ``name`` table).

    The exit code: 1 when a request failed or (unless ``--no-timing-asserts``) a target is missed.
    """
    results["targets"] = [asdict(t) | {"ok": t.ok} for t in checks]
    print(table)
    print(f"\nraw figures: {write(args.out, results, name)}")
    if args.write_doc:
        write_table(name, table)
        print(f"written into {DOC.relative_to(REPO_ROOT)} between its bench:{name} markers")
    failed = [t for t in checks if not t.ok and (t.name == "errors" or not args.no_timing_asserts)]
    return 1 if failed else 0


def write(out: Path, results: dict[str, Any], name: str = "inspect") -> Path:
    """The raw figures as ``out/<name>-<time>.json``."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(json.dumps(results, indent=1, default=str))
    return path


def describe(sessions: dict[str, Session]) -> dict[str, Any]:
    return {
        key: {
            "messages": s.messages,
            "visible": s.visible,
            "tool_share": tool_share(s.history),
            "median_chars": median_chars(s.history),
        }
        for key, s in sessions.items()
    }
