#!/usr/bin/env python3
"""Interop: two `examples/chat` instances sharing rooms and rate limits through Redis, behind
nginx (round-robin, WebSocket upgrades proxied, one hop of X-Forwarded-For).

    python3 tests/interop/fleet_nginx.py target/release/examples/chat

The chat must be built with `--features redis`. Starts redis-server, two chats with `--redis`
and nginx, all on free ports of 127.0.0.1 (tests/interop/fleet_procs.py), then checks:

1. members on different instances get each other's messages exactly once (four members, two on
   each instance, each sends one; a POST through nginx too), and nothing else;
2. 10 POSTs in one wall-clock second from one caller, spread by nginx over both instances:
   5 (or one more, the bound of a limit that never waits on Redis) are accepted (201) and the rest refused (429), the chat's limit of 5 writes a second;
3. Redis stopped: each instance still delivers to its own members and answers HTTP (pages,
   figures, and POSTs, counted locally), and counts the failures in /api/stats;
4. Redis started again on its port: a message from one instance reaches a member on the other
   within 10 s (the time it took is printed).

Every wait is bounded; every process is stopped by its PID. A missing program (redis-server,
nginx, Python's websockets) is a failure. Exits 1 if any check failed.
"""
import http.client
import json
import socket
import sys
import time
import warnings

from fleet_procs import Missing, Procs, get_json, redis_command

try:
    from websockets.sync.client import connect
except ImportError:
    print("fleet_nginx: FAIL: Python's websockets is not installed (pip install 'websockets>=14')",
          file=sys.stderr)
    sys.exit(1)

# websockets 17 prefers `with connect(...)`; these members outlive one block.
warnings.filterwarnings("ignore", category=DeprecationWarning)

RESUME_WITHIN = 10.0
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)


class Member:
    """A chat member connected through nginx from source address `source`."""

    def __init__(self, procs, room, name, source="127.0.0.1"):
        sock = socket.create_connection(("127.0.0.1", procs.nginx_port), timeout=5,
                                        source_address=(source, 0))
        self.ws = connect(f"ws://127.0.0.1:{procs.nginx_port}/ws?room={room}&name={name}",
                          sock=sock, compression=None, open_timeout=5, close_timeout=2)
        self.name = name

    def send(self, text):
        self.ws.send(text)

    def texts(self, seconds):
        """The texts of the messages received within `seconds`."""
        got = []
        end = time.time() + seconds
        while True:
            left = end - time.time()
            if left <= 0:
                return got
            try:
                frame = self.ws.recv(timeout=left)
            except TimeoutError:
                return got
            got.append(json.loads(frame)["text"])

    def wait_for(self, text, seconds):
        """Whether `text` arrives within `seconds` (other messages are skipped)."""
        end = time.time() + seconds
        while time.time() < end:
            try:
                frame = self.ws.recv(timeout=max(0.01, end - time.time()))
            except TimeoutError:
                return False
            if json.loads(frame)["text"] == text:
                return True
        return False

    def close(self):
        self.ws.close()


def websockets_of(procs):
    return [get_json(f"http://127.0.0.1:{port}/api/stats")["websockets"] for _, port in procs.chats]


def join_on_each(procs, room, names, source="127.0.0.1"):
    """Joins members one by one through nginx; {instance index: [members]} (each member's
    instance read off the instances' own figures)."""
    placed = {}
    for name in names:
        before = websockets_of(procs)
        m = Member(procs, room, name, source)
        end = time.time() + 5
        while time.time() < end:
            grew = [i for i, (a, b) in enumerate(zip(before, websockets_of(procs))) if b > a]
            if len(grew) == 1:
                placed.setdefault(grew[0], []).append(m)
                break
            time.sleep(0.02)
        else:
            raise RuntimeError(f"could not tell which instance {name} is on")
    return placed


