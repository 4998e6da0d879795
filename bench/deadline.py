"""Does `--max-time` use the time it was given?

Three measurements, each for one or more builds side by side:

1. Schedules: `retry --dry-run --max-time 1m --seed S` for 300 seeds (1 to
   300). Attempts take no time in a dry run, so the last row's total wait is
   when the last attempt starts. Reported: the share of seeds whose last
   attempt starts after 55 s, after 50 s and before 45 s, and the median.
2. Every size: the same for deadlines of 5 s, 10 s, 15 s, 20 s and 1 m.
   Reported: the share of seeds whose last attempt starts after 80 % of the
   deadline, and how many left more than a quarter of it unused.
3. A real port: `retry --max-time D --seed S --tcp 127.0.0.1:PORT` for seeds
   1 to 20, every run of every build at once, each against its own port that
   is bound (so connecting is refused) and starts listening at a given time
   (`--port D:OPENS`, repeatable; by default 1m:50). Reported: how many runs
   connected, and their exit codes and times.

    python3 bench/deadline.py                          # the debug build, after cargo build
    python3 bench/deadline.py --binary new=PATH --binary old=PATH
    python3 bench/deadline.py --schedules-only
    python3 bench/deadline.py --port 10s:8 --port 20s:16

Waits in a dry run do not depend on the build's optimisation, and the port
test waits on the clock, not on the CPU, so a debug build measures the same.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paths  # noqa: E402

SEEDS = range(1, 301)
PORT_SEEDS = range(1, 21)
OPENS_AT = 50.0


def parse_duration(text):
    """Seconds in a duration as retry prints it: `57s 158ms`, `1m 2s`, `824ms`."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    total = 0.0
    for part in text.split():
        num = part.rstrip("dhmsuµn")
        unit = part[len(num):]
        total += float(num) * units[unit]
    return total


SIZES = [("5s", 5.0), ("10s", 10.0), ("15s", 15.0), ("20s", 20.0), ("1m", 60.0)]


def starts(binary, seed, max_time="1m"):
    """When each retry of a dry run with this seed starts, in seconds."""
    out = subprocess.run(
        [binary, "--dry-run", "--max-time", max_time, "--seed", str(seed)],
        capture_output=True, text=True, check=True,
    ).stdout
    # Rows are five right-aligned columns, "{:>5}  {:>7}  {:>12}  {:>12}
    # {:>12}": retry, attempt, ceiling, delay, total wait.
    return [parse_duration(line[44:].strip()) for line in out.splitlines() if line[:5].strip().isdigit()]


def schedules(binaries):
    print("## 300 dry runs: `retry --dry-run --max-time 1m --seed S`, S = 1..300\n")
    print("| build | last attempt after 55 s | after 50 s | before 45 s | median | earliest |")
    print("|---|---:|---:|---:|---:|---:|")
    fleets = []
    for name, binary in binaries:
        runs = [starts(binary, s) for s in SEEDS]
        lasts = [r[-1] if r else 0.0 for r in runs]
        n = len(lasts)
        share = lambda pred: 100.0 * sum(1 for x in lasts if pred(x)) / n  # noqa: E731
        print(
            f"| {name} | {share(lambda x: x > 55):.1f} % | {share(lambda x: x > 50):.1f} % "
            f"| {share(lambda x: x < 45):.1f} % | {statistics.median(lasts):.1f} s | {min(lasts):.2f} s |"
        )
        fleets.append((name, [t for r in runs for t in r]))
    print()
    # The 300 runs as one fleet that failed at once: retries a second.
    print("The same 300 runs as one fleet that failed at once: retries started in each second\n")
    print("| build | 30-50 s, per second | " + " | ".join(f"{s}-{s + 1}" for s in range(50, 60)) + " |")
    print("|---|---:|" + "---:|" * 10)
    for name, times in fleets:
        steady = sum(1 for t in times if 30 <= t < 50) / 20
        bins = [sum(1 for t in times if s <= t < s + 1) for s in range(50, 60)]
        print(f"| {name} | {steady:.1f} | " + " | ".join(str(b) for b in bins) + " |")
    print()


