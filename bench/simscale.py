#!/usr/bin/env python3
"""The simulator at scale: wall time, CPU time and peak memory of
`retry --simulate` from 10,000 to a million clients, measured with
/usr/bin/time -v, and the CPU cost per simulated request.

Given two builds (--before, --after), runs them side by side, interleaved,
and prints the ratios; it also checks that both give the same figures for
every run (the fields both reports have), and names any that differ.

Usage: bench/simscale.py [--after PATH] [--before PATH] [--rounds N] [--only NAME,...]
  --after   the build measured (default: this repository's release binary)
  --before  a build to compare with, e.g. one of an earlier commit:
            git worktree add /tmp/before COMMIT && (cd /tmp/before && cargo build --release)
  --rounds  runs of each case per build, interleaved (default 3); medians shown
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import paths  # noqa: E402  (bench/paths.py, beside this script)

# The same storm at three sizes (an outage; a capacity of one request a
# second per 5,000 clients), so that the CPU per request can be compared.
CASES = [
    ("outage-10k", ["--simulate", "10000", "--outage", "5s", "--seed", "1"]),
    ("outage-100k", ["--simulate", "100000", "--outage", "5s", "--seed", "1"]),
    ("outage-1M", ["--simulate", "1000000", "--outage", "5s", "--seed", "1"]),
    ("capacity-10k", ["--simulate", "10000", "--capacity", "2/s", "--max", "30", "--seed", "1"]),
    ("capacity-100k", ["--simulate", "100000", "--capacity", "20/s", "--max", "30", "--seed", "1"]),
    ("capacity-1M", ["--simulate", "1000000", "--capacity", "200/s", "--max", "30", "--seed", "1"]),
    ("occ-10k", ["--simulate", "10000", "--model", "occ", "--base", "10ms", "--cap", "2s",
                 "--forever", "--seed", "1"]),
]


def options():
    o = {"after": paths.release_binary(), "before": None, "rounds": 3, "only": None}
    args = sys.argv[1:]
    while args:
        flag, value, args = args[0], args[1] if len(args) > 1 else None, args[2:]
        if value is None or flag not in ("--after", "--before", "--rounds", "--only"):
            raise SystemExit(__doc__)
        o[flag[2:]] = int(value) if flag == "--rounds" else value
    if o["only"]:
        o["only"] = o["only"].split(",")
    return o


def measure(binary, args):
    """(wall s, cpu s, peak RSS MiB, report) of one run: wall time and peak
    RSS as /usr/bin/time -v reports them; CPU time from wait4, which counts
    the same process (time's waited-for child) to the microsecond rather
    than time's hundredths."""
    with tempfile.NamedTemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(["/usr/bin/time", "-v", binary, *args, "--format", "json"],
                                stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"{binary} {' '.join(args)}: exit {proc.returncode}")
        out.seek(0)
        report = json.load(out)
        err.seek(0)
        t = err.read()

    def field(name):
        return re.search(re.escape(name) + r": (.*)", t).group(1).strip()
    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    parts = [float(p) for p in wall.split(":")]
    secs = 0.0
    for p in parts:
        secs = secs * 60 + p
    cpu = usage.ru_utime + usage.ru_stime
    rss = int(field("Maximum resident set size (kbytes)")) / 1024
    return secs, cpu, rss, report


def differences(a, b):
    """Fields of the runs that both reports have and that differ."""
    out = []
    for ra, rb in zip(a["runs"], b["runs"]):
        for k in ra:
            if k in rb and ra[k] != rb[k]:
                out.append(f"{ra['jitter']}.{k}: {ra[k]} vs {rb[k]}")
    return out


def main():
    o = options()
    builds = [("after", o["after"])] + ([("before", o["before"])] if o["before"] else [])
    load = open("/proc/loadavg").read().split()[:3]
    print(f"builds: {', '.join(f'{n} {p}' for n, p in builds)}; rounds {o['rounds']}; "
          f"load before: {' '.join(load)}")
    head = f"{'case':<18} {'build':<6} {'wall s':>7} {'cpu s':>7} {'MiB':>7} {'requests':>10} {'us/req':>7}"
    print(head)
    for name, args in CASES:
        if o["only"] and name not in o["only"]:
            continue
        runs = {n: [] for n, _ in builds}
        reports = {}
        for _ in range(o["rounds"]):
            for n, binary in builds:
                wall, cpu, rss, report = measure(binary, args)
                runs[n].append((wall, cpu, rss))
                reports[n] = report
        med = {}
        for n, _ in builds:
            wall = statistics.median(r[0] for r in runs[n])
            cpu = statistics.median(r[1] for r in runs[n])
            rss = max(r[2] for r in runs[n])
            requests = reports[n]["runs"][0]["requests"]
            med[n] = (wall, cpu, rss)
            print(f"{name:<18} {n:<6} {wall:>7.2f} {cpu:>7.2f} {rss:>7.1f} {requests:>10} "
                  f"{cpu / requests * 1e6:>7.3f}")
        if o["before"]:
            a, b = med["after"], med["before"]
            print(f"{'':<18} {'ratio':<6} {a[0] / b[0]:>7.2f} {a[1] / b[1]:>7.2f} {a[2] / b[2]:>7.2f}"
                  "   (after / before)")
            diff = differences(reports["after"], reports["before"])
            print(f"{'':<18} same figures: {'yes' if not diff else 'NO: ' + '; '.join(diff)}")
    load = open("/proc/loadavg").read().split()[:3]
    print(f"load after: {' '.join(load)}")


if __name__ == "__main__":
    main()