def post(procs, room, text, source="127.0.0.1"):
    """POST /api/messages through nginx from `source`: (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", procs.nginx_port, timeout=5,
                                      source_address=(source, 0))
    try:
        conn.request("POST", f"/api/messages?room={room}&name=api", body=text.encode(),
                     headers={"Content-Type": "text/plain"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def settle_subscriptions():
    # A room's first member on an instance is subscribed within about 100 ms.
    time.sleep(0.5)


def exactly_once(procs):
    placed = join_on_each(procs, "once", ["a1", "b1", "a2", "b2"])
    check("round-robin put two members on each instance",
          sorted(len(v) for v in placed.values()) == [2, 2], f"{ {k: len(v) for k, v in placed.items()} }")
    members = [m for ms in placed.values() for m in ms]
    settle_subscriptions()
    for m in members:
        m.send(f"from {m.name}")
    status, _ = post(procs, "once", "from the API")
    check("a POST through nginx is accepted", status == 201, str(status))
    want = sorted([f"from {m.name}" for m in members] + ["from the API"])
    for m in members:
        got = sorted(m.texts(2.0))
        check(f"{m.name} got every message exactly once, its own included", got == want,
              f"got {got}")
    for m in members:
        m.close()
    return placed


def in_one_second(action):
    """Runs `action` just after a wall-clock second begins; again (up to 5 times) when a
    second boundary fell inside it. Its result."""
    for attempt in range(5):
        time.sleep(1.02 - time.time() % 1)
        start = int(time.time())
        result = action()
        if int(time.time()) == start:
            return result
        print(f"fleet_nginx: a second boundary fell inside the burst (attempt {attempt + 1}); again")
    raise RuntimeError("five bursts straddled a second boundary")


def rate_limit_across(procs):
    before = [get_json(f"http://127.0.0.1:{p}/api/stats")["requests"] for _, p in procs.chats]

    def burst():
        return [post(procs, "limits", f"burst {i}", source="127.0.0.7")[0] for i in range(10)]

    statuses = in_one_second(burst)
    after = [get_json(f"http://127.0.0.1:{p}/api/stats")["requests"] for _, p in procs.chats]
    served = [b - a - 1 for a, b in zip(before, after)]  # less the figures request itself
    check("the 10 writes were spread over both instances", all(s >= 3 for s in served),
          f"requests per instance {served}")
    # Each instance decides at once on its own count and what the other had counted as of its
    # own last report (never waiting on Redis): writes alternating over two instances get the
    # allowance and at most one more (README: the bound, allowance + instances - 1).
    accepted = statuses.count(201)
    check("5 or 6 of 10 writes in one second from one caller were accepted across the fleet",
          accepted in (5, 6) and statuses[:5] == [201] * 5 and statuses[6:] == [429] * 4,
          f"statuses {statuses}")
    # Another caller is not affected.
    check("another caller has its own bucket", post(procs, "limits", "x", source="127.0.0.8")[0] == 201)


def redis_down(procs):
    procs.stop_redis()
    check("redis-server stopped", redis_command(procs.redis_port, "PING") is None)
    # Two members on each instance: a message from one reaches the other on the same instance.
    placed = join_on_each(procs, "down", ["a1", "b1", "a2", "b2"])
    for instance, ms in sorted(placed.items()):
        if len(ms) < 2:
            check(f"two members on instance {instance}", False, f"{len(ms)}")
            continue
        ms[0].send(f"local on {instance}")
        check(f"instance {instance} still delivers to its own members while Redis is down",
              ms[1].wait_for(f"local on {instance}", 3.0))
    for _, port in procs.chats:
        s = get_json(f"http://127.0.0.1:{port}/api/stats")
        check(f"instance :{port} answers HTTP while Redis is down and counts the failures",
              s.get("fleet_errors", 0) > 0, f"fleet_errors {s.get('fleet_errors')}")
    status, _ = post(procs, "down", "posted while Redis is down", source="127.0.0.9")
    check("a POST is answered while Redis is down (the local count decides)", status == 201,
          str(status))
    conn = http.client.HTTPConnection("127.0.0.1", procs.nginx_port, timeout=5)
    conn.request("GET", "/")
    page = conn.getresponse()
    check("the page is served through nginx while Redis is down", page.status == 200,
          str(page.status))
    conn.close()
    return placed


def redis_back(procs, placed):
    procs.start_redis(procs.redis_port)
    back = time.time()
    sender, receiver = placed[0][0], placed[1][0]
    resumed = None
    n = 0
    while time.time() - back < RESUME_WITHIN + 2:
        n += 1
        text = f"after the restart {n}"
        sender.send(text)
        if receiver.wait_for(text, 0.25):
            resumed = time.time() - back
            break
    check(f"cross-instance delivery resumed within {RESUME_WITHIN:.0f} s of Redis's return",
          resumed is not None and resumed <= RESUME_WITHIN,
          "never" if resumed is None else f"after {resumed:.2f} s")
    # And it goes the other way too, exactly once.
    receiver.texts(0.3)
    sender.texts(0.3)
    placed[1][1].send("back the other way")
    got = placed[0][1].texts(1.5)
    check("after the restart, the other direction delivers exactly once",
          got.count("back the other way") == 1, f"got {got}")


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} CHAT_BINARY (built with --features redis)", file=sys.stderr)
        sys.exit(2)
    try:
        procs = Procs(sys.argv[1], "fleet-nginx")
    except Missing as e:
        print(f"fleet_nginx: FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    try:
        procs.start_redis()
        a, b = procs.start_chat(), procs.start_chat()
        procs.start_nginx()
        print(f"fleet_nginx: redis :{procs.redis_port}, chats :{a} :{b}, nginx :{procs.nginx_port}")
        exactly_once(procs)
        rate_limit_across(procs)
        placed = redis_down(procs)
        redis_back(procs, placed)
        for ms in placed.values():
            for m in ms:
                m.close()
    except Exception as e:  # a failure to set up or a broken connection fails the test
        check("the scenario ran to its end", False, f"{type(e).__name__}: {e}")
    finally:
        procs.close()
    failed = results.count(False)
    print(f"fleet_nginx: {len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed or not results else 0)


if __name__ == "__main__":
    main()
