#!/usr/bin/env python3
"""What tracing costs: start-up with tracing off (against a build without
tracing), with an incoming TRACEPARENT only, and with an export; and the
export's cost per attempt.

usage: bench/trace.py --before PATH --after PATH [--runs N]

Timed as bench/run.py times its overhead loop: each run is
os.posix_spawn + os.wait4 with stdio on /dev/null, timed with
perf_counter_ns, the variants interleaved in one loop (in reversed order on
every other iteration) after 10 warm-up runs; medians of wall time and of
user+system CPU (the reaped children included). The receiver of the export
variants is a stdlib HTTP server on 127.0.0.1 in a process of its own that
answers every POST with 200 at once, so what is timed is retry's side.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

RECEIVER = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def timed(argv, env, devnull):
    actions = [(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)]
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter_ns() - start
    return wall / 1e6, (usage.ru_utime + usage.ru_stime) * 1e3, os.waitstatus_to_exitcode(status)


def loop(variants, runs):
    devnull = os.open(os.devnull, os.O_RDWR)
    names = list(variants)
    for name in names:
        for _ in range(10):
            timed(*variants[name], devnull)
    walls = {n: [] for n in names}
    cpus = {n: [] for n in names}
    for i in range(runs):
        order = names if i % 2 == 0 else list(reversed(names))
        for name in order:
            wall, cpu, _ = timed(*variants[name], devnull)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {n: (statistics.median(walls[n]), statistics.median(cpus[n])) for n in names}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="retry built without tracing")
    ap.add_argument("--after", required=True, help="retry built with tracing")
    ap.add_argument("--runs", type=int, default=300)
    a = ap.parse_args()
    true = "/bin/true"
    false = "/bin/false"
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
    port = int(receiver.stdout.readline())
    plain = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    context = dict(plain, TRACEPARENT=PARENT)
    export = dict(plain, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}")
    print(f"load average before: {os.getloadavg()}")
    try:
        start = loop({
            "true alone": ([true], plain),
            "before, --max 1 -- true": ([a.before, "--max", "1", "--", true], plain),
            "after, tracing off": ([a.after, "--max", "1", "--", true], plain),
            "after, TRACEPARENT given, no export": ([a.after, "--max", "1", "--", true], context),
            "after, export to 127.0.0.1": ([a.after, "--max", "1", "--", true], export),
        }, a.runs)
        print("\n| run | wall, median (ms) | CPU, median (ms) |\n|---|---|---|")
        for name, (wall, cpu) in start.items():
            print(f"| {name} | {wall:.3f} | {cpu:.3f} |")
        # The export's fixed cost (one request) cancels out between 1 and
        # 21 attempts: what is left is the per-attempt part (ids, span,
        # the carrier, bytes on the wire).
        attempts = 21
        def argv(n):
            return [a.after, "--max", str(n), "--base", "0s", "--", false]
        many = loop({
            "off 1": (argv(1), plain),
            "export 1": (argv(1), export),
            "off 21": (argv(attempts), plain),
            "export 21": (argv(attempts), export),
        }, max(a.runs // 3, 20))
        print("\n| attempts (exit 1) | off: wall / CPU (ms) | export: wall / CPU (ms) |\n|---|---|---|")
        for n in ("1", "21"):
            off, exp = many[f"off {n}"], many[f"export {n}"]
            print(f"| {n} | {off[0]:.3f} / {off[1]:.3f} | {exp[0]:.3f} / {exp[1]:.3f} |")
        extra = [(many[f"export {n}"][i] - many[f"off {n}"][i]) for n in ("1", "21") for i in (0, 1)]
        per_wall = (extra[2] - extra[0]) / (attempts - 1)
        per_cpu = (extra[3] - extra[1]) / (attempts - 1)
        print(f"\nexport cost per attempt: {per_wall * 1000:.0f} us wall, {per_cpu * 1000:.0f} us CPU; "
              f"the export itself (1 attempt): {extra[0]:.3f} ms wall, {extra[1]:.3f} ms CPU")
        for name, path in (("before", a.before), ("after", a.after)):
            print(f"binary size {name}: {os.path.getsize(path)} bytes")
    finally:
        receiver.kill()
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