def sizes(binaries):
    print("## Every size: `retry --dry-run --max-time D --seed S`, S = 1..300: last attempt after 80 % of D\n")
    print("| build | " + " | ".join(name for name, _ in SIZES) + " | more than a quarter unused (" + ", ".join(n for n, _ in SIZES) + ") |")
    print("|---|" + "---:|" * len(SIZES) + "---|")
    for name, binary in binaries:
        shares, unused = [], []
        for size, secs in SIZES:
            lasts = [(starts(binary, s, size) or [0.0])[-1] for s in SEEDS]
            shares.append(100.0 * sum(1 for x in lasts if x > 0.8 * secs) / len(lasts))
            unused.append(sum(1 for x in lasts if x < 0.75 * secs))
        print(f"| {name} | " + " | ".join(f"{x:.1f} %" for x in shares) + " | " + ", ".join(str(u) for u in unused) + " |")
    print()


def port_runs(binaries, max_time="1m", opens_at=OPENS_AT):
    print(f"## A port that opens {opens_at:g} s in: `retry --max-time {max_time} --seed S --tcp 127.0.0.1:PORT`, S = 1..20\n")
    socks, runs = [], []
    start = time.monotonic()
    for name, binary in binaries:
        for seed in PORT_SEEDS:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
            socks.append(s)
            port = s.getsockname()[1]
            proc = subprocess.Popen(
                [binary, "-qq", "--max-time", max_time, "--seed", str(seed), "--tcp", f"127.0.0.1:{port}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            runs.append((name, seed, proc))

    def open_all():
        time.sleep(max(0.0, start + opens_at - time.monotonic()))
        for s in socks:
            s.listen(16)

    threading.Thread(target=open_all, daemon=True).start()
    ended = {}
    pending = list(runs)
    while pending:
        for run in list(pending):
            if run[2].poll() is not None:
                ended[(run[0], run[1])] = (run[2].returncode, time.monotonic() - start)
                pending.remove(run)
        time.sleep(0.05)
    print("| build | connected | exit codes | ended (s): min, median, max |")
    print("|---|---:|---|---|")
    for name, _ in binaries:
        mine = [ended[(name, s)] for s in PORT_SEEDS]
        codes = {}
        for code, _t in mine:
            codes[code] = codes.get(code, 0) + 1
        times = [t for _c, t in mine]
        ok = codes.get(0, 0)
        print(
            f"| {name} | {ok} of {len(mine)} | "
            + ", ".join(f"{c}: {k}" for c, k in sorted(codes.items()))
            + f" | {min(times):.1f}, {statistics.median(times):.1f}, {max(times):.1f} |"
        )
    for s in socks:
        s.close()
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", action="append", default=[], metavar="NAME=PATH",
                    help="a build to measure (repeat to compare); default: target/debug/retry")
    ap.add_argument("--schedules-only", action="store_true", help="skip the port tests")
    ap.add_argument("--port", action="append", default=[], metavar="D:OPENS",
                    help="a port test: --max-time D, the port listening OPENS seconds in (default 1m:50)")
    args = ap.parse_args()
    binaries = []
    for b in args.binary or [f"retry={os.path.join(paths.target_dir(), 'debug', 'retry')}"]:
        name, _, path = b.partition("=")
        if not path:
            name, path = os.path.basename(b), b
        if not os.access(path, os.X_OK):
            raise SystemExit(f"{path}: not an executable (build it first)")
        binaries.append((name, path))
    schedules(binaries)
    sizes(binaries)
    if not args.schedules_only:
        for spec in args.port or [f"1m:{OPENS_AT:g}"]:
            max_time, _, opens = spec.partition(":")
            port_runs(binaries, max_time, float(opens))


if __name__ == "__main__":
    main()
