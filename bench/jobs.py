#!/usr/bin/env python3
"""What the job flags cost: --hold-output, --last-stdout, --idle-timeout and
--on-retry, and that a run without them costs what it did before they existed.

Three measurements, each interleaved (the cases of a round run one after
the other, in a rotated order every round) so that load on the machine
touches every case alike; medians are reported.

  per-attempt   `retry -qq --max 101 --base 1ns --cap 1ns --jitter none -- false`:
                100 failed attempts and 100 (empty) waits; wall time per
                attempt, for each binary given (--binary, and --base-binary:
                the same flags on the build before these features), and for
                the new binary with --last-stdout and --hold-output (a spool
                and a pump per attempt) and `--on-retry true` (one /bin/sh
                per retry).
  held          1 GiB written by `head -c 1G /dev/zero` through retry into
                /dev/null, the command failing so that held output is written
                out: without flags (the command writes to /dev/null itself),
                with --idle-timeout 1m (through the pump), with --hold-output
                at its default bound (64M: the spool turns into a ring) and
                with --hold-max 2G (all of it held), and with --last-stdout
                --hold-max 2G (stdout held, written out on giving up; a
                success's goes out the same way when it ends); with
                --base-binary, its --hold-output too. Wall time and peak RSS
                (ru_maxrss of retry, from wait4: the command's own processes
                are reaped by retry, not by us).
  rss           peak RSS of --hold-output and --last-stdout holding 1 MiB
                against 1 GiB.

Start-up without these flags is bench/run.py's overhead loop:

    python3 bench/run.py --overhead-only --binary NEW --variant before=OLD

    python3 bench/jobs.py --binary NEW --base-binary OLD [--rounds N]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import paths  # noqa: E402  (bench/paths.py, beside this script)

GIB = 1 << 30


def run(argv, stdout=None):
    """Run to the end with stdin and stderr on /dev/null, under /usr/bin/time;
    (seconds, peak RSS KiB, status, CPU seconds of everything it ran)."""
    report = os.path.join(tempfile.gettempdir(), f"jobs-bench-{os.getpid()}.rss")
    argv = ["/usr/bin/time", "-f", "%M", "-o", report, *argv]
    devnull = os.open(os.devnull, os.O_RDWR)
    out = devnull if stdout is None else stdout
    actions = [
        (os.POSIX_SPAWN_DUP2, devnull, 0),
        (os.POSIX_SPAWN_DUP2, out, 1),
        (os.POSIX_SPAWN_DUP2, devnull, 2),
    ]
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - t0
    cpu = usage.ru_utime + usage.ru_stime
    os.close(devnull)
    with open(report) as f:
        rss = int(f.read().split()[-1])
    os.unlink(report)
    return elapsed, rss, os.waitstatus_to_exitcode(status), cpu


def interleaved(cases, rounds):
    """{name: [(seconds, rss, cpu)]} over `rounds` rotated rounds of `cases` (name, argv)."""
    got = {name: [] for name, _ in cases}
    for r in range(rounds):
        order = cases[r % len(cases):] + cases[: r % len(cases)]
        for name, argv in order:
            secs, rss, _, cpu = run(argv)
            got[name].append((secs, rss, cpu))
    return got


def med(values):
    return statistics.median(values)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=paths.release_binary())
    ap.add_argument("--base-binary", help="the build before these features, for the per-attempt loop")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--held-rounds", type=int, default=3)
    a = ap.parse_args()
    new = os.path.abspath(a.binary)
    sh = "/bin/sh"
    print(f"load average before: {os.getloadavg()[0]:.2f}", file=sys.stderr)

    loop = ["-qq", "--max", "101", "--base", "1ns", "--cap", "1ns", "--jitter", "none"]
    false = ["--", "/bin/false"]
    cases = [("new", [new, *loop, *false])]
    if a.base_binary:
        cases.append(("before (--base-binary)", [os.path.abspath(a.base_binary), *loop, *false]))
    cases.append(("new --last-stdout", [new, *loop, "--last-stdout", *false]))
    cases.append(("new --hold-output", [new, *loop, "--hold-output", *false]))
    if a.base_binary:
        cases.append(("before --hold-output", [os.path.abspath(a.base_binary), *loop, "--hold-output", *false]))
    cases.append(("new --on-retry true", [new, *loop, "--on-retry", "true", *false]))
    per = interleaved(cases, a.rounds) if a.rounds else {}
    if per:
        print(f"| per-attempt loop (100 retries, median of {a.rounds}) | wall per attempt | vs new | CPU per attempt | vs new |")
        print("|---|---:|---:|---:|---:|")
        base = med([s for s, _, _ in per["new"]]) / 100
        base_cpu = med([c for _, _, c in per["new"]]) / 100
        for name, _ in cases:
            t = med([s for s, _, _ in per[name]]) / 100
            c = med([c for _, _, c in per[name]]) / 100
            print(f"| {name} | {t * 1e3:.3f} ms | {t / base:.2f}x | {c * 1e3:.3f} ms | {c / base_cpu:.2f}x |")

    child = ["--", sh, "-c", f"head -c {GIB} /dev/zero; exit 1"]
    one = ["-qq", "--max", "1"]
    whole = ["--hold-max", "2G"]
    cases = [
        ("plain", [new, *one, *child]),
        ("--idle-timeout 1m", [new, *one, "--idle-timeout", "1m", *child]),
        ("--hold-output", [new, *one, "--hold-output", *child]),
        ("--hold-output --hold-max 2G", [new, *one, "--hold-output", *whole, *child]),
        ("--last-stdout --hold-max 2G", [new, *one, "--last-stdout", *whole, *child]),
    ]
    if a.base_binary:
        cases.append(("before: --hold-output", [os.path.abspath(a.base_binary), *one, "--hold-output", *child]))
    held = interleaved(cases, a.held_rounds)
    print()
    print(f"| 1 GiB to /dev/null (median of {a.held_rounds}) | wall | MiB/s | peak RSS (max) |")
    print("|---|---:|---:|---:|")
    for name, _ in cases:
        t = med([s for s, _, _ in held[name]])
        rss = max(r for _, r, _ in held[name])
        print(f"| {name} | {t:.2f} s | {GIB / t / (1 << 20):,.0f} | {rss:,} KiB |")

    print()
    for flags, name in [(["--hold-output"], "--hold-output"),
                        (["--hold-output", *whole], "--hold-output --hold-max 2G"),
                        (["--last-stdout", *whole], "--last-stdout --hold-max 2G")]:
        small = max(run([new, *one, *flags, "--", sh, "-c", "head -c 1048576 /dev/zero; exit 1"])[1]
                    for _ in range(3))
        large = max(r for _, r, _ in held[name])
        print(f"{name} peak RSS: {small:,} KiB holding 1 MiB, {large:,} KiB holding 1 GiB "
              f"(+{large - small:,} KiB)")
    print(f"load average after: {os.getloadavg()[0]:.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
