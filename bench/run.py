#!/usr/bin/env python3
"""Benchmarks for `retry`: what it costs to wrap a command in it.

`retry` sits in front of other programs, often in scripts and CI jobs that
run it thousands of times, and it spends most of its life asleep between
attempts. So the figures that matter are what it adds to a run, what it holds
while waiting, how faithfully it keeps the delays it plans, and whether
waiting costs CPU. One run of this script measures all of them and prints a
markdown table with a target and PASS/FAIL per row:

1. Start-up overhead. Median wall time of `retry --max 1 -- true` against
   `true` alone (both by absolute path), timed with perf_counter_ns around
   os.posix_spawn + os.wait4, the same way for every command. In the same
   loop, as references: the C floor (bench/floor.c, compiled here with
   `cc -O2`: fork, exec, wait, nothing else), coreutils `timeout 60 true`,
   and attempt-cli's `attempt fixed --attempts 1 -- true` (another retry
   tool, in Rust) when it is installed (`cargo install attempt-cli --root
   target/bench-tools`), and joshdk/retry's `retry -attempts 1 true` (one in
   Go) when it is (`GOBIN=$PWD/target/bench-tools/go go install
   github.com/joshdk/retry@v1.4.0`). All are interleaved, the order
   reversed on every other iteration, so machine noise hits them alike;
   each is reported as a ratio to the floor, with the median minor page
   faults and user+system CPU time from wait4 (which include the reaped
   `true`). Targets for the default build: under 1 ms added to `true`, at
   most 1.5 times the floor, faster than the other retry tools. The static
   opt-in build (build/static.toml) runs in the same loop as the variant
   `static`; `--variant NAME=PATH` adds other retry builds.

2. Peak memory while waiting. `retry --max 2 --base 2s --jitter none -- false`
   is left for 1 s, by which time the first attempt has failed and retry is
   in its 2 s backoff sleep; VmRSS and VmHWM are read from
   /proc/PID/status, then retry is stopped with SIGTERM and reaped.
   VmHWM is reported, not judged: most of it is clean pages of the
   executable and of libc, which every process mapping them shares
   (with the static build it was under 4 MiB). RssAnon (heap, stack) and Private_Dirty
   from /proc/PID/smaps_rollup (pages written by this process alone: what
   each further sleeping retry really adds) are shown beside it; the rest
   of the RSS is clean pages of the executable and shared libraries, shared
   with every other process that maps them. Target: Private_Dirty under
   512 KiB, so that a thousand sleeping retries cost under half a GiB.

3. Timer precision. `retry -v --log-format json --max 201 --base 5ms
   --cap 20ms --jitter full --seed 1 -- false` makes 200 sleeps of 0-20 ms.
   Its JSON log (stderr) is parsed: in src/run.rs the loop emits the
   `attempt` event and, in the same write, the `sleep` event carrying the
   planned `delay_ms`, immediately before `sleep_until(now + delay)`; after
   waking it goes straight back to the top of the loop, which only checks,
   without waiting, for a caught signal and then emits `attempt_start`
   (logged only with -v). The terminal countdown is off, as stderr is not a
   terminal here. Each line's `elapsed_ms`
   is read from one monotonic clock when the event is emitted (src/log.rs,
   Logger::emit; microsecond resolution). So
       actual    = attempt_start.elapsed_ms - sleep.elapsed_ms
       overshoot = actual - sleep.delay_ms
   is the time retry waited beyond its plan, including the scheduling and
   wake-up latency a user sees. (`sleep.elapsed_ms` is taken a few
   microseconds after the instant the delay is counted from, so the
   overshoot is, if anything, understated by that much.)
   Target: median overshoot at most 1.5 ms.

4. CPU time while waiting. `retry --max 2 --base 2s --jitter none -- false`
   runs to completion and is reaped with os.wait4. On Linux the rusage that
   wait4 returns for a process covers the process itself *and* every child
   it has reaped, so it includes the two `false` runs. To isolate the sleep,
   each such run is paired with a baseline that does the same work without
   waiting (`--base 0s`): same start-up, same two children, same exit. The
   difference is the CPU spent because of the 2 s sleep. As a cross-check,
   retry's own CPU time (children excluded) is read from
   /proc/PID/schedstat while the exited process is still a zombie
   (waitid with WNOWAIT), and also sampled 0.5 s and 1.9 s after the spawn,
   inside the sleep, which shows what the wait itself costs, apart from
   waking up. Target: median difference at most 5 ms.

Also reported, for information: the size of the release binary (stripped).

Timings are medians over repetitions, so one slow outlier does not move
them; memory is the largest value seen. The exit status is 0 even when a
target is missed: this is a report.

Usage:
    python3 bench/run.py                  # build both release binaries, full run
    python3 bench/run.py --binary PATH    # use an existing binary
    python3 bench/run.py --quick          # fewer repetitions, for a smoke run
    python3 bench/run.py --overhead-only --variant nopre=PATH   # compare builds
"""

