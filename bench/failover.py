#!/usr/bin/env python3
"""A herd sharing a pace through Redis while the master is killed.

N `retry --http` processes (default 200) share one group's `--pace RATE`
(default 50/s) with `--max-time 20s` against a loopback server that answers
503 to everything and counts requests. The store is a Sentinel-managed
master (a replica and three sentinels, down-after 1 s) or a Cluster (three
masters, three replicas, node timeout 1 s), started here on 127.0.0.1 with
persistence off. Halfway through, the master holding the group is killed
with SIGKILL.

Reported, for each topology:
- the busiest one-second window of retries (attempts after the first, from
  the runs' JSON logs), against RATE: during the failover (from the kill to
  one second after the first call reached the new master); while the runs
  that fell back rejoin the store (until one second after the last says it
  is in use again: a run that paced itself alone holds a slot of its own for
  up to one turn of the group's rotation, while the store hands the same
  time to the runs already back); and outside both (after the first second
  of the herd, whose first attempts are never paced);
- how many runs warned that they ran without the store;
- how long Redis took to fail over (until the replica was a master that the
  sentinels name or that the cluster routes to, polled every 20 ms), and how
  long until the first script call reached it (its EVALSHA count, polled);
- the longest run (from its start to its exit), against --max-time: a store
  call may take at most a quarter of the time left, so a run never needs
  more than --max-time, plus the moment it takes to start and exit.

    python3 bench/failover.py [--binary PATH] [--clients 200] [--rate 50]
                              [--topology sentinel,cluster] [--rounds 1]

Needs python3, redis-server, redis-sentinel, redis-cli and the release
binary (`cargo build --release`).
"""

import os
import sys

# bench/http.py would shadow the standard library's http package.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import argparse  # noqa: E402
import calendar  # noqa: E402
import http.server  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

sys.path.append(_here)
import paths  # noqa: E402

MAX_TIME = 20.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(port, *words):
    out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *words],
                         capture_output=True, text=True, timeout=60)
    return out.stdout


def settle(what, ready, within=30.0, every=0.05):
    until = time.monotonic() + within
    while not ready():
        if time.monotonic() > until:
            raise SystemExit(f"{what}: not within {within}s")
        time.sleep(every)


def server_args(port):
    return ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--repl-diskless-sync-delay", "0", "--maxclients", "10000"]


