#!/usr/bin/env python3
"""How many posts a second a fleet of chat instances sustains on one Redis and on a Redis
Cluster before delivery slows: the figure that says whether sharding the fleet's Redis helps.

    cargo build --release --features redis --example chat
    python3 bench/fleet_scale.py [--instances 3] [--rooms 60] [--seconds 3]

For each Redis — one `redis-server`, a cluster of 1 master, one of 3 (each master with a
replica) — it starts
`--instances` chat instances on it (`--redis`, one worker each), puts one event-stream member
(`GET /sse?room=R`) of every room on every instance, and posts (`POST /api/messages`) at rising
rates, spread over the instances and rooms, each post carrying the time it was sent. It reads
every delivery on every member and prints, per rate: the posts a second that got through, the
delivery delay's median and 99th percentile (from the post sent to its event read, on every
instance), and the CPU of the chat instances and of the Redis servers per post. It stops
raising the rate once the 99th percentile passes 50 ms or posts fail.

Every process is started here on free ports of 127.0.0.1 and stopped by its PID; every wait is
bounded. Each post's caller is a distinct `X-Forwarded-For` address (`--proxies 1`), so the
chat's limit of 5 writes a second per caller admits them (its counting in Redis is part of the
cost measured). On this 2-core machine the load generator shares the cores with everything
else: the figures compare the two setups in one run, they are not a capacity.
"""

import argparse
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "interop"))
from fleet_procs import free_port, need, redis_command, stop, wait_http  # noqa: E402

CHAT = os.path.join(os.path.dirname(__file__), "..", "target", "release", "examples", "chat")
TICKS = os.sysconf("SC_CLK_TCK")
RATES = [250, 500, 1000, 2000, 4000, 8000, 16000]
P99_LIMIT = 0.050


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / TICKS