import argparse
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import paths  # noqa: E402  (bench/paths.py, beside this script)

REPO = paths.REPO
MIB = 1024 * 1024


def percentile(values, p):
    """Linear interpolation between closest ranks (p in 0..100)."""
    xs = sorted(values)
    if not xs:
        raise ValueError("no values")
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def median(values):
    return percentile(values, 50)


def which_abs(name):
    path = shutil.which(name)
    if path is None:
        sys.exit(f"bench: cannot find {name!r} on PATH")
    return os.path.realpath(path)


class Devnull:
    """File actions sending stdin, stdout and stderr to /dev/null."""

    def __init__(self):
        self.fd = os.open(os.devnull, os.O_RDWR)
        self.actions = [(os.POSIX_SPAWN_DUP2, self.fd, n) for n in (0, 1, 2)]


def spawn(argv, devnull, stderr_fd=None):
    actions = list(devnull.actions)
    if stderr_fd is not None:
        actions[2] = (os.POSIX_SPAWN_DUP2, stderr_fd, 2)
    return os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)


def exit_code(status):
    return os.waitstatus_to_exitcode(status)


# 1. Overhead -----------------------------------------------------------------

def build_floor(workdir):
    """Compile bench/floor.c (fork, exec, wait) with cc -O2 into workdir;
    None without cc."""
    cc = shutil.which("cc")
    if cc is None:
        print("bench: warning: no cc, the C floor is left out", file=sys.stderr)
        return None
    out = os.path.join(workdir, "floor.linked")
    subprocess.run([cc, "-O2", "-o", out, os.path.join(REPO, "bench", "floor.c")], check=True)
    return installed_copy(out, workdir, "floor")


