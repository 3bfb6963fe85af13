#!/usr/bin/env python3
"""croniter (PyPI `croniter` 7.0.0) as a peer of TimerKit's cron benchmark: the cost of one next occurrence.

    python3 bench.py [--runs 5] [--zone Europe/Berlin] [--start 2026-01-01T00:00] [--quick]

For each expression, --runs times: a croniter on it from --start (a zoneinfo-aware datetime in --zone),
then N successive `get_next(float)` calls timed together with `time.perf_counter_ns`; one run's figure
is that time / N. Before the timed runs, one untimed run of N/10 calls warms the interpreter up.
Construction (parsing) is not timed. Prints one JSON object on stdout:

    {"peer": "croniter 7.0.0", "zone": "Europe/Berlin", "start": "2026-01-01T00:00:00+01:00", "runs": 5,
     "python": "3.11.7",
     "expressions": {"* * * * *": {"median_ns": ..., "min_ns": ..., "max_ns": ..., "occurrences": 10000,
                                   "croniter": "* * * * *"}, ...}}

Keys are TimerKit's spelling of each expression; "croniter" is what croniter was given (TimerKit's
last-weekday `5L` is croniter's `L5`). median/min/max are over the runs, in ns per get_next.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import datetime
from importlib import metadata
from zoneinfo import ZoneInfo

try:
    from croniter import croniter
except ImportError:  # pragma: no cover - a message instead of a traceback
    sys.exit(
        "croniter is not installed for this Python; see Benchmarks/peers/croniter/README.md "
        "(python3 -m venv DIR && DIR/bin/pip install -r Benchmarks/peers/croniter/requirements.txt)"
    )

# (TimerKit's spelling, croniter's, successive occurrences per run)
EXPRESSIONS = [
    ("* * * * *", "* * * * *", 10_000),  # dense: every minute, 10,000 = ~7 days
    ("0 0 29 2 *", "0 0 29 2 *", 200),  # sparse: leap days, 200 = ~800 years
    ("0 9 * * 5L", "0 9 * * L5", 10_000),  # last Friday of the month, ~833 years
    ("0 9 * * 1#1", "0 9 * * 1#1", 10_000),  # first Monday of the month, ~833 years
]


def log(msg: str) -> None:
    print(f"[croniter-peer] {msg}", file=sys.stderr, flush=True)


def per_call_ns(expr: str, start: datetime, n: int) -> float:
    it = croniter(expr, start)
    get_next = it.get_next
    t0 = time.perf_counter_ns()
    for _ in range(n):
        get_next(float)
    return (time.perf_counter_ns() - t0) / n


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per expression (default %(default)s)")
    parser.add_argument("--zone", default="Europe/Berlin", help="IANA zone (default %(default)s)")
    parser.add_argument(
        "--start", default="2026-01-01T00:00", help="local start, ISO 8601 without offset (default %(default)s)"
    )
    parser.add_argument("--quick", action="store_true", help="a tenth of the occurrences (a smoke test)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")

    start = datetime.fromisoformat(args.start).replace(tzinfo=ZoneInfo(args.zone))
    results = {}
    for ours, theirs, n in EXPRESSIONS:
        if args.quick:
            n = max(10, n // 10)
        per_call_ns(theirs, start, max(1, n // 10))  # warm-up, untimed
        samples = [per_call_ns(theirs, start, n) for _ in range(args.runs)]
        results[ours] = {
            "median_ns": round(statistics.median(samples)),
            "min_ns": round(min(samples)),
            "max_ns": round(max(samples)),
            "occurrences": n,
            "croniter": theirs,
        }
        log(f"{ours!r}: median {statistics.median(samples) / 1000:.1f} us per get_next "
            f"({min(samples) / 1000:.1f}-{max(samples) / 1000:.1f}), {args.runs} runs x {n}")

    print(json.dumps({
        "peer": f"croniter {metadata.version('croniter')}",
        "zone": args.zone,
        "start": start.isoformat(),
        "runs": args.runs,
        "python": platform.python_version(),
        "expressions": results,
    }), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
