#!/usr/bin/env python3
"""Where the start-up time of `retry --max 1 -- true` goes, stage by stage.

Needs a build of retry with bench/probe.patch applied: it records
CLOCK_MONOTONIC and the minor page-fault count (getrusage) at named points
and prints them to stderr as `PROBE name ns faults` lines when it ends. This
script spawns it RUNS times (posix_spawn, stdio on /dev/null except stderr),
takes the time just before the spawn and just after the reap on the same
clock, and prints the median time and faults of every stage.

    git apply bench/probe.patch
    CARGO_TARGET_DIR=target/probe cargo build --release --bin retry
    git checkout src
    python3 bench/stages.py target/probe/release/retry [RUNS]
"""

import os
import sys
import tempfile
import time


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def main():
    retry = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    true = os.path.realpath("/usr/bin/true")
    argv = [retry, "--max", "1", "--", true]
    null = os.open(os.devnull, os.O_RDWR)
    stages = {}
    order = []
    for i in range(runs + 5):
        with tempfile.TemporaryFile() as err:
            actions = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1),
                       (os.POSIX_SPAWN_DUP2, err.fileno(), 2)]
            t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            pid = os.posix_spawn(retry, argv, os.environ, file_actions=actions)
            _, status, ru = os.wait4(pid, 0)
            t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            err.seek(0)
            probes = [line.split() for line in err.read().decode().splitlines()
                      if line.startswith("PROBE ")]
        if status != 0 or not probes:
            sys.exit(f"stages: run exited {status}, {len(probes)} probes")
        if i < 5:
            continue  # warm-up
        points = [("spawn", t0, 0)] + [(p[1], int(p[2]), int(p[3])) for p in probes]
        points.append(("reaped", t1, ru.ru_minflt))
        for (a, ta, fa), (b, tb, fb) in zip(points, points[1:]):
            key = f"{a} -> {b}"
            if key not in stages:
                stages[key] = ([], [])
                order.append(key)
            stages[key][0].append((tb - ta) / 1e3)
            stages[key][1].append(fb - fa)
        stages.setdefault("total", ([], []))
        stages["total"][0].append((t1 - t0) / 1e3)
        stages["total"][1].append(ru.ru_minflt)
    print(f"{runs} runs of {' '.join(argv)}; medians (faults: retry's own minor "
          f"faults; the last row's include the reaped child)")
    print()
    print("| stage | µs | minor faults |")
    print("|---|---:|---:|")
    for key in order + ["total"]:
        us, faults = stages[key]
        print(f"| {key} | {median(us):.0f} | {median(faults):.0f} |")


if __name__ == "__main__":
    main()