def installed_copy(path, workdir, name=None):
    """A copy of the executable at `path`, written in one go as an installer
    writes it, under workdir/<n>/. How the kernel caches a file depends on
    how it was written: a linker's output, written piecemeal, starts 10 to
    20 % slower (and with about 12 more page faults) than the same bytes
    copied, as `cargo install`, `install` or a package manager leave them.
    Every binary timed here is measured as such a copy."""
    n = len(os.listdir(workdir))
    d = os.path.join(workdir, str(n))
    os.mkdir(d)
    out = os.path.join(d, name or os.path.basename(path))
    shutil.copy(path, out)
    # Written back, so that its cached pages are clean: a dirty page of a
    # mapped file counts as Private_Dirty, which would blur the memory figures.
    fd = os.open(out, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return out


def find_attempt(given):
    """attempt-cli's `attempt` binary: --attempt, then the bench tools
    directory, then PATH."""
    for path in (given, os.path.join(REPO, "target", "bench-tools", "bin", "attempt"),
                 shutil.which("attempt")):
        if path and os.access(path, os.X_OK):
            return os.path.realpath(path)
    return None


def find_joshdk(given):
    """joshdk/retry's binary: --joshdk, then the bench tools directory (its
    name, `retry`, would clash on PATH)."""
    for path in (given, os.path.join(REPO, "target", "bench-tools", "go", "retry")):
        if path and os.access(path, os.X_OK):
            return os.path.realpath(path)
    return None


def bench_overhead(retry, runs, warmup, devnull, floor=None, attempt=None, variants=(),
                   joshdk=None):
    """Time every command in one loop, order reversed on every other
    iteration. Returns, per name: median and p90 wall time (ms), and the
    medians of minor page faults and user+system CPU time from wait4 (these
    include the reaped `true` under a wrapper)."""
    true = which_abs("true")
    cmds = {"true": [true]}
    if floor:
        cmds["floor"] = [floor, true]
    cmds["retry"] = [retry, "--max", "1", "--", true]
    for name, path in variants:
        cmds[name] = [os.path.abspath(path), "--max", "1", "--", true]
    # coreutils `timeout`: a small C wrapper that also forks, execs and waits.
    timeout = shutil.which("timeout")
    if timeout:
        cmds["timeout"] = [os.path.realpath(timeout), "60", true]
    # attempt-cli: another retry tool written in Rust; one attempt.
    if attempt:
        cmds["attempt"] = [attempt, "fixed", "--attempts", "1", "--", true]
    # joshdk/retry: another retry tool, written in Go; one attempt.
    if joshdk:
        cmds["joshdk"] = [joshdk, "-attempts", "1", true]

    def once(argv):
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=devnull.actions)
        _, status, ru = os.wait4(pid, 0)
        t1 = time.perf_counter_ns()
        if status != 0:
            sys.exit(f"bench: {' '.join(argv)} exited {exit_code(status)}")
        return t1 - t0, ru.ru_minflt, (ru.ru_utime + ru.ru_stime) * 1e3

    names = list(cmds)
    for _ in range(warmup):
        for name in names:
            once(cmds[name])
    samples = {name: [] for name in names}
    for i in range(runs):
        # Reverse the order every iteration so none always runs first.
        for name in names if i % 2 == 0 else reversed(names):
            samples[name].append(once(cmds[name]))
    result = {"true_path": true, "runs": runs, "argv": cmds, "by": {}}
    for name in names:
        wall = [s[0] / 1e6 for s in samples[name]]
        result["by"][name] = {
            "ms": median(wall),
            "p90_ms": percentile(wall, 90),
            "minflt": median([s[1] for s in samples[name]]),
            "cpu_ms": median([s[2] for s in samples[name]]),
        }
    by = result["by"]
    result["direct_ms"] = by["true"]["ms"]
    result["retry_ms"] = by["retry"]["ms"]
    result["added_ms"] = by["retry"]["ms"] - by["true"]["ms"]
    result["floor_ratio"] = by["retry"]["ms"] / by["floor"]["ms"] if floor else None
    others = [n for n in ("attempt", "joshdk") if n in by]
    result["other_tools"] = {n: by[n]["ms"] for n in others}
    return result


# 2. Peak RSS while sleeping ---------------------------------------------------

def read_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def kib(value):
    number, unit = value.split()
    assert unit == "kB", value
    return int(number)


