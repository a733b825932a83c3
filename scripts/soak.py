"""The reliability suite as a soak: the same tests as CI, with more examples and a longer load.

    .venv/bin/python scripts/soak.py                  # about 15 minutes
    .venv/bin/python scripts/soak.py --load-seconds 60 --fuzz-examples 20 --property-examples 200

Everything runs on this machine, against loopback only (gunicorn, PostgreSQL and the
fake provider the tests start), with bounded counts and durations. The figures of the
run (requests, examples, faults, bad inputs, invalid requests) are written as JSON to
``--figures`` and printed; ``docs/reliability.md`` explains them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load-seconds", type=float, default=300, help="mixed load per run (CI: 8)")
    parser.add_argument(
        "--fuzz-examples", type=int, default=40, help="schemathesis examples per operation (CI: 5)"
    )
    parser.add_argument("--property-examples", type=int, default=600, help="examples per property (CI: 60)")
    parser.add_argument("--figures", type=Path, default=ROOT / ".hango" / "reliability-figures.json")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tests/reliability`` with the soak's sizes; print the figures; exit with pytest's code."""
    args = parse(argv)
    args.figures.parent.mkdir(parents=True, exist_ok=True)
    args.figures.unlink(missing_ok=True)
    env = {
        **os.environ,
        "HANGO_SOAK_SECONDS": str(args.load_seconds),
        "HANGO_FUZZ_EXAMPLES": str(args.fuzz_examples),
        "HANGO_PROPERTY_EXAMPLES": str(args.property_examples),
        "HANGO_RELIABILITY_FIGURES": str(args.figures),
    }
    command = [sys.executable, "-m", "pytest", "tests/reliability", "-q", "-p", "no:cacheprovider"]
    code = subprocess.call(command, cwd=ROOT, env=env)
    if args.figures.exists():
        print(json.dumps(json.loads(args.figures.read_text()), indent=2))
    return code


if __name__ == "__main__":
    sys.exit(main())
