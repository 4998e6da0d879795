#!/usr/bin/env python3
"""A synchronized failure on one host, with and without shared state.

N `retry --http` processes start at once against a loopback server that
answers 503 for the first OUTAGE seconds and 200 after. The server records
when each request arrives. For each variant (no shared state, --pace, --budget,
both) the script reports the requests sent, the busiest 100 ms window, the
time from the start to the last success, and how many runs gave up. The
busiest second after the first one shows the retries alone: first attempts
are never paced, and they all fall in the first second.

    python3 bench/pace.py [--binary PATH] [--clients 100] [--outage 3]

Needs only python3 and the binary. The shared state lives in a temporary
directory (the local store).
"""

import os
import sys

# bench/http.py would shadow the standard library's http package.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import argparse  # noqa: E402
import http.server  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

# The standard library's http is imported now: this directory may come back
# (at the end) for bench/paths.py.
sys.path.append(_here)
import paths  # noqa: E402


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, outage):
        super().__init__(("127.0.0.1", 0), Handler)
        self.outage = outage
        self.start = time.monotonic()
        self.arrivals = []
        self.lock = threading.Lock()

    def reset(self):
        with self.lock:
            self.start = time.monotonic()
            self.arrivals = []


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        s = self.server
        t = time.monotonic() - s.start
        with s.lock:
            s.arrivals.append(t)
        code = 503 if t < s.outage else 200
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def run_variant(binary, url, clients, extra, state_dir):
    args = [
        binary, "-qq", "--max-time", "60s", "--base", "100ms", "--cap", "2s",
        "--max", "1000", *extra, "--http", url,
    ]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": state_dir}
    procs = [
        subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(clients)
    ]
    codes = [p.wait() for p in procs]
    return codes


def busiest(arrivals, window=0.1):
    arrivals = sorted(arrivals)
    best, j = 0, 0
    for i, t in enumerate(arrivals):
        while arrivals[j] < t - window:
            j += 1
        best = max(best, i - j + 1)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=paths.release_binary())
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--outage", type=float, default=3.0)
    a = ap.parse_args()

    server = Server(a.outage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    variants = [
        ("no shared state", []),
        ("--pace 20/s", ["--pace", "20/s"]),
        ("--budget", ["--budget"]),
        ("--pace 20/s --budget", ["--pace", "20/s", "--budget"]),
    ]
    print(f"{a.clients} clients, outage {a.outage:g}s, --base 100ms --cap 2s, full jitter; "
          f"load average before: {os.getloadavg()[0]:.2f}")
    print()
    print("| variant | requests | busiest 100 ms | busiest 1 s after the first | last success | gave up |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, extra in variants:
        state = tempfile.mkdtemp()
        group = ["--group", "bench", "--state", os.path.join(state, "s")] if extra else []
        server.reset()
        codes = run_variant(a.binary, url, a.clients, group + extra, state)
        with server.lock:
            arrivals = list(server.arrivals)
        ok = [t for t in arrivals if t >= a.outage]
        last = f"{max(ok):.2f} s" if ok else "none"
        gave_up = sum(1 for c in codes if c != 0)
        later = [t for t in arrivals if t >= 1.0]
        print(f"| {name} | {len(arrivals)} | {busiest(arrivals)} | {busiest(later, 1.0)} "
              f"| {last} | {gave_up} |")
        shutil.rmtree(state, ignore_errors=True)
    print()
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    server.shutdown()


if __name__ == "__main__":
    main()
