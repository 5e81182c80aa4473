"""What the interop scripts share: a check that prints its line and remembers a failure, the
verdict at the end, a free port of 127.0.0.1, and a message posted to the chat example."""

import json
import socket
import sys
import urllib.request

failures = []


def check(name, ok, detail=""):
    """Prints `ok` or `FAIL` for one check (with `detail` when it failed)."""
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(name)


def verdict(script):
    """Ends the script: exit 1 when any check failed."""
    if failures:
        print(f"{script}: {len(failures)} failed")
        sys.exit(1)
    print(f"{script}: all passed")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, room, text, caller):
    """Says `text` in `room` through the chat's HTTP API as `caller`; the message's id."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/messages?room={room}",
        data=text.encode(),
        method="POST",
        headers={"X-Forwarded-For": caller},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=10) as r:
        return json.loads(r.read())["id"]
