#!/usr/bin/env python3
"""pgqueuer (PyPI `pgqueuer` 1.6.0, asyncpg driver) as a peer of TimerKit's PostgreSQL fleet benchmark.

    python3 bench.py setup   URL
    python3 bench.py worker  URL LOG [--batch-size N] [--concurrency N] [--tuned]
    python3 bench.py offered URL --rate R --seconds S --delay D [--connections C]
    python3 bench.py overdue URL --count N [--batch B]

Every job goes to one entrypoint, `bench`; its payload is its due time (unix seconds, ASCII float).
Each worker handler appends `fire <wall-clock start, unix s> <start - due, s> <job id>` to LOG. See README.md.

Everything runs on uvloop, as `pgq run` does (pgqueuer's CLI runs its workers with uvloop.run).

What pgqueuer 1.6.0 offers a consumer (read from its source, pgqueuer/core/qm.py):
  QueueManager.run(dequeue_timeout=30 s, batch_size=10, max_concurrent_tasks=None,
                   heartbeat_timeout=30 s, log_aggregation_interval=30 s)
  - batch_size: rows claimed per dequeue statement (UPDATE ... FOR UPDATE SKIP LOCKED);
    the completion buffer also flushes every batch_size finished jobs (one DELETE+INSERT-log
    statement), or every 0.1 s.
  - max_concurrent_tasks: per-worker cap on picked jobs, enforced in the dequeue SQL;
    None = unlimited (the default); when set it must be >= 2 * batch_size.
  - entrypoint(concurrency_limit=0): fleet-wide cap per entrypoint, enforced in SQL; 0 = unlimited.
  - polling: after the queue has no eligible row, the worker waits for a NOTIFY (a statement
    trigger on the queue table fires on every INSERT/UPDATE/DELETE) or for a timeout that is
    min(dequeue_timeout, time until the next deferred job's execute_after), never below 0.1 s
    (QueueManager.min_dequeue_poll_interval, not a run() parameter).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from datetime import timedelta

import asyncpg
import uvloop

from pgqueuer.db import AsyncpgDriver, AsyncpgPoolDriver
from pgqueuer.models import Job
from pgqueuer.qm import QueueManager
from pgqueuer.queries import Queries

ENTRYPOINT = "bench"

# pgqueuer 1.6.0's own defaults (QueueManager.run and `pgq run`).
DEFAULT_BATCH_SIZE = 10
DEFAULT_MAX_CONCURRENT_TASKS = None  # unlimited
DEFAULT_DEQUEUE_TIMEOUT = timedelta(seconds=30)

# --tuned: what a user tuning pgqueuer 1.6.0 for throughput would change, and only that.
#  - batch_size 10 -> 1000: one dequeue statement (UPDATE ... FOR UPDATE SKIP LOCKED ... LIMIT n)
#    claims up to 1000 due rows, and the completion buffer (its max_size is batch_size) deletes and
#    logs finished jobs up to 1000 per statement, so the per-job share of those round trips, and of
#    the NOTIFYs the queue table's statement trigger sends for each of them, drops 100x.
#    Draining 20,000 overdue jobs with one worker on the 2-core dev machine (interleaved runs, a
#    shared and noisy machine): batch 10 ~2.5-3.9k fires/s (1.2k at load 4.5), 100 ~7-12k, 500 ~10-14k, 1000 ~10-14k
#    (never below 500 in a round), 2000 and 5000 no better: past ~1000 the worker's per-job
#    Python work (pydantic Job model, one asyncio task + heartbeat task per job) is the limit.
#    It costs no lag on deferred jobs: a dequeue takes whatever is due, up to the limit.
#  - max_concurrent_tasks stays None and the entrypoint's concurrency_limit stays 0: both already
#    mean "unlimited" by default, the highest concurrency pgqueuer offers; setting either adds a
#    counting CTE to every dequeue, so "raising" them can only cost throughput.
#  - AsyncpgPoolDriver over a pool of 4 instead of AsyncpgDriver on one connection: with one
#    connection every statement of the worker (dequeue, completion flush, heartbeats, NOTIFY
#    probes) waits on that connection's lock; over a pool (pgqueuer keeps one of its connections
#    for LISTEN) the completion flush and the next dequeue overlap: +20-35 % fires/s at batch 1000
#    in the same interleaved runs. Its price is lag: asyncpg's pool resets a connection on every
#    release (SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL), a second round
#    trip per statement, so the deferred-job lag p50 at 500 jobs/s went from ~3-6 ms to ~8-12 ms
#    (p99 ~90-110 ms either way). `--tuned --pool 0` is the batch-size-only tuning, whose lag is
#    the default's.
#  - dequeue_timeout is left at 30 s: it is only the idle fallback; NOTIFY and the deferred-job
#    ETA wake the worker first, so it changes neither throughput nor lag.
#  - Not a worker setting, so not used: `pgq install --durability volatile|balanced` (UNLOGGED
#    tables) trades crash safety for speed; setup installs pgqueuer's default (durable).
TUNED_BATCH_SIZE = 1000
TUNED_MAX_CONCURRENT_TASKS = None
TUNED_POOL_SIZE = 4


def log(msg: str) -> None:
    print(f"[pgqueuer-peer] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- setup


async def setup(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        queries = Queries(AsyncpgDriver(conn))
        # Queries.uninstall() is pgqueuer's `pgq uninstall` (DROP ... IF EXISTS for every object),
        # Queries.install() is `pgq install` with its default durability (durable: LOGGED tables).
        await queries.uninstall()
        await queries.install()
    finally:
        await conn.close()
    print(json.dumps({"installed": True}), flush=True)


# --------------------------------------------------------------------------- worker


async def worker(
    url: str,
    log_path: str,
    batch_size: int | None,
    concurrency: int | None,
    tuned: bool,
    pool_size: int | None,
) -> None:
    if pool_size is None:
        pool_size = TUNED_POOL_SIZE if tuned else 0
    if pool_size == 1:
        raise SystemExit("--pool 1: AsyncpgPoolDriver keeps one connection for LISTEN; use >= 2")
    if batch_size is None:
        batch_size = TUNED_BATCH_SIZE if tuned else DEFAULT_BATCH_SIZE
    if concurrency is None:
        concurrency = TUNED_MAX_CONCURRENT_TASKS if tuned else DEFAULT_MAX_CONCURRENT_TASKS
    if concurrency == 0:
        concurrency = None  # pgqueuer: 0 means unlimited
    if concurrency is not None and concurrency < 2 * batch_size:
        raise SystemExit(
            f"--concurrency {concurrency}: pgqueuer requires max_concurrent_tasks >= 2 * batch_size"
            f" ({2 * batch_size})"
        )

    pool: asyncpg.Pool | None = None
    conn: asyncpg.Connection | None = None
    if pool_size:
        pool = await asyncpg.create_pool(url, min_size=pool_size, max_size=pool_size)
        driver = AsyncpgPoolDriver(pool)
    else:
        conn = await asyncpg.connect(url)
        driver = AsyncpgDriver(conn)

    qm = QueueManager(Queries(driver))
    # A line per fire, written as it happens (the benchmark reads the log while the run goes on),
    # as TimerKit's instances write theirs.
    out = open(log_path, "a", buffering=1)
    fired = 0

    @qm.entrypoint(ENTRYPOINT)
    async def bench(job: Job) -> None:
        nonlocal fired
        start = time.time()
        due = float(job.payload or b"nan")
        out.write(f"fire {start:.6f} {start - due:.6f} {job.id}\n")
        fired += 1

    loop = asyncio.get_running_loop()
    # Foundation's Process (the Swift benchmark starts this worker) spawns its children with
    # nearly every signal blocked: SIGTERM would never arrive.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, qm.shutdown.set)

    log(
        f"worker ready: batch_size={batch_size} max_concurrent_tasks={concurrency} "
        f"driver={'AsyncpgPoolDriver(%d)' % pool_size if pool_size else 'AsyncpgDriver'} "
        f"dequeue_timeout={DEFAULT_DEQUEUE_TIMEOUT.total_seconds()}s"
    )
    out.write("ready\n")
    try:
        # On shutdown QueueManager.run waits for running jobs and flushes its status buffer.
        await qm.run(
            dequeue_timeout=DEFAULT_DEQUEUE_TIMEOUT,
            batch_size=batch_size,
            max_concurrent_tasks=concurrency,
        )
    finally:
        out.flush()
        out.close()
        if pool is not None:
            await pool.close()
        if conn is not None:
            await conn.close()
    print(json.dumps({"fired": fired}), flush=True)


# --------------------------------------------------------------------------- offered


def report_offered(total: int, failures: int, elapsed: float) -> None:
    """Prints what an offered load wrote; exits 1 if an enqueue failed."""
    scheduled = total - failures
    result = {
        "scheduled": scheduled,
        "seconds": round(elapsed, 6),
        "rate": round(scheduled / elapsed, 3) if elapsed > 0 else 0.0,
    }
    if failures:
        result["failed"] = failures
    print(json.dumps(result), flush=True)
    if failures:
        sys.exit(1)


async def offered(
    url: str,
    phases: list[tuple[float, float]],
    delay: float,
    connections: int,
    batch_every: float,
) -> None:
    """R enqueues per second for S seconds, one job per Queries.enqueue call.

    Open loop: job i is sent at t0 + i/R on the monotonic clock (no drift), each on its own task
    over a small pool, so one slow round trip does not push the whole schedule back; at most
    `connections` calls are in flight (the next send waits for a free one).
    """
    if batch_every > 0:
        await offered_in_batches(url, phases, delay, batch_every, connections)
        return
    ((rate, seconds),) = phases
    pool = await asyncpg.create_pool(url, min_size=connections, max_size=connections)
    queries = Queries(AsyncpgPoolDriver(pool))
    total = int(round(rate * seconds))
    execute_after = timedelta(seconds=delay)
    slots = asyncio.Semaphore(connections)
    pending: set[asyncio.Task[None]] = set()
    failures = 0

    async def send() -> None:
        nonlocal failures
        try:
            # pgqueuer stores execute_after = NOW() + delay (server clock, same host); the payload
            # carries the due time on the client's wall clock, taken just before the call.
            due = time.time() + delay
            await queries.enqueue(ENTRYPOINT, repr(due).encode(), execute_after=execute_after)
        except Exception as exc:  # counted, reported, never silently dropped
            failures += 1
            log(f"enqueue failed: {exc!r}")
        finally:
            slots.release()

    try:
        t0 = time.monotonic()
        for i in range(total):
            wait = t0 + i / rate - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await slots.acquire()
            task = asyncio.create_task(send())
            pending.add(task)
            task.add_done_callback(pending.discard)
        if pending:
            await asyncio.gather(*pending)
        elapsed = time.monotonic() - t0
    finally:
        await pool.close()
    report_offered(total, failures, elapsed)


async def offered_in_batches(
    url: str, phases: list[tuple[float, float]], delay: float, every: float, connections: int
) -> None:
    """Phases of R jobs per second for S seconds, written in one list enqueue every `every` s.

    Batch k goes at t0 + k * every on the monotonic clock and holds the jobs whose moment has come
    by then (job i of a phase: the phase's start + i/R), so the count written by any instant
    follows the rate. Each batch is a task of its own over the pool, at most `connections` in
    flight.
    """
    pool = await asyncpg.create_pool(url, min_size=connections, max_size=connections)
    queries = Queries(AsyncpgPoolDriver(pool))
    moments: list[float] = []
    offset = 0.0
    for rate, seconds in phases:
        moments += [offset + i / rate for i in range(int(round(rate * seconds)))]
        offset += seconds
    total = len(moments)
    slots = asyncio.Semaphore(connections)
    pending: set[asyncio.Task[None]] = set()
    failures = 0

    async def send(n: int) -> None:
        nonlocal failures
        try:
            due = repr(time.time() + delay).encode()
            after = timedelta(seconds=delay)
            await queries.enqueue([ENTRYPOINT] * n, [due] * n, [0] * n, [after] * n)
        except Exception as exc:  # counted, reported, never silently dropped
            failures += n
            log(f"enqueue failed: {exc!r}")
        finally:
            slots.release()

    try:
        t0 = time.monotonic()
        sent = 0
        k = 0
        while sent < total:
            k += 1
            wait = t0 + k * every - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            elapsed_now = time.monotonic() - t0
            due_by_now = sent
            while due_by_now < total and moments[due_by_now] <= elapsed_now:
                due_by_now += 1
            n = due_by_now - sent
            if n <= 0:
                continue
            sent += n
            await slots.acquire()
            task = asyncio.create_task(send(n))
            pending.add(task)
            task.add_done_callback(pending.discard)
        if pending:
            await asyncio.gather(*pending)
        elapsed = time.monotonic() - t0
    finally:
        await pool.close()
    report_offered(total, failures, elapsed)


# --------------------------------------------------------------------------- overdue


async def overdue(url: str, count: int, batch: int) -> None:
    """N jobs already due, inserted with pgqueuer's batch enqueue (lists), as fast as possible."""
    conn = await asyncpg.connect(url)
    try:
        queries = Queries(AsyncpgDriver(conn))
        inserted = 0
        while inserted < count:
            n = min(batch, count - inserted)
            due = repr(time.time()).encode()  # execute_after defaults to NOW(): due at insertion
            await queries.enqueue([ENTRYPOINT] * n, [due] * n, [0] * n)
            inserted += n
    finally:
        await conn.close()
    print(json.dumps({"inserted": inserted}), flush=True)


# --------------------------------------------------------------------------- main


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    roles = parser.add_subparsers(dest="role", required=True)

    p = roles.add_parser("setup", help="drop and install pgqueuer's schema")
    p.add_argument("url")

    p = roles.add_parser("worker", help="consume entrypoint `bench`, one log line per job")
    p.add_argument("url")
    p.add_argument("log")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="max_concurrent_tasks (0 = unlimited, pgqueuer's default)",
    )
    p.add_argument("--tuned", action="store_true")
    p.add_argument(
        "--pool",
        type=int,
        default=None,
        help="connections in an AsyncpgPoolDriver (>= 2); 0 = one connection (AsyncpgDriver)",
    )

    p = roles.add_parser("offered", help="enqueue R jobs/s for S s, each due D s later")
    p.add_argument("url")
    p.add_argument(
        "--rate", type=float, action="append", required=True, help="repeat with --seconds for phases"
    )
    p.add_argument("--seconds", type=float, action="append", required=True)
    p.add_argument("--delay", type=float, required=True)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument(
        "--batch-every",
        type=float,
        default=0,
        help="write the jobs in one list enqueue every this many seconds (0: one call per job)",
    )

    p = roles.add_parser("overdue", help="insert N already-due jobs in batches")
    p.add_argument("url")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--batch", type=int, default=1000)

    args = parser.parse_args(argv)
    if args.role == "setup":
        coro = setup(args.url)
    elif args.role == "worker":
        coro = worker(
            args.url, args.log, args.batch_size, args.concurrency, args.tuned, args.pool
        )
    elif args.role == "offered":
        if len(args.rate) != len(args.seconds):
            parser.error("give --rate and --seconds the same number of times")
        if len(args.rate) > 1 and args.batch_every <= 0:
            parser.error("phases (several --rate) need --batch-every")
        phases = list(zip(args.rate, args.seconds))
        coro = offered(args.url, phases, args.delay, args.connections, args.batch_every)
    else:
        coro = overdue(args.url, args.count, args.batch)
    uvloop.run(coro)


if __name__ == "__main__":
    main(sys.argv[1:])
