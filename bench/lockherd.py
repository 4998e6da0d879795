#!/usr/bin/env python3
"""A herd on one host sharing one group: the local store against Redis.

N `retry` processes start at once, each
`--group herd --pace RATE --max 2 --base 0 -- sh -c 'exit 1'`: a first
attempt (never paced), then one retry each, which the group's pace spaces
RATE a second. Ideally the last retry starts N/RATE seconds after the first
attempt. For each N the stores run one after the other, in a rotating
order: the local store (a directory under $TMPDIR) and a private
redis-server on 127.0.0.1 (persistence off). Each store gets a fresh group.

Reported per run, from the processes' JSON logs and their rusage:
- when the last retry started, from the first attempt, and that over N/RATE;
- the CPU time of all the processes (retry and its children), user + system;
- the busiest one-second window of retries, against RATE, by when they
  started and by when they were due (the wait's start plus the wait: what
  the store granted, before the machine's scheduling delays);
- how many runs warned that they ran without the store.

    python3 bench/lockherd.py [--binary PATH] [--sizes 300,600,1000]
                              [--rate 200] [--rounds 1] [--stores local,redis]

Needs python3, redis-server and the release binary (`cargo build --release`).
"""

import argparse
import calendar
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.append(os.path.dirname(os.path.abspath(__file__)))
import paths  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(workdir):
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir, "--maxclients", "10000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    until = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if time.monotonic() > until:
                raise SystemExit("redis-server did not start")
            time.sleep(0.02)
    return proc, f"redis://127.0.0.1:{port}/0"


def herd(binary, n, rate, state, workdir):
    """Runs the herd; returns (finish s, cpu s, busiest second, ran without)."""
    log_path = os.path.join(workdir, "log")
    # One file for every process's log, each line one write in append mode.
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    args = [binary, "--group", "herd", "--state", state, "--pace", f"{rate}/s",
            "--max", "2", "--base", "0", "--log-format", "json", "-v",
            "--", "sh", "-c", "exit 1"]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": workdir}
    procs = [subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=log)
             for _ in range(n)]
    os.close(log)
    cpu = 0.0
    for p in procs:
        _, _, ru = os.wait4(p.pid, 0)
        p.returncode = 0
        cpu += ru.ru_utime + ru.ru_stime
    firsts, retries, planned, alone = [], [], [], set()
    with open(log_path) as f:
        for line in f:
            e = json.loads(line)
            if e["event"] == "attempt_start":
                t = epoch(e["time"])
                (firsts if e["attempt"] == 1 else retries).append(t)
            elif e["event"] == "sleep":
                # When the retry was due: the wait's start plus the wait.
                planned.append(epoch(e["time"]) + e["delay_ms"] / 1000)
            elif e["event"] == "warning" and "running without it" in e.get("message", ""):
                alone.add(e["pid"])
    start = min(firsts)
    finish = max(retries) - start if retries else float("nan")
    return (finish, cpu, busiest(retries, 1.0), busiest(planned, 1.0), len(alone),
            len(retries))


def epoch(rfc3339):
    # 2026-11-27T17:31:55.795Z: milliseconds, UTC.
    t = time.strptime(rfc3339[:19], "%Y-%m-%dT%H:%M:%S")
    return calendar.timegm(t) + float("0" + rfc3339[19:-1])


def busiest(times, window):
    times = sorted(times)
    best, j = 0, 0
    for i, t in enumerate(times):
        # A window of `window` seconds holds the times in [t - window, t),
        # compared in whole milliseconds as the log gives them.
        while round((t - times[j]) * 1000) >= round(window * 1000):
            j += 1
        best = max(best, i - j + 1)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=paths.release_binary())
    ap.add_argument("--sizes", default="300,600,1000")
    ap.add_argument("--rate", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--stores", default="local,redis")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    stores = a.stores.split(",")
    work = tempfile.mkdtemp(prefix="lockherd-")
    redis, url = start_redis(work) if "redis" in stores else (None, None)
    print(f"binary {a.binary}; rate {a.rate}/s; load average before: "
          f"{os.getloadavg()[0]:.2f}")
    print()
    print("| N | store | last retry after | ideal | ratio | CPU, all processes "
          "| CPU per process | busiest second started | due | ran without the store |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    results = {}
    try:
        for rnd in range(a.rounds):
            for n in sizes:
                order = stores[rnd % len(stores):] + stores[:rnd % len(stores)]
                for store in order:
                    d = tempfile.mkdtemp(dir=work)
                    state = os.path.join(d, "state") if store == "local" else url
                    if store == "redis":
                        subprocess.run(["redis-cli", "-u", url, "FLUSHALL"],
                                       stdout=subprocess.DEVNULL, check=True)
                    finish, cpu, peak, due, alone, count = herd(a.binary, n, a.rate, state, d)
                    shutil.rmtree(d, ignore_errors=True)
                    ideal = n / a.rate
                    results.setdefault((n, store), []).append((finish, cpu, peak, due, alone))
                    print(f"| {n} | {store} | {finish:.2f} s | {ideal:.2f} s "
                          f"| {finish / ideal:.2f} | {cpu:.2f} s | {cpu / n * 1000:.1f} ms "
                          f"| {peak} | {due} | {alone} |", flush=True)
                    if count != n:
                        print(f"  ({count} retries logged, not {n})")
        print()
        print(f"Medians of {a.rounds} round(s):")
        print()
        print("| N | store | last retry after / ideal | CPU per process "
              "| busiest second started | due | ran without the store |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        ratios = []
        for n in sizes:
            for store in stores:
                rs = results[(n, store)]
                med = [statistics.median(r[i] for r in rs) for i in range(5)]
                print(f"| {n} | {store} | {med[0] / (n / a.rate):.2f} "
                      f"| {med[1] / n * 1000:.1f} ms | {med[2]:g} | {med[3]:g} | {med[4]:g} |")
            if "local" in stores and "redis" in stores:
                cpu = [statistics.median(r[1] for r in results[(n, st)])
                       for st in ("local", "redis")]
                ratios.append(f"N = {n}: CPU per process, local / Redis = {cpu[0] / cpu[1]:.2f}")
        print()
        for line in ratios:
            print(line)
    finally:
        if redis:
            redis.kill()
            redis.wait()
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