def read_rollup(pid):
    """Fields of /proc/PID/smaps_rollup, in KiB."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, value = line.partition(":")
            if value.strip().endswith("kB"):
                fields[key] = kib(value.strip())
    return fields


def bench_rss(retry, reps, devnull):
    false = which_abs("false")
    argv = [retry, "--max", "2", "--base", "2s", "--jitter", "none", "--", false]
    samples = []
    for _ in range(reps):
        pid = spawn(argv, devnull)
        try:
            time.sleep(1.0)
            st = read_status(pid)
            rollup = read_rollup(pid)
            state = st["State"].split()[0]
            samples.append({
                "rss_kib": kib(st["VmRSS"]),
                "hwm_kib": kib(st["VmHWM"]),
                "anon_kib": kib(st["RssAnon"]),
                "threads": int(st["Threads"]),
                "dirty_kib": rollup["Private_Dirty"],
                "pss_kib": rollup["Pss"],
                "state": state,
            })
            if state != "S":
                print(f"bench: warning: retry state {st['State']} (expected sleeping)",
                      file=sys.stderr)
        finally:
            os.kill(pid, signal.SIGTERM)
            _, status = os.waitpid(pid, 0)
        code = exit_code(status)
        if code != 128 + signal.SIGTERM:
            print(f"bench: warning: retry exited {code} after SIGTERM (expected 143)",
                  file=sys.stderr)
    return {
        "reps": reps,
        "hwm_mib": max(s["hwm_kib"] for s in samples) / 1024,
        "rss_mib": max(s["rss_kib"] for s in samples) / 1024,
        "anon_mib": max(s["anon_kib"] for s in samples) / 1024,
        "threads": max(s["threads"] for s in samples),
        "dirty_kib": max(s["dirty_kib"] for s in samples),
        "pss_kib": max(s["pss_kib"] for s in samples),
    }


# 3. Timer precision -----------------------------------------------------------

def bench_timer(retry, sleeps, devnull):
    false = which_abs("false")
    argv = [retry, "-v", "--log-format", "json", "--max", str(sleeps + 1),
            "--base", "5ms", "--cap", "20ms", "--jitter", "full", "--seed", "1",
            "--", false]
    with tempfile.TemporaryFile() as err:
        pid = spawn(argv, devnull, stderr_fd=err.fileno())
        _, status = os.waitpid(pid, 0)
        err.seek(0)
        lines = err.read().decode().splitlines()
    if exit_code(status) != 1:
        sys.exit(f"bench: timer run exited {exit_code(status)}, expected 1")
    events = [json.loads(line) for line in lines if line.startswith("{")]
    overshoot, delays = [], []
    pending = None
    for ev in events:
        if ev["event"] == "sleep":
            pending = ev
        elif ev["event"] == "attempt_start" and pending is not None:
            if ev["attempt"] != pending["attempt"]:
                sys.exit("bench: attempt_start does not follow its sleep event")
            actual = ev["elapsed_ms"] - pending["elapsed_ms"]
            overshoot.append(actual - pending["delay_ms"])
            delays.append(pending["delay_ms"])
            pending = None
    if len(overshoot) != sleeps:
        sys.exit(f"bench: parsed {len(overshoot)} sleeps, expected {sleeps}")
    return {
        "sleeps": len(overshoot),
        "median_ms": median(overshoot),
        "p90_ms": percentile(overshoot, 90),
        "max_ms": max(overshoot),
        "min_ms": min(overshoot),
        "planned_total_ms": sum(delays),
    }


# 4. CPU time while sleeping ---------------------------------------------------

def own_cpu_ns(pid):
    """retry's own on-CPU time, children excluded, for a not-yet-reaped pid.

    retry runs tokio's current-thread runtime, so it has a single thread;
    /proc/PID/schedstat is that thread's sum_exec_runtime in nanoseconds.
    """
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def cpu_run(argv, devnull, window=None):
    """Run to the end; return (wait4 user+sys ms, own CPU ms, window CPU ms).

    With `window=(a, b)`, also read retry's own CPU time a and b seconds after
    the spawn, both inside the backoff sleep, and return the difference.
    """
    t0 = time.monotonic()
    pid = spawn(argv, devnull)
    in_window = float("nan")
    if window is not None:
        time.sleep(max(0.0, t0 + window[0] - time.monotonic()))
        first = own_cpu_ns(pid)
        time.sleep(max(0.0, t0 + window[1] - time.monotonic()))
        in_window = (own_cpu_ns(pid) - first) / 1e6
    # Wait for the exit without reaping, so /proc/PID is still there.
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    try:
        own = own_cpu_ns(pid) / 1e6
    except OSError:
        own = float("nan")
    _, status, ru = os.wait4(pid, 0)
    if exit_code(status) != 1:
        sys.exit(f"bench: {' '.join(argv)} exited {exit_code(status)}, expected 1")
    # Includes the two reaped `false` children (see the module docstring).
    total = (ru.ru_utime + ru.ru_stime) * 1000
    return total, own, in_window


def bench_cpu(retry, reps, devnull):
    false = which_abs("false")
    sleeping = [retry, "--max", "2", "--base", "2s", "--jitter", "none", "--", false]
    baseline = [retry, "--max", "2", "--base", "0s", "--jitter", "none", "--", false]
    cpu_run(baseline, devnull)  # warm-up
    rows = []
    for _ in range(reps):
        # 0.5 s to 1.9 s after the spawn: well inside the 2 s sleep.
        s_total, s_own, s_window = cpu_run(sleeping, devnull, window=(0.5, 1.9))
        b_total, b_own, _ = cpu_run(baseline, devnull)
        rows.append((s_total, b_total, s_own, b_own, s_window))
    return {
        "reps": reps,
        "sleep_total_ms": median(r[0] for r in rows),
        "base_total_ms": median(r[1] for r in rows),
        "delta_ms": median(r[0] - r[1] for r in rows),
        "sleep_own_ms": median(r[2] for r in rows),
        "base_own_ms": median(r[3] for r in rows),
        "delta_own_ms": median(r[2] - r[3] for r in rows),
        "window_ms": median(r[4] for r in rows),
    }


# Binary size ------------------------------------------------------------------

def has_symtab(path):
    """Whether an ELF file still has a .symtab section (i.e. is not stripped)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return None  # not a 64-bit ELF: unknown
    end = "<" if data[5] == 1 else ">"
    shoff, = struct.unpack_from(end + "Q", data, 0x28)
    shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
    for i in range(shnum):
        sh_type, = struct.unpack_from(end + "I", data, shoff + i * shentsize + 4)
        if sh_type == 2:  # SHT_SYMTAB
            return True
    return False


