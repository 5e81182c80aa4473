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
   within 10 s (the time it took is printed);
5. history across the fleet: messages posted on one instance are the history a member joining
   on the other gets first (same ids, in order, once); an event stream resuming after one of
   those ids and a long-poll after it get the rest; a member joining the other instance while
   messages are posted gets every message from its join on exactly once, in order; a
   long-poll and an event stream on the other instance get a post live;
6. presence: `/api/rooms?room=R` on either instance counts both instances' members; an
   instance killed with SIGKILL stops counting within `web::fleet::EXPIRY` (3 s) and a little;
   restarted on its port it serves the room's history at once;
7. with Redis down, `/api/rooms` answers with the instance's own count and says so
   (`fleet_local_reads`); with Redis back (its data saved and read back), a member joining
   a room on the instance that never had it gets the history written before the outage, and
   presence sums both instances again.

Every wait is bounded; every process is stopped by its PID. A missing program (redis-server,
nginx, Python's websockets) is a failure. Exits 1 if any check failed.
"""
import http.client
import json
import socket
import sys
import threading
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
# web::fleet::EXPIRY, and the time for the other instance to notice.
PRESENCE_GONE_WITHIN = 3.0 + 2.0
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)


class Member:
    """A chat member connected through nginx from source address `source`."""

    def __init__(self, procs, room, name, source="127.0.0.1", port=None):
        """Through nginx, or straight to the instance on `port`."""
        port = port or procs.nginx_port
        sock = socket.create_connection(("127.0.0.1", port), timeout=5,
                                        source_address=(source, 0))
        self.ws = connect(f"ws://127.0.0.1:{port}/ws?room={room}&name={name}",
                          sock=sock, compression=None, open_timeout=5, close_timeout=2)
        self.name = name

    def messages(self, seconds, until=None):
        """(id, text) of the messages received within `seconds`, or until `until` of them."""
        got = []
        end = time.time() + seconds
        while until is None or len(got) < until:
            left = end - time.time()
            if left <= 0:
                break
            try:
                frame = json.loads(self.ws.recv(timeout=left))
            except TimeoutError:
                break
            if "id" in frame:
                got.append((frame["id"], frame["text"]))
        return got

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


def post(procs, room, text, source="127.0.0.1", port=None):
    """POST /api/messages through nginx (or to the instance on `port`) from `source`:
    (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port or procs.nginx_port, timeout=5,
                                      source_address=(source, 0))
    try:
        conn.request("POST", f"/api/messages?room={room}&name=api", body=text.encode(),
                     headers={"Content-Type": "text/plain"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def post_id(port, room, text, caller):
    """POST to the instance on `port` as `caller` (the X-Forwarded-For entry nginx would
    add); the message's id (fails the scenario otherwise)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("POST", f"/api/messages?room={room}&name=api", body=text.encode(),
                     headers={"X-Forwarded-For": caller})
        r = conn.getresponse()
        body = r.read()
        if r.status != 201:
            raise RuntimeError(f"POST to :{port} answered {r.status} {body!r}")
        return json.loads(body)["id"]
    finally:
        conn.close()


def get(port, path, headers=None, read=None):
    """GET from the instance on `port`: (status, body); `read` bytes at most (a stream)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, (r.read(read) if read else r.read())
    finally:
        conn.close()


def sse_ids(port, room, last_event_id, want, seconds=3.0):
    """The ids of the first `want` events of /sse?room=R resumed after `last_event_id`."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=seconds)
    sock.sendall((f"GET /sse?room={room} HTTP/1.1\r\nHost: x\r\n"
                  f"Last-Event-ID: {last_event_id}\r\n\r\n").encode())
    data = b""
    end = time.time() + seconds
    ids = []
    while len(ids) < want and time.time() < end:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
        ids = [int(line[4:]) for line in data.decode(errors="replace").split("\n")
               if line.startswith("id: ")]
    sock.close()
    return ids


def members_of(port, room):
    return get_json(f"http://127.0.0.1:{port}/api/rooms?room={room}")["members"]


def wait_members(ports, room, want, seconds):
    """Seconds until `/api/rooms` says `want` on every port, or None."""
    start = time.time()
    while time.time() - start < seconds:
        if all(members_of(p, room) == want for p in ports):
            return time.time() - start
        time.sleep(0.05)
    return None


def history_across(procs):
    (_, a), (_, b) = procs.chats
    ids = [post_id(a, "hist", f"h{i}", f"127.0.2.{i + 1}") for i in range(3)]
    on_b = Member(procs, "hist", "late", port=b)
    got = on_b.messages(3.0, until=3)
    check("a member joining on the other instance gets the history first, same ids, in order",
          got == [(i, f"h{n}") for n, i in enumerate(ids)], f"got {got}, posted {ids}")
    extra = on_b.messages(0.5)
    check("... and each message once", extra == [], f"then {extra}")
    check("an event stream on the other instance resumes after Last-Event-ID with the same ids",
          sse_ids(b, "hist", ids[0], 2) == ids[1:], f"want {ids[1:]}")
    status, body = get(b, f"/poll?room=hist&after={ids[0]}")
    polled = [m["id"] for m in json.loads(body)["messages"]] if status == 200 else status
    check("a long-poll on the other instance after the first id gets the rest", polled == ids[1:],
          f"got {polled}")
    on_a = Member(procs, "hist", "here", port=a)
    got = on_a.messages(3.0, until=3)
    check("the posting instance's own member gets the same history", [i for i, _ in got] == ids,
          f"got {got}")
    on_a.close()
    on_b.close()
    # A long-poll on an instance with no member of the room, woken by a post on the other.
    first = post_id(a, "lp", "first", "127.0.2.9")
    result = {}

    def long_poll():
        result["reply"] = get(b, f"/poll?room=lp&after={first}")

    poller = threading.Thread(target=long_poll)
    poller.start()
    time.sleep(0.5)
    woke = post_id(a, "lp", "wake", "127.0.2.10")
    poller.join(10)
    status, body = result.get("reply", (None, b""))
    polled = [(m["id"], m["text"]) for m in json.loads(body)["messages"]] if status == 200 else status
    check("a long-poll on the other instance is answered by a post on the first",
          polled == [(woke, "wake")], f"got {polled}")
    # An event stream on the other instance gets a post on the first live, with its id.
    sock = socket.create_connection(("127.0.0.1", b), timeout=5)
    sock.sendall(b"GET /sse?room=live HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.recv(4096)  # the head
    time.sleep(0.3)  # subscribed within about 100 ms
    live = post_id(a, "live", "streamed", "127.0.2.11")
    data = b""
    end = time.time() + 3
    while b"streamed" not in data and time.time() < end:
        data += sock.recv(4096)
    sock.close()
    check("an event stream on the other instance gets the post live, with the same id",
          f"id: {live}\n".encode() in data and b"streamed" in data, repr(data[-200:]))


def history_under_traffic(procs):
    (_, a), (_, b) = procs.chats
    posted = []

    def poster():
        for i in range(40):
            posted.append(post_id(a, "busy", f"t{i}", f"127.0.3.{i + 1}"))
            time.sleep(0.02)

    thread = threading.Thread(target=poster)
    thread.start()
    end = time.time() + 10
    # Past the 20 messages the history holds: the member's first are from the history.
    while len(posted) < 25 and thread.is_alive() and time.time() < end:
        time.sleep(0.005)
    joined = Member(procs, "busy", "mid", port=b)
    thread.join(30)
    got = [i for i, _ in joined.messages(4.0)]
    joined.close()
    tail_ok = bool(got) and got == posted[posted.index(got[0]):] if got and got[0] in posted else False
    check("a member joining while messages are posted elsewhere gets each from its history on, "
          "once, in order", tail_ok and len(got) >= 20 + 40 - 25,
          f"got {len(got)}: {got[:3]}..{got[-3:]}; posted {len(posted)}")


def presence(procs):
    (_, a), (_, b) = procs.chats
    members = [Member(procs, "pres", f"p{i}", port=p) for i, p in enumerate([a, a, b])]
    took = wait_members([a, b], "pres", 3, 3.0)
    check("/api/rooms on either instance counts both instances' members",
          took is not None, f"{members_of(a, 'pres')} and {members_of(b, 'pres')}, want 3"
          if took is None else f"within {took:.2f} s")
    post_id(a, "restart", "before the restart", "127.0.4.1")
    procs.kill_chat(b)
    gone = wait_members([a], "pres", 2, PRESENCE_GONE_WITHIN)
    check(f"an instance killed with SIGKILL stops counting within {PRESENCE_GONE_WITHIN:.0f} s",
          gone is not None, "never" if gone is None else f"after {gone:.2f} s")
    procs.start_chat(port=b)
    fresh = Member(procs, "restart", "back", port=b)
    got = fresh.messages(2.0, until=1)
    check("the restarted instance serves the room's history at once",
          [t for _, t in got] == ["before the restart"], f"got {got}")
    fresh.close()
    for m in members[:2]:
        m.close()


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
    (_, a), _ = procs.chats
    for i in range(2):
        post_id(a, "kept", f"kept {i}", f"127.0.5.{i + 1}")
    time.sleep(0.3)  # the publisher thread writes it to Redis
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
    (_, a), (_, b) = procs.chats
    on_a = members_of(a, "down")
    check("/api/rooms answers with the instance's own count while Redis is down",
          on_a == len(placed.get(0, [])), f"{on_a}")
    s = get_json(f"http://127.0.0.1:{a}/api/stats")
    check("... and says so in its figures", s.get("fleet_local_reads", 0) > 0,
          f"fleet_local_reads {s.get('fleet_local_reads')}")
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
    (_, a), (_, b) = procs.chats
    late = Member(procs, "kept", "late", port=b)
    got = [t for _, t in late.messages(2.0, until=2)]
    check("with Redis back, history written before the outage reaches a member on the other "
          "instance", got == ["kept 0", "kept 1"], f"got {got}")
    late.close()
    took = wait_members([a, b], "down", 4, 4.0)
    check("with Redis back, presence sums both instances again", took is not None,
          f"{members_of(a, 'down')} on one, {members_of(b, 'down')} on the other, want 4"
          if took is None else f"within {took:.2f} s")


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
        history_across(procs)
        history_under_traffic(procs)
        presence(procs)
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
