#!/usr/bin/env python3
"""Server instructions per exchange under callgrind: steady where wall-clock figures are not.

    python3 bench/instructions.py [--baseline REV | --no-baseline] [TARGET_DIR ...]

For each build (a `target` directory holding `release/examples/hello` and `ws_echo`; default
`target`) and the baseline commit (default 99850bc, the figure issue 53 holds the tree to:
built once into `target/instructions-baseline/REV` from a `git worktree` of it), runs the server with one worker under `valgrind --tool=callgrind`, drives it from
this process over 127.0.0.1 and reads the instructions it executed. Each scenario runs twice,
with FEW and MANY exchanges; the difference over the difference in exchanges is the cost of
one, start and stop cancelled out:

- keep-alive: one `GET /` per round trip on one connection;
- pipelined: 16 `GET /` written at once, their replies read, on one connection;
- ws-echo: a 32-byte text message and its echo on one WebSocket.

Prints one line per scenario and build, and the tree's count over the baseline's. The servers run on free ports of 127.0.0.1 and are
ended by their PIDs; every wait is bounded.
"""

import base64
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

FEW, MANY = 2_000, 12_000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(port, limit=60):
    until = time.time() + limit
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=30)
        except OSError:
            if time.time() > until:
                raise
            time.sleep(0.05)


def read_replies(sock, n, buf):
    """Reads `n` replies of `hello` (each ends with its 13-byte body)."""
    got = 0
    while got < n:
        at = buf.find(b"\r\n\r\n")
        if at >= 0 and len(buf) >= at + 4 + 13:
            buf = buf[at + 4 + 13:]
            got += 1
            continue
        more = sock.recv(65536)
        if not more:
            raise RuntimeError("the server closed early")
        buf += more
    return buf


GET = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


def keep_alive(port, n):
    s = connect(port)
    buf = b""
    for _ in range(n):
        s.sendall(GET)
        buf = read_replies(s, 1, buf)
    s.close()


def pipelined(port, n):
    s = connect(port)
    buf = b""
    for _ in range(n // 16):
        s.sendall(GET * 16)
        buf = read_replies(s, 16, buf)
    s.close()


def ws_echo(port, n):
    s = connect(port)
    key = base64.b64encode(os.urandom(16))
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    buf = buf[buf.find(b"\r\n\r\n") + 4:]
    payload = b"x" * 32
    mask = b"\x01\x02\x03\x04"
    frame = b"\x81" + bytes([0x80 | 32]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    for _ in range(n):
        s.sendall(frame)
        while len(buf) < 2 + 32:
            buf += s.recv(65536)
        buf = buf[2 + 32:]
    s.close()


SCENARIOS = [
    ("keep-alive GET", "hello", keep_alive, 1),
    ("pipelined GET (16 a read)", "hello", pipelined, 1),
    ("WebSocket echo, 32 B text", "ws_echo", ws_echo, 0),
]


def instructions(target, example, drive, n, counts_requests):
    port = free_port()
    out = tempfile.NamedTemporaryFile(suffix=".callgrind", delete=False).name
    args = [os.path.join(target, "release", "examples", example), "--port", str(port), "--workers", "1"]
    if counts_requests:
        args += ["--requests", str(n)]
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        drive(port, n)
        if not counts_requests:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with open(out) as f:
        text = f.read()
    os.unlink(out)
    total = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.M)
    if not total:
        raise RuntimeError(f"no total in callgrind's output for {example}")
    return int(total.group(1))


BASELINE = "99850bc"
EXAMPLES = ["hello", "ws_echo"]


def build_baseline(rev):
    """The target directory of `rev` built in release (made once, then reused)."""
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                          text=True, check=True).stdout.strip()
    home = os.path.join(root, "target", "instructions-baseline", rev)
    tree, target = os.path.join(home, "tree"), os.path.join(home, "target")
    if not os.path.isdir(tree):
        os.makedirs(home, exist_ok=True)
        subprocess.run(["git", "-C", root, "worktree", "add", "--detach", tree, rev], check=True,
                       stdout=subprocess.DEVNULL)
    if not all(os.path.exists(os.path.join(target, "release", "examples", e)) for e in EXAMPLES):
        args = ["cargo", "build", "--release"] + [a for e in EXAMPLES for a in ("--example", e)]
        subprocess.run(args, cwd=tree, check=True, env={**os.environ, "CARGO_TARGET_DIR": target})
    return target


def main():
    args = sys.argv[1:]
    baseline = BASELINE
    if args[:1] == ["--no-baseline"]:
        baseline, args = None, args[1:]
    elif args[:1] == ["--baseline"] and len(args) > 1:
        baseline, args = args[1], args[2:]
    targets = args or ["target"]
    base = build_baseline(baseline) if baseline else None
    for name, example, drive, counts in SCENARIOS:
        figures = {}
        for target in targets + ([base] if base else []):
            few = instructions(target, example, drive, FEW, counts)
            many = instructions(target, example, drive, MANY, counts)
            figures[target] = (many - few) / (MANY - FEW)
            label = f"{baseline} (baseline)" if target == base else target
            print(f"{name:28} {label:40} {figures[target]:8.0f} instructions per exchange",
                  flush=True)
        if base:
            for target in targets:
                ratio = figures[target] / figures[base]
                print(f"{name:28} {target + ' / baseline':40} {ratio:8.3f}", flush=True)


if __name__ == "__main__":
    main()
