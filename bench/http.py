#!/usr/bin/env python3
"""HTTP mode against curl, on a loopback server started here: the wall time
of one successful probe (`retry --http URL` vs `curl -fsS URL`), and a large
download (`retry --http URL` vs `curl -fsS URL`, body to stdout on
/dev/null): wall time, throughput and peak RSS (GNU time's %M).

Both tools run the same number of times, interleaved (and alternating which
goes first) so that drift on the machine affects both alike. Prints markdown
tables of the median and spread of each, and the ratios.

Usage: python3 bench/http.py [--runs N] [--downloads N] [--size-mb MB]
                             [--retry PATH] [--curl PATH]
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
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

# The standard library's http is imported now: this directory may come back
# (at the end) for bench/paths.py.
sys.path.append(_here)
import paths  # noqa: E402


BLOCK = b"x" * (1 << 20)
SIZE_MB = 200


class Ok(http.server.BaseHTTPRequestHandler):
    """Answers GET /big with SIZE_MB MiB, anything else with a short 200,
    as a health endpoint would."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/big":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(SIZE_MB * len(BLOCK)))
            self.end_headers()
            for _ in range(SIZE_MB):
                self.wfile.write(BLOCK)
            return
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        # Request lines on stderr would only slow the server down.
        pass


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


def download(argv, env):
    """Wall time (s) and peak RSS (KiB) of one run, its stdout and stderr on
    /dev/null. The peak comes from GNU time (`/usr/bin/time -f %M`): Linux
    carries a process's peak RSS across exec, so a child spawned from this
    Python process directly would report Python's own size as its peak."""
    with tempfile.NamedTemporaryFile("r") as report:
        timed_argv = ["/usr/bin/time", "-f", "%M", "-o", report.name, *argv]
        start = time.perf_counter()
        done = subprocess.run(
            timed_argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
        took = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"{argv[0]} failed: {done.stderr.decode(errors='replace').strip()}")
        peak_kib = int(report.read().strip().splitlines()[-1])
    return took, peak_kib


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200, help="probes by each tool (>= 100)")
    ap.add_argument("--downloads", type=int, default=5, help="downloads by each tool")
    ap.add_argument("--size-mb", type=int, default=200, help="download size in MiB")
    ap.add_argument("--retry", default=paths.release_binary(), help="retry binary")
    ap.add_argument("--curl", default=shutil.which("curl") or "curl", help="curl binary")
    ap.add_argument(
        "--host",
        default="127.0.0.1",
        help="host name in the probe's URL (a name such as localhost adds a lookup)",
    )
    ap.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="PATH",
        help="another retry build to time in the probe (repeatable)",
    )
    args = ap.parse_args()
    global SIZE_MB
    SIZE_MB = args.size_mb
    if args.runs < 100:
        sys.exit("--runs must be at least 100")
    if not os.access(args.retry, os.X_OK):
        sys.exit(f"no retry binary at {args.retry}: run cargo build --release")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://{args.host}:{server.server_address[1]}/health"

    # Neither tool may route loopback through a proxy from the environment.
    env = dict(os.environ, NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(var, None)

    tools = {
        "retry --http URL": [args.retry, "--http", url],
        "curl -fsS URL": [args.curl, "-fsS", url],
    }
    for path in args.also:
        tools[f"{path} --http URL"] = [path, "--http", url]
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

    print(
        f"One successful probe of a loopback endpoint ({url}), "
        f"{args.runs} runs each, interleaved.\n"
    )
    print("| command | median | p10 | p90 | mean |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        t = times[name]
        ms = lambda x: f"{x * 1000:.2f} ms"
        print(
            f"| `{name}` | {ms(statistics.median(t))} | {ms(pct(t, 10))} "
            f"| {ms(pct(t, 90))} | {ms(statistics.mean(t))} |"
        )
    a, b = (statistics.median(times[n]) for n in names[:2])
    print(f"\nretry / curl (medians): {a / b:.2f}")
    names = names[:2]

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    big = f"http://127.0.0.1:{server.server_address[1]}/big"
    tools = {
        "retry --http URL": [args.retry, "--http", big],
        "curl -fsS URL": [args.curl, "-fsS", big],
    }
    for argv in tools.values():
        download(argv, env)
    walls = {name: [] for name in tools}
    peaks = {name: [] for name in tools}
    for i in range(args.downloads):
        order = names if i % 2 == 0 else names[::-1]
        for name in order:
            took, peak = download(tools[name], env)
            walls[name].append(took)
            peaks[name].append(peak)
    server.shutdown()

    print(
        f"\nDownload of {SIZE_MB} MiB from a loopback server to stdout on /dev/null, "
        f"{args.downloads} runs each, interleaved.\n"
    )
    print("| command | median wall | throughput | min / max wall | peak RSS (max) |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        w = walls[name]
        med = statistics.median(w)
        print(
            f"| `{name}` | {med * 1000:.0f} ms | {SIZE_MB / med:.0f} MiB/s "
            f"| {min(w) * 1000:.0f} / {max(w) * 1000:.0f} ms "
            f"| {max(peaks[name]) / 1024:.2f} MiB |"
        )
    a, b = (statistics.median(walls[n]) for n in names)
    print(f"\nretry throughput / curl throughput (medians): {b / a:.2f}")
    print(f"retry peak RSS: {max(peaks[names[0]]) / 1024:.2f} MiB")


if __name__ == "__main__":
    main()
