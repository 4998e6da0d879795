#!/usr/bin/env python3
"""A fleet told one reset: real `retry --http` processes against a
fixed-window rate limit that sends GitHub's fields, waiting exactly for the
reset against spread after it.

A small front on 127.0.0.1 counts requests in one-second windows aligned to
the epoch second, as GitHub counts them per hour: LIMIT a window go on to a
private nginx (which serves them), the rest are answered 429 with
`X-RateLimit-Limit`, `X-RateLimit-Remaining: 0` and `X-RateLimit-Reset` (the
next window, in epoch seconds). nginx's own `limit_req` has no window to
reset, so the front is the limiter; nginx is the server behind it. Without
nginx (`--nginx ''`), the front answers 200 itself.

For each `--retry-after-spread` (0: wait exactly for the reset), N clients
start at once, a few rounds each; the script reports the requests refused
per request served, the busiest 100 ms and the busiest window of retries
(each client calls its own path, so the front tells its first attempt,
which the herd's start-up spreads, from its retries), when the last client
got through, and how many gave up.

    apt-get install nginx-light
    cargo build --release
    python3 bench/ratelimit.py [--binary PATH] [--clients 100] [--limit 10] [--rounds 3]

Needs python3, the binary and (optionally) nginx.
"""

import os
import sys

# bench/http.py would shadow the standard library's http package.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import argparse  # noqa: E402
import http.client  # noqa: E402
import http.server  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

sys.path.append(_here)
import paths  # noqa: E402

NGINX_CONF = """
daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{ return 200 "ok\\n"; }}
    }}
}}
"""


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(binary, workdir):
    port = free_port()
    conf = os.path.join(workdir, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(dir=workdir, port=port))
    proc = subprocess.Popen([binary, "-p", workdir, "-c", conf],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", "/")
            if c.getresponse().status == 200:
                return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("nginx did not start")


class Front(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, limit, backend):
        super().__init__(("127.0.0.1", 0), Handler)
        self.limit = limit
        self.backend = backend
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.window = None
            self.count = 0
            # (epoch time, served, a retry) for every request.
            self.log = []
            self.seen = set()

    def admit(self, client):
        """Whether a request arriving now is served, and the window's end."""
        now = time.time()
        window = int(now)
        with self.lock:
            if window != self.window:
                self.window, self.count = window, 0
            ok = self.count < self.limit
            if ok:
                self.count += 1
            retry = client in self.seen
            self.seen.add(client)
            self.log.append((now, ok, retry))
        return ok, window + 1


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        s = self.server
        ok, reset = s.admit(self.path)
        if not ok:
            self.send_response(429)
            self.send_header("X-RateLimit-Limit", str(s.limit))
            self.send_header("X-RateLimit-Remaining", "0")
            self.send_header("X-RateLimit-Reset", str(reset))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"ok\n"
        if s.backend:
            c = http.client.HTTPConnection("127.0.0.1", s.backend, timeout=5)
            c.request("GET", "/")
            r = c.getresponse()
            body = r.read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def busiest(times, window):
    times = sorted(times)
    best, j = 0, 0
    for i, t in enumerate(times):
        while times[j] <= t - window:
            j += 1
        best = max(best, i - j + 1)
    return best


def herd(binary, url, clients, spread):
    """Start the clients at once (each on its own path, so the front tells
    first attempts from retries) and wait for them."""
    args = [binary, "-qq", "--max", "30", "--max-time", "60s"]
    if spread is not None:
        args += ["--retry-after-spread", spread]
    env = {"PATH": os.environ.get("PATH", "")}
    procs = [subprocess.Popen([*args, "--http", f"{url}c{i}"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for i in range(clients)]
    return [p.wait() for p in procs]


def figures(log, codes):
    start = min(t for t, *_ in log)
    served = sum(1 for _, ok, _ in log if ok)
    # Retries only (the herd's start-up spreads its first attempts over a
    # second or more), one window at a time: a span never straddles a reset.
    waves = {}
    for t, _, retry in log:
        if retry:
            waves.setdefault(int(t), []).append(t)
    wave = max((busiest(ts, 0.1) for ts in waves.values()), default=0)
    second = max((len(ts) for ts in waves.values()), default=0)
    last = max((t for t, ok, _ in log if ok), default=start) - start
    return {
        "rejected per served": (len(log) - served) / max(served, 1),
        "busiest 100 ms of retries": wave,
        "busiest window of retries": second,
        "last through (s)": last,
        "gave up": sum(1 for c in codes if c != 0),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=paths.release_binary())
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    a = ap.parse_args()

    workdir = tempfile.mkdtemp()
    nginx, backend = (None, None)
    if a.nginx and os.path.exists(a.nginx):
        nginx, backend = start_nginx(a.nginx, workdir)
    front = Front(a.limit, backend)
    threading.Thread(target=front.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{front.server_address[1]}/"
    print(f"{a.clients} clients, a window of {a.limit} requests a second "
          f"(GitHub's fields), {'nginx behind' if nginx else 'no nginx'}, "
          f"--max 30, full jitter, {a.rounds} rounds each (median; min-max); "
          f"load average before: {os.getloadavg()[0]:.2f}")
    print()
    keys = None
    rows = []
    for spread in ["0", "200ms", "1s", "2s", None]:
        runs = []
        for _ in range(a.rounds):
            front.reset()
            # Start just after a window opens, as a fleet that failed together.
            time.sleep(1.02 - (time.time() % 1.0))
            codes = herd(a.binary, url, a.clients, spread)
            with front.lock:
                log = list(front.log)
            runs.append(figures(log, codes))
        keys = list(runs[0])
        rows.append((spread or "default (backoff)", runs))
    print("| `--retry-after-spread` | " + " | ".join(keys) + " |")
    print("|---|" + "---:|" * len(keys))
    for name, runs in rows:
        cells = []
        for k in keys:
            vals = [r[k] for r in runs]
            med = statistics.median(vals)
            fmt = "{:.2f}" if isinstance(vals[0], float) else "{}"
            cells.append(f"{fmt.format(med)} ({fmt.format(min(vals))}-{fmt.format(max(vals))})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    front.shutdown()
    if nginx:
        nginx.terminate()
        nginx.wait()
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
