#!/usr/bin/env python3
"""Wall time of one successful HTTP probe: `retry --http URL` against
`curl -fsS URL`, on a loopback server started here.

Both tools run the same number of times, interleaved (and alternating which
goes first) so that drift on the machine affects both alike. Prints a
markdown table of the median and spread of each.

Usage: python3 bench/http.py [--runs N] [--retry PATH] [--curl PATH]
The retry binary defaults to $CARGO_TARGET_DIR/release/retry, or
target/release/retry; build it with `cargo build --release` first.
"""

import os
import sys

# This file is itself named http.py: keep its directory off the import path
# so that `import http.server` finds the standard library.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import argparse  # noqa: E402
import http.server  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402


class Ok(http.server.BaseHTTPRequestHandler):
    """Answers every GET with a short 200, as a health endpoint would."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        # Request lines on stderr would only slow the server down.
        pass


def default_retry():
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "target"
    )
    return os.path.join(target, "release", "retry")


def timed(argv, env):
    start = time.perf_counter()
    done = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(
            f"{argv[0]} failed with {done.returncode}: "
            f"{done.stderr.decode(errors='replace').strip()}"
        )
    return took


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200, help="runs of each tool (>= 100)")
    ap.add_argument("--retry", default=default_retry(), help="retry binary")
    ap.add_argument("--curl", default=shutil.which("curl") or "curl", help="curl binary")
    args = ap.parse_args()
    if args.runs < 100:
        sys.exit("--runs must be at least 100")
    if not os.access(args.retry, os.X_OK):
        sys.exit(f"no retry binary at {args.retry}: run cargo build --release")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/health"

    # Neither tool may route loopback through a proxy from the environment.
    env = dict(os.environ, NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(var, None)

    tools = {
        "retry --http URL": [args.retry, "--http", url],
        "curl -fsS URL": [args.curl, "-fsS", url],
    }
    # Warm the page cache and the server before measuring.
    for argv in tools.values():
        for _ in range(5):
            timed(argv, env)

    times = {name: [] for name in tools}
    names = list(tools)
    for i in range(args.runs):
        order = names if i % 2 == 0 else names[::-1]
        for name in order:
            times[name].append(timed(tools[name], env))
    server.shutdown()

    print(f"One successful probe of a loopback endpoint, {args.runs} runs each, interleaved.\n")
    print("| command | median | p10 | p90 | mean |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        t = times[name]
        ms = lambda x: f"{x * 1000:.2f} ms"
        print(
            f"| `{name}` | {ms(statistics.median(t))} | {ms(pct(t, 10))} "
            f"| {ms(pct(t, 90))} | {ms(statistics.mean(t))} |"
        )
    a, b = (statistics.median(times[n]) for n in names)
    print(f"\nretry / curl (medians): {a / b:.2f}")


if __name__ == "__main__":
    main()