class Redis:
    """One redis-server (`masters` 0), or a cluster of `masters` masters (1 or 3), each with a
    replica; stopped by PID."""

    def __init__(self, masters, tmp):
        self.procs = []
        self.ports = []
        server = need("redis-server")
        cluster = masters > 0
        count = 2 * masters if cluster else 1
        for i in range(count):
            port = self.free_pair() if cluster else free_port()
            own = os.path.join(tmp, f"redis-{port}")
            os.makedirs(own)
            args = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--protected-mode", "no", "--dir", own]
            if cluster:
                args += ["--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
                         "--repl-diskless-sync-delay", "0"]
            self.procs.append(subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            self.ports.append(port)
        for port in self.ports:
            self.wait(lambda: redis_command(port, "PING") == "+PONG", "redis-server")
        if masters == 1:
            # (`redis-cli --cluster create` wants 3 masters: one is made by hand.)
            master, replica = self.ports
            redis_command(master, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
            redis_command(replica, "CLUSTER", "MEET", "127.0.0.1", str(master))
            master_id = self.info(master, "CLUSTER", "MYID")
            self.wait(lambda: redis_command(replica, "CLUSTER", "REPLICATE", master_id) == "+OK",
                      "the replica")
        elif cluster:
            subprocess.run([need("redis-cli"), "--cluster", "create",
                            *[f"127.0.0.1:{p}" for p in self.ports],
                            "--cluster-replicas", "1", "--cluster-yes"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True, timeout=60)
        if cluster:
            for port in self.ports:
                self.wait(lambda: "cluster_state:ok" in (self.info(port, "CLUSTER", "INFO")),
                          "the cluster")
            self.url = "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports) + "/"
        else:
            self.url = f"redis://127.0.0.1:{self.ports[0]}/"

    @staticmethod
    def free_pair():
        while True:
            port = free_port()
            if port > 55535:
                continue
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10000))
                    return port
                except OSError:
                    pass

    @staticmethod
    def info(port, *args):
        """A bulk reply's text (CLUSTER INFO, CLUSTER MYID); "" when none came."""
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.sendall(b"*%d\r\n" % len(args) + b"".join(
                    b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args))
                data = b""
                while b"\r\n" not in data:
                    chunk = s.recv(65536)
                    if not chunk:
                        return ""
                    data += chunk
                head, body = data.split(b"\r\n", 1)
                if not head.startswith(b"$"):
                    return ""
                while len(body) < int(head[1:]):
                    chunk = s.recv(65536)
                    if not chunk:
                        return ""
                    body += chunk
                return body[:int(head[1:])].decode(errors="replace")
        except (OSError, ValueError):
            return ""

    @staticmethod
    def wait(ok, what, seconds=30):
        end = time.time() + seconds
        while time.time() < end:
            if ok():
                return
            time.sleep(0.05)
        raise RuntimeError(f"{what} did not start")

    def pids(self):
        return [p.pid for p in self.procs]

    def close(self):
        for p in self.procs:
            stop(p)


class Members:
    """One event-stream member per room and instance; every delivery's delay, recorded."""

    def __init__(self, ports, rooms):
        self.sel = selectors.DefaultSelector()
        self.delays = []
        self.lock = threading.Lock()
        self.running = True
        n = 0
        for port in ports:
            for room in rooms:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                n += 1
                s.sendall((f"GET /sse?room={room} HTTP/1.1\r\nHost: x\r\n"
                           f"X-Forwarded-For: 10.9.{n // 250}.{n % 250}\r\n"
                           f"Last-Event-ID: 0\r\n\r\n").encode())
                s.setblocking(False)
                self.sel.register(s, selectors.EVENT_READ, [b""])
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        while self.running:
            for key, _ in self.sel.select(timeout=0.1):
                try:
                    data = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    self.sel.unregister(key.fileobj)
                    continue
                now = time.monotonic()
                buf = key.data[0] + data
                *lines, key.data[0] = buf.split(b"\n")
                for line in lines:
                    if line.startswith(b"data: "):
                        try:
                            sent = float(json.loads(line[6:])["text"])
                        except (ValueError, KeyError):
                            continue
                        with self.lock:
                            self.delays.append(now - sent)

    def take(self):
        with self.lock:
            out, self.delays = self.delays, []
        return out

    def close(self):
        self.running = False
        self.thread.join(5)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()


def post_at(port, rooms, rate, seconds, first_caller, results):
    """Posts at `rate` a second for `seconds` on one keep-alive connection, those due every
    10 ms written at once (pipelined) and their replies read; (sent, failed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    sent = failed = 0
    start = time.monotonic()
    buf = b""
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            break
        due = int((now - start) * rate) + 1 - sent
        if due <= 0:
            time.sleep(0.01)
            continue
        out = []
        for n in range(sent, sent + due):
            room = rooms[n % len(rooms)]
            caller = first_caller + n
            body = repr(time.monotonic()).encode()
            out.append((f"POST /api/messages?room={room} HTTP/1.1\r\nHost: x\r\n"
                        f"X-Forwarded-For: 10.{caller >> 16 & 255}.{caller >> 8 & 255}."
                        f"{caller & 255}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)
        s.sendall(b"".join(out))
        for _ in range(due):
            while b"\r\n\r\n" not in buf:
                buf += s.recv(65536)
            head, buf = buf.split(b"\r\n\r\n", 1)
            length = int(next(l.split(b":")[1] for l in head.split(b"\r\n")
                              if l.lower().startswith(b"content-length")))
            while len(buf) < length:
                buf += s.recv(65536)
            buf = buf[length:]
            failed += not head.startswith(b"HTTP/1.1 201")
        sent += due
    s.close()
    results.append((sent, failed))


def run(masters, args, tmp):
    redis = Redis(masters, tmp)
    chats = []
    try:
        for _ in range(args.instances):
            port = free_port()
            proc = subprocess.Popen([CHAT, "--port", str(port), "--workers", "1", "--proxies", "1",
                                     "--redis", redis.url], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if not wait_http(f"http://127.0.0.1:{port}/api/stats", proc):
                raise RuntimeError("a chat instance did not start")
            chats.append((proc, port))
        rooms = [f"room{i}" for i in range(args.rooms)]
        members = Members([p for _, p in chats], rooms)
        time.sleep(2)  # every room subscribed on every instance
        members.take()
        name = f"cluster, {masters} master{'s' if masters > 1 else ''}" if masters else "one redis-server"
        caller = 1
        for rate in RATES:
            chat_cpu, redis_cpu = cpu_seconds([p.pid for p, _ in chats]), cpu_seconds(redis.pids())
            results = []
            threads = [threading.Thread(target=post_at,
                                        args=(port, rooms, rate / len(chats), args.seconds,
                                              caller + i * 1_000_000, results))
                       for i, (_, port) in enumerate(chats)]
            caller += 100_000
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            time.sleep(0.5)  # the last deliveries
            delays = sorted(members.take())
            chat_cpu = cpu_seconds([p.pid for p, _ in chats]) - chat_cpu
            redis_cpu = cpu_seconds(redis.pids()) - redis_cpu
            sent = sum(r[0] for r in results)
            failed = sum(r[1] for r in results)
            ok = max(sent - failed, 1)
            expected = ok * len(chats)
            if delays:
                p50 = delays[len(delays) // 2]
                p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
            else:
                p50 = p99 = float("inf")
            print(f"{name:20} {rate:6} posts/s asked  {sent / args.seconds:7.0f} sent  "
                  f"{failed:5} failed  {len(delays):7}/{expected} delivered  "
                  f"p50 {p50 * 1000:6.1f} ms  p99 {p99 * 1000:7.1f} ms  "
                  f"chat CPU {chat_cpu / ok * 1e6:6.0f} µs/post  "
                  f"redis CPU {redis_cpu / ok * 1e6:6.0f} µs/post", flush=True)
            if p99 > P99_LIMIT or failed > sent // 100:
                break
        members.close()
    finally:
        for proc, _ in chats:
            stop(proc)
        redis.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--instances", type=int, default=3)
    p.add_argument("--rooms", type=int, default=60)
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--masters", type=int, nargs="+", default=[0, 1, 3],
                   help="0: one redis-server; 1 or 3: a cluster of that many masters")
    args = p.parse_args()
    if not os.path.exists(CHAT):
        sys.exit("build the chat first: cargo build --release --features redis --example chat")
    tmp = tempfile.mkdtemp(prefix="fleet-scale-")
    try:
        for masters in args.masters:
            run(masters, args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
