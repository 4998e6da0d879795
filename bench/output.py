#!/usr/bin/env python3
"""Throughput of a child's output through retry.

Each case pipes 1 GiB (by default) from a child into `cat > /dev/null` and is
timed by wall clock around the whole pipeline:

  direct      the child alone
  plain       retry --max 1 -- child             (no patterns: the child writes to the pipe itself)
  matching    retry --max 1 --retry-if-output P  (retry copies and matches every byte)

for two children: `head -c N /dev/zero` (one endless line, matched in 64 KiB
windows) and `yes LINE | head -c N` (short log lines). The cases run
interleaved, in a rotated order each round, so that load on the machine
touches all of them alike; the median of the rounds is reported as MiB/s and
as a ratio to direct.

    python3 bench/output.py [--binary PATH] [--mib N] [--rounds N]
"""

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time

import paths  # noqa: E402  (bench/paths.py, beside this script)

LINE = "INFO 2026-11-22T07:00:00Z worker 7: processed batch 1234 in 12 ms, all good"
PATTERN = "ERROR|FATAL|connection refused"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=paths.release_binary())
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    retry = os.path.abspath(a.binary)
    n = a.mib * 1024 * 1024
    children = {
        "zeros": f"head -c {n} /dev/zero",
        "lines": f"yes {shlex.quote(LINE)} | head -c {n}",
    }
    cases = []
    for cname, child in children.items():
        inner = shlex.quote(child)
        cases.append((cname, "direct", f"sh -c {inner}"))
        cases.append((cname, "plain", f"{retry} -qq --max 1 -- sh -c {inner}"))
        cases.append(
            (cname, "matching",
             f"{retry} -qq --max 1 --retry-if-output {shlex.quote(PATTERN)} -- sh -c {inner}")
        )
    times = {(c, k): [] for c, k, _ in cases}
    print(f"load average before: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    for r in range(a.rounds):
        order = cases[r % len(cases):] + cases[: r % len(cases)]
        for cname, kind, cmd in order:
            t0 = time.perf_counter()
            subprocess.run(f"{cmd} | cat > /dev/null", shell=True, check=True)
            times[(cname, kind)].append(time.perf_counter() - t0)
    print(f"load average after: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    print(f"| child | case | MiB/s (median of {a.rounds}) | vs direct |")
    print("|---|---|---|---|")
    for cname in children:
        direct = statistics.median(times[(cname, "direct")])
        for kind in ("direct", "plain", "matching"):
            t = statistics.median(times[(cname, kind)])
            print(f"| {cname} | {kind} | {a.mib / t:,.0f} | {direct / t:.2f}x |")


if __name__ == "__main__":
    main()
