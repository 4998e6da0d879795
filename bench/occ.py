#!/usr/bin/env python3
"""Reproduce the classic backoff-and-jitter table with `retry --simulate --model occ`.

Mean writes ("calls") and completion time over RUNS seeded runs, for
exponential backoff without jitter, full, equal and decorrelated jitter, at
N = 10, 50 and 100 clients, next to the published figures.

Usage: bench/occ.py [PATH-TO-RETRY] [RUNS]   (default: the release binary, 100)
"""
import json
import subprocess
import sys

import paths  # noqa: E402  (bench/paths.py, beside this script)

RETRY = sys.argv[1] if len(sys.argv) > 1 else paths.release_binary()
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 100

# (calls, completion ms) as published.
PUBLISHED = {
    ("none", 10): (50, 3356), ("full", 10): (38, 467), ("equal", 10): (42, 731),
    ("decorrelated", 10): (38, 428),
    ("none", 50): (622, 36340), ("full", 50): (332, 2874), ("equal", 50): (348, 4256),
    ("decorrelated", 50): (374, 2178),
    ("none", 100): (1858, 63606), ("full", 100): (796, 4885), ("equal", 100): (812, 6557),
    ("decorrelated", 100): (1001, 4301),
}

# That simulator: base 5 ms, cap 2 s, its first exponential sleep 2 x base,
# which is retry's --base 10ms. Its decorrelated jitter starts from the
# 5 ms base itself.
BASE = {"none": "10ms", "full": "10ms", "equal": "10ms", "decorrelated": "5ms"}


def mean(kind, n):
    calls = time = 0.0
    for seed in range(1, RUNS + 1):
        out = subprocess.run(
            [RETRY, "--simulate", str(n), "--model", "occ", "--forever",
             "--base", BASE[kind], "--cap", "2s", "--jitter", kind,
             "--seed", str(seed), "--format", "json"],
            check=True, capture_output=True, text=True).stdout
        run = json.loads(out)["runs"][0]
        calls += run["requests"]
        time += run["last_success_ms"]
    return calls / RUNS, time / RUNS


def main():
    print(f"{'N':>4} {'jitter':<13} {'calls':>8} {'published':>9} {'diff':>7}"
          f" {'time ms':>9} {'published':>9} {'diff':>7}")
    for n in (10, 50, 100):
        for kind in ("none", "full", "equal", "decorrelated"):
            calls, time = mean(kind, n)
            pc, pt = PUBLISHED[(kind, n)]
            print(f"{n:>4} {kind:<13} {calls:>8.0f} {pc:>9} {100 * (calls / pc - 1):>+6.1f}%"
                  f" {time:>9.0f} {pt:>9} {100 * (time / pt - 1):>+6.1f}%", flush=True)


if __name__ == "__main__":
    main()