def bench_size(retry):
    size = os.path.getsize(retry)
    symtab = has_symtab(retry)
    note = "stripped"
    if symtab:
        strip = shutil.which("strip")
        if strip:
            with tempfile.TemporaryDirectory() as d:
                copy = os.path.join(d, "retry")
                shutil.copy(retry, copy)
                subprocess.run([strip, copy], check=True)
                size = os.path.getsize(copy)
            note = "after strip"
        else:
            note = "NOT stripped (no strip tool)"
    elif symtab is None:
        note = "not a 64-bit ELF"
    return {"bytes": size, "mib": size / MIB, "note": note}


# Main -------------------------------------------------------------------------

def print_overhead(over):
    """The overhead loop's table: every command, as a ratio to the C floor."""
    by = over["by"]
    base = by.get("floor", by["true"])["ms"]
    base_name = "floor" if "floor" in by else "true"
    print()
    print(f"Overhead, {over['runs']} interleaved runs each (`true` = {over['true_path']}):")
    print()
    base_cpu = by.get("floor", by["true"])["cpu_ms"]
    print(f"| command | median | p90 | x {base_name} | minor faults | user+sys CPU "
          f"| CPU x {base_name} |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in by.items():
        shown = " ".join(os.path.basename(a) if i == 0 else a
                         for i, a in enumerate(over["argv"][name]))
        print(f"| {name}: `{shown}` | {r['ms']:.3f} ms | {r['p90_ms']:.3f} ms | "
              f"{r['ms'] / base:.2f} | {r['minflt']:.0f} | {r['cpu_ms']:.2f} ms | "
              f"{r['cpu_ms'] / base_cpu:.2f} |")
    print()


def build_default():
    """Build the default and the static release binaries; return their paths."""
    for extra in ([], ["--config", paths.STATIC_CONFIG]):
        print(f"bench: cargo build --release {' '.join(extra)} ...", file=sys.stderr)
        subprocess.run(["cargo", "build", "--release", "--locked", "--quiet", *extra],
                       cwd=REPO, check=True)
    return paths.release_binary(), paths.static_binary()


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def verdict(ok):
    return "PASS" if ok else "**FAIL**"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", metavar="PATH",
                    help="retry binary to measure (default: build the release binaries, "
                         "the static one timed beside it as the variant `static`)")
    ap.add_argument("--attempt", metavar="PATH",
                    help="attempt-cli's `attempt` binary (default: target/bench-tools/bin/attempt, "
                         "then PATH; left out when missing)")
    ap.add_argument("--joshdk", metavar="PATH",
                    help="joshdk/retry's binary (default: target/bench-tools/go/retry; "
                         "left out when missing)")
    ap.add_argument("--variant", metavar="NAME=PATH", action="append", default=[],
                    help="another retry build to time in the overhead loop (repeatable)")
    ap.add_argument("--overhead-only", action="store_true",
                    help="run only the overhead loop")
    ap.add_argument("--runs", type=int, metavar="N",
                    help="runs of each command in the overhead loop (default 400)")
    ap.add_argument("--quick", action="store_true",
                    help="fewer repetitions: a smoke run, not figures to quote")
    args = ap.parse_args()

    if args.binary:
        built = os.path.abspath(args.binary)
    else:
        built, static = build_default()
        args.variant.insert(0, f"static={static}")
    if not os.access(built, os.X_OK):
        sys.exit(f"bench: {built} is not an executable file")

    if args.quick:
        n_over, warm, n_rss, n_sleeps, n_cpu = 50, 3, 1, 50, 1
    else:
        n_over, warm, n_rss, n_sleeps, n_cpu = 400, 10, 3, 200, 7

    if args.runs:
        n_over = args.runs
    variants = []
    for v in args.variant:
        name, sep, path = v.partition("=")
        if not sep or not os.access(path, os.X_OK):
            sys.exit(f"bench: --variant expects NAME=PATH to an executable, got {v!r}")
        variants.append((name, path))
    workdir = tempfile.TemporaryDirectory(prefix="retry-bench-")
    retry = installed_copy(built, workdir.name)
    variants = [(name, installed_copy(path, workdir.name)) for name, path in variants]
    floor = build_floor(workdir.name)
    attempt = find_attempt(args.attempt)
    joshdk = find_joshdk(args.joshdk)
    if attempt is None:
        print("bench: warning: attempt-cli not found, left out "
              "(cargo install attempt-cli --root target/bench-tools)", file=sys.stderr)
    if joshdk is None:
        print("bench: warning: joshdk/retry not found, left out (GOBIN=$PWD/target/bench-tools/go "
              "go install github.com/joshdk/retry@v1.4.0)", file=sys.stderr)

    devnull = Devnull()
    load_before = loadavg()
    step = lambda name: print(f"bench: {name} ...", file=sys.stderr, flush=True)
    step(f"overhead ({n_over} interleaved runs each)")
    over = bench_overhead(retry, n_over, warm, devnull, floor, attempt, variants, joshdk)
    print_overhead(over)
    if args.overhead_only:
        print(f"- load average (1 min) before/after: {load_before} / {loadavg()}; "
              f"{os.cpu_count()} CPUs")
        return 0
    step(f"peak RSS while sleeping ({n_rss} runs)")
    rss = bench_rss(retry, n_rss, devnull)
    step(f"timer precision ({n_sleeps} sleeps)")
    timer = bench_timer(retry, n_sleeps, devnull)
    step(f"CPU time during a 2 s sleep ({n_cpu} pairs)")
    cpu = bench_cpu(retry, n_cpu, devnull)
    size = bench_size(retry)
    load_after = loadavg()

    rows = [
        (f"Overhead: `retry --max 1 -- true` vs `true` (median, {over['runs']} interleaved runs each)",
         f"+{over['added_ms']:.3f} ms ({over['retry_ms']:.3f} vs {over['direct_ms']:.3f} ms)",
         "< 1 ms added", verdict(over["added_ms"] < 1.0)),
        ("Overhead: `retry --max 1 -- true` vs the C floor `floor true` (same loop)",
         "n/a" if over["floor_ratio"] is None else
         f"x{over['floor_ratio']:.2f} ({over['retry_ms']:.3f} vs {over['by']['floor']['ms']:.3f} ms)",
         "<= x1.50", "n/a" if over["floor_ratio"] is None else verdict(over["floor_ratio"] <= 1.5)),
        ("Faster than the other retry tools (same loop)",
         ", ".join(f"{n} {ms:.3f} ms" for n, ms in over["other_tools"].items()) or "none installed",
         f"retry's {over['retry_ms']:.3f} ms below each",
         verdict(all(over["retry_ms"] < ms for ms in over["other_tools"].values()))
         if over["other_tools"] else "n/a"),
        (f"Peak RSS in a backoff sleep (VmHWM, max of {rss['reps']})",
         f"{rss['hwm_mib']:.2f} MiB (VmRSS {rss['rss_mib']:.2f} MiB, "
         f"of which anonymous {rss['anon_mib']:.2f} MiB; Private_Dirty "
         f"{rss['dirty_kib']} KiB, Pss {rss['pss_kib']} KiB; "
         f"{rss['threads']} thread{'s' if rss['threads'] != 1 else ''})",
         "-", "info"),
        (f"Private_Dirty in a backoff sleep (max of {rss['reps']})",
         f"{rss['dirty_kib']} KiB", "< 512 KiB", verdict(rss["dirty_kib"] < 512)),
        (f"Timer overshoot, planned vs actual delay ({timer['sleeps']} sleeps of 0-20 ms)",
         f"median {timer['median_ms']:.3f} ms, p90 {timer['p90_ms']:.3f} ms, "
         f"max {timer['max_ms']:.3f} ms",
         "median <= 1.5 ms", verdict(timer["median_ms"] <= 1.5)),
        (f"CPU time during a 2 s sleep (wait4, minus 0 s baseline, median of {cpu['reps']})",
         f"{cpu['delta_ms']:.3f} ms (whole run {cpu['sleep_total_ms']:.3f} ms "
         f"incl. children; retry alone {cpu['sleep_own_ms']:.3f} ms)",
         "<= 5 ms", verdict(cpu["delta_ms"] <= 5.0)),
        (f"Release binary size ({size['note']})",
         f"{size['bytes']:,} bytes ({size['mib']:.2f} MiB)", "-", "info"),
    ]

    print()
    if args.quick:
        print("_Quick run: few repetitions, not figures to quote._")
        print()
    print("| Benchmark | Result | Target | Status |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    print(f"- binary: {built} (timed as a copy)")
    print(f"- load average (1 min) before/after: {load_before} / {load_after}; "
          f"{os.cpu_count()} CPUs")
    print(f"- timer: min overshoot {timer['min_ms']:.3f} ms, planned total "
          f"{timer['planned_total_ms']:.1f} ms")
    print(f"- cpu: 2 s run {cpu['sleep_total_ms']:.3f} ms, 0 s baseline {cpu['base_total_ms']:.3f} ms "
          f"(wait4, incl. children); retry alone {cpu['sleep_own_ms']:.3f} vs "
          f"{cpu['base_own_ms']:.3f} ms, difference {cpu['delta_own_ms']:.3f} ms; "
          f"from 0.5 s to 1.9 s into the sleep {cpu['window_ms']:.3f} ms (schedstat)")
    failed = [r[0] for r in rows if r[3].endswith("FAIL**")]
    print()
    if failed:
        print(f"FAIL: {len(failed)} target(s) missed")
    else:
        print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
