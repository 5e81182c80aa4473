#!/usr/bin/env python3
"""Server-Sent Events with real clients against the chat example: `curl -N` and httpx's
streaming read `/sse?room=R`, get the room's recent messages, then a new one exactly once, each
event with an id; httpx resumes after `Last-Event-ID`; SIGTERM ends the streams.

    python3 tests/interop/sse_clients.py target/release/examples/chat

The chat runs on a free port of 127.0.0.1 and is stopped by its PID whatever happens. Every
read is bounded. Prints one line per check; exits 1 if any failed.
"""

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, free_port, post, verdict  # noqa: E402



def events(lines):
    """(id, data) of each event in an iterator of lines (without their line ends)."""
    ident, data = None, []
    for line in lines:
        if line == "":
            if data:
                yield ident, "\n".join(data)
            ident, data = None, []
        elif line.startswith("id: "):
            ident = int(line[4:])
        elif line.startswith("data: "):
            data.append(line[6:])


def curl_lines(proc, limit):
    """The lines curl writes, each within `limit` seconds."""
    buf = b""
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line.decode()
        ready, _, _ = select.select([proc.stdout], [], [], limit)
        if not ready:
            raise TimeoutError("curl wrote nothing in time")
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            return
        buf += chunk


def main():
    chat = sys.argv[1]
    port = free_port()
    server = subprocess.Popen(
        [chat, "--port", str(port), "--workers", "2", "--proxies", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    curl = None
    try:
        until = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > until:
                    raise
                time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/sse?room=interop"
        first = post(port, "interop", "one", "10.1.0.1")
        second = post(port, "interop", "two", "10.1.0.2")

        curl = subprocess.Popen(
            ["curl", "-q", "-sS", "-N", "--max-time", "20", "--noproxy", "*", url],
            stdout=subprocess.PIPE,
        )
        got = events(curl_lines(curl, 10))
        recent = [next(got), next(got)]
        check(
            "curl -N: the room's recent messages, with their ids",
            [i for i, _ in recent] == [first, second]
            and json.loads(recent[0][1])["text"] == "one",
            recent,
        )
        third = post(port, "interop", "three", "10.1.0.3")
        new = next(got)
        check(
            "curl -N: a new message, once, as it is said",
            new[0] == third and json.loads(new[1])["text"] == "three",
            new,
        )

        with httpx.Client(timeout=10, trust_env=False) as client:
            with client.stream("GET", url, headers={"Last-Event-ID": str(first)}) as r:
                check(
                    "httpx: 200 text/event-stream",
                    r.status_code == 200
                    and r.headers["content-type"] == "text/event-stream",
                    (r.status_code, dict(r.headers)),
                )
                got = events(r.iter_lines())
                resumed = [next(got), next(got)]
                check(
                    "httpx: resumes after Last-Event-ID, nothing twice",
                    [i for i, _ in resumed] == [second, third],
                    resumed,
                )
                fourth = post(port, "interop", "four", "10.1.0.4")
                new = next(got)
                check("httpx: a new message arrives once", new[0] == fourth, new)
                began = time.time()
                server.send_signal(signal.SIGTERM)
                rest = list(got)
                check(
                    "SIGTERM ends the stream promptly",
                    rest == [] and time.time() - began < 5,
                    (rest, time.time() - began),
                )
        code = server.wait(timeout=10)
        check("the chat exits 0 after SIGTERM", code == 0, code)
    finally:
        for proc in (curl, server):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    verdict("sse_clients")


if __name__ == "__main__":
    main()