def spawn(program, d, args):
    os.makedirs(d, exist_ok=True)
    return subprocess.Popen([program, *args], cwd=d, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


class Sentinel:
    def __init__(self, work):
        self.master = free_port()
        self.replica = free_port()
        self.procs = {self.master: spawn("redis-server", f"{work}/m", server_args(self.master))}
        self.procs[self.replica] = spawn(
            "redis-server", f"{work}/r",
            server_args(self.replica) + ["--replicaof", "127.0.0.1", str(self.master)])
        settle("replica", lambda: "state=online" in cli(self.master, "INFO", "replication"))
        self.sentinels = []
        for i in range(3):
            port, d = free_port(), f"{work}/s{i}"
            os.makedirs(d)
            with open(f"{d}/s.conf", "w") as f:
                f.write(f"port {port}\nbind 127.0.0.1\ndir {d}\nmaxclients 10000\n"
                        f"sentinel monitor herd 127.0.0.1 {self.master} 2\n"
                        "sentinel down-after-milliseconds herd 1000\n"
                        "sentinel failover-timeout herd 3000\n")
            self.procs[port] = spawn("redis-sentinel", d, [f"{d}/s.conf"])
            self.sentinels.append(port)
        for p in self.sentinels:
            settle("sentinels", lambda p=p: cli(p, "SENTINEL", "SENTINELS", "herd")
                   .splitlines().count("name") == 2)
        self.url = "redis+sentinel://" + ",".join(
            f"127.0.0.1:{p}" for p in self.sentinels) + "/herd"

    def kill(self):
        """Kills the master; returns the port that is to take its place."""
        self.procs[self.master].kill()
        return self.replica

    def promoted(self, port):
        names = [cli(s, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "herd").split()
                 for s in self.sentinels]
        return (cli(port, "ROLE").startswith("master")
                and all(n[1:2] == [str(port)] for n in names))

    def close(self):
        for p in self.procs.values():
            p.kill()
            p.wait()


class Cluster:
    def __init__(self, work):
        self.ports = [free_port() for _ in range(6)]
        self.procs = {}
        for i, p in enumerate(self.ports):
            self.procs[p] = spawn("redis-server", f"{work}/n{i}", server_args(p) + [
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "1000", "--cluster-port", str(free_port())])
        for p in self.ports:
            settle("node", lambda p=p: "PONG" in cli(p, "PING"))
        cli(self.ports[0], "--cluster", "create", *[f"127.0.0.1:{p}" for p in self.ports],
            "--cluster-replicas", "1", "--cluster-yes")
        settle("cluster", lambda: all("cluster_state:ok" in cli(p, "CLUSTER", "INFO")
                                      for p in self.ports))
        self.url = f"redis+cluster://127.0.0.1:{self.ports[0]},127.0.0.1:{self.ports[1]}"

    def shard(self, key):
        slot = int(cli(self.ports[0], "CLUSTER", "KEYSLOT", key))
        nodes = [line.split() for line in cli(self.ports[0], "CLUSTER", "NODES").splitlines()]
        port = lambda n: int(n[1].split("@")[0].rsplit(":", 1)[1])  # noqa: E731
        for n in nodes:
            if "master" in n[2]:
                for r in n[8:]:
                    a, _, b = r.partition("-")
                    if int(a) <= slot <= int(b or a):
                        replica = next(m for m in nodes if m[3] == n[0])
                        return port(n), port(replica)
        raise SystemExit(f"no master for slot {slot}")

    def kill(self):
        master, replica = self.shard("retry:{herd}:state")
        self.procs[master].kill()
        self.alive = [p for p in self.ports if p != master]
        return replica

    def promoted(self, port):
        return (cli(port, "ROLE").startswith("master")
                and all("cluster_state:ok" in cli(p, "CLUSTER", "INFO") for p in self.alive))

    def close(self):
        for p in self.procs.values():
            p.kill()
            p.wait()


def scripts(port):
    n = 0
    for line in cli(port, "INFO", "commandstats").splitlines():
        if line.startswith(("cmdstat_evalsha:", "cmdstat_eval:")):
            n += int(line.split("calls=")[1].split(",")[0])
    return n


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    arrivals = []

    def do_GET(self):
        Handler.arrivals.append(time.time())
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def epoch(rfc3339):
    t = time.strptime(rfc3339[:19], "%Y-%m-%dT%H:%M:%S")
    return calendar.timegm(t) + float("0" + rfc3339[19:-1])


def busiest(times, start, end):
    ts = sorted(t for t in times if start <= t < end)
    best, j = 0, 0
    for i, t in enumerate(ts):
        while round((t - ts[j]) * 1000) >= 1000:
            j += 1
        best = max(best, i - j + 1)
    return best


def run(binary, topology, clients, rate, url):
    work = tempfile.mkdtemp(prefix="failover-")
    deployment = (Sentinel if topology == "sentinel" else Cluster)(work)
    Handler.arrivals = []
    log_path = f"{work}/log"
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    args = [binary, "--http", url, "--group", "herd", "--state", deployment.url,
            "--pace", f"{rate}/s", "--max-time", f"{MAX_TIME:g}s", "--max", "100000",
            "--base", "100ms", "--cap", "1s", "--log-format", "json", "-v"]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": work}
    started = time.time()
    procs = [(time.monotonic(), subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL,
                                                 stdout=subprocess.DEVNULL, stderr=log))
             for _ in range(clients)]
    os.close(log)
    time.sleep(MAX_TIME / 2 - (time.time() - started))
    new = deployment.kill()
    killed = time.time()
    promoted = used = None
    base = None
    while promoted is None or used is None:
        now = time.time()
        if promoted is None and deployment.promoted(new):
            promoted = now
        n = scripts(new)
        if base is None:
            base = n
        elif used is None and n > base:
            used = now
        if now - killed > MAX_TIME:
            break
        time.sleep(0.02)
    longest = 0.0
    for t0, p in procs:
        p.wait()
        longest = max(longest, time.monotonic() - t0)
    deployment.close()
    retries, alone, back = [], set(), [killed]
    with open(log_path) as f:
        for line in f:
            e = json.loads(line)
            if e["event"] == "attempt_start" and e["attempt"] > 1:
                retries.append(epoch(e["time"]))
            elif e["event"] == "warning" and "running without it" in e.get("message", ""):
                alone.add(e["pid"])
            elif e["event"] == "note" and e.get("message", "").endswith("in use again"):
                back.append(epoch(e["time"]))
    shutil.rmtree(work, ignore_errors=True)
    failover_end = (used or killed + MAX_TIME) + 1.0
    rejoined = max(failover_end, max(back) + 1.0)
    return {
        "requests": len(Handler.arrivals),
        "during": busiest(retries, killed, failover_end),
        "rejoining": busiest(retries, failover_end, rejoined),
        "rejoined": rejoined - killed,
        "outside": max(busiest(retries, started + 1.0, killed),
                       busiest(retries, rejoined, started + MAX_TIME + 5)),
        "alone": len(alone),
        "redis": (promoted - killed) if promoted else None,
        "first": (used - killed) if used else None,
        "longest": longest,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=paths.release_binary())
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--rate", type=int, default=50)
    ap.add_argument("--topology", default="sentinel,cluster")
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"{a.clients} clients, --pace {a.rate}/s --max-time {MAX_TIME:g}s --base 100ms "
          f"--cap 1s; master killed at {MAX_TIME / 2:g} s; load average before: "
          f"{os.getloadavg()[0]:.2f}")
    print()
    print("| topology | requests | busiest s: failover | rejoining (until) | outside "
          "| ran without the store | Redis failed over in | first call to the new master "
          "| longest run |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    fmt = lambda v: "never" if v is None else f"{v:.2f} s"  # noqa: E731
    for _ in range(a.rounds):
        for topology in a.topology.split(","):
            r = run(a.binary, topology, a.clients, a.rate, url)
            print(f"| {topology} | {r['requests']} | {r['during']} "
                  f"| {r['rejoining']} ({r['rejoined']:.1f} s) | {r['outside']} "
                  f"| {r['alone']} | {fmt(r['redis'])} | {fmt(r['first'])} "
                  f"| {r['longest']:.2f} s |", flush=True)
    print()
    print(f"Targets: busiest second at most {2 * a.rate} during the failover (rejoining "
          f"included) and {a.rate * 1.1:g} outside it; the first call to the new master within Redis's "
          f"failover time + 1 s; every run within {MAX_TIME:g} s + the store's bound.")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    server.shutdown()


if __name__ == "__main__":
    main()
