#!/usr/bin/env python3
"""Keep-alive requests per server core-second of the same axum `Router` on `web` and on
`axum::serve`, beside `web` with no router and bare hyper, loaded by turns.

    python3 bench/axum_ratio.py [TURNS]      (default 12 turns of 1 s per server)

`web-bench compare` measures each server for 5 s, one after another: on a machine whose speed
drifts (a shared host) two servers measured a minute apart differ by more than the servers
do. Here all four servers run at once, each with one worker pinned to CPU 0 (idle but for its
turn), and `wrk` (64 connections, pinned to CPU 1) loads them by turns of 1 s, in an order
that reverses every turn. Each server's figure is its requests over the CPU time its process
(every thread) spent during its turns; a drift slower than a turn cancels out of the ratios.
Prints each server's requests per core-second, its ratio to axum's, and the median and
quartiles of `web-tower`'s ratio turn by turn.

Needs `wrk`, `taskset` and two CPUs. Builds `bench/peers` and `web`'s `hello` (release). The
servers listen on free ports of 127.0.0.1 and are ended by their PIDs; every wait is bounded.
"""

import os
import re
import statistics
import subprocess
import sys

from instructions import connect, free_port  # bench/instructions.py, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "bench", "peers", "target", "release")
SERVERS = {
    "web": os.path.join(ROOT, "target", "release", "examples", "hello"),
    "hyper": os.path.join(PEERS, "hyper_hello"),
    "web-tower": os.path.join(PEERS, "web_tower_hello"),
    "axum": os.path.join(PEERS, "axum_hello"),
}
TURN_SECONDS = 1
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User and system CPU of every thread of `pid`, in seconds."""
    ticks = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / TICKS


def load(port, seconds):
    """Requests `wrk` completed in `seconds` against `port`."""
    out = subprocess.run(
        ["taskset", "-c", "1", "wrk", "-t1", "-c64", f"-d{seconds}s",
         f"http://127.0.0.1:{port}/"],
        capture_output=True, text=True, timeout=seconds + 30,
    ).stdout
    found = re.search(r"(\d+) requests in", out)
    if not found:
        raise RuntimeError(f"wrk printed no count:\n{out}")
    return int(found.group(1))


def build():
    for manifest, args in ((ROOT, ["--example", "hello"]),
                           (os.path.join(ROOT, "bench", "peers"), [])):
        subprocess.run(["cargo", "build", "--release", "-q", *args], cwd=manifest, check=True)


def main():
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    for tool in ("wrk", "taskset"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
            sys.exit(f"axum_ratio: {tool} is needed")
    if (os.cpu_count() or 1) < 2:
        sys.exit("axum_ratio: two CPUs are needed")
    build()
    running = {}
    try:
        for name, binary in SERVERS.items():
            port = free_port()
            proc = subprocess.Popen(
                ["taskset", "-c", "0", binary, "--port", str(port), "--workers", "1"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            running[name] = (proc, port)
            connect(port, limit=30).close()
        done = {name: [0, 0.0] for name in SERVERS}
        per_turn = {name: [] for name in SERVERS}
        names = list(SERVERS)
        for turn in range(turns):
            for name in names if turn % 2 == 0 else names[::-1]:
                proc, port = running[name]
                load(port, 1)  # warm-up, not counted
                before = cpu_seconds(proc.pid)
                n = load(port, TURN_SECONDS)
                cpu = cpu_seconds(proc.pid) - before
                done[name][0] += n
                done[name][1] += cpu
                per_turn[name].append(n / cpu if cpu > 0 else 0.0)
        axum = done["axum"][0] / done["axum"][1]
        for name in names:
            rate = done[name][0] / done[name][1]
            print(f"{name:10} {rate:9.0f} requests per core-second  {rate / axum:5.2f}x axum")
        ratios = [t / a for t, a in zip(per_turn["web-tower"], per_turn["axum"]) if a > 0]
        if len(ratios) >= 2:
            q = statistics.quantiles(ratios, n=4)
            print(f"web-tower / axum turn by turn: median {statistics.median(ratios):.2f}, "
                  f"quartiles {q[0]:.2f}-{q[2]:.2f} ({len(ratios)} turns)")
    finally:
        for proc, _ in running.values():
            proc.kill()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
