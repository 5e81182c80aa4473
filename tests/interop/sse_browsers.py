#!/usr/bin/env python3
"""Server-Sent Events with EventSource clients against the chat example: Node's `eventsource`
package from npm and headless Chromium's own `EventSource`. Each reads `/sse?room=R`, gets the
room's recent messages and new ones exactly once with their ids; then the stream is dropped
(a proxy between client and chat closes its connections) and the client must reconnect by
itself, sending `Last-Event-ID`, and get what was said meanwhile — once, nothing twice.

    python3 tests/interop/sse_browsers.py target/release/examples/chat NODE_PREFIX

NODE_PREFIX is a directory where `npm install eventsource` was run (tests/interop/run.sh does
it). The chat, the proxy and the browser run on free ports of 127.0.0.1 and are stopped by PID
whatever happens. Every wait is bounded. Prints one line per check; exits 1 if any failed.
"""

import asyncio
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_chromium import open_page, stop, wait_listening  # noqa: E402
from checks import check, free_port, post, verdict  # noqa: E402



class DroppingProxy:
    """A TCP proxy on 127.0.0.1 to the chat that can drop every connection it carries (what
    the client sees when the server ends its stream), and records each request's head."""

    def __init__(self, target_port):
        self.target = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.open = []
        self.heads = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.open += [client, upstream]
            threading.Thread(target=self.pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(upstream, client, False), daemon=True).start()

    def pump(self, src, dst, record):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return
            if record and data.startswith(b"GET "):
                # A request's head (a keep-alive connection carries several, each sent whole).
                with self.lock:
                    self.heads.append(data.split(b"\r\n\r\n")[0].decode("latin-1"))
            try:
                dst.sendall(data)
            except OSError:
                return

    def drop_all(self):
        with self.lock:
            conns, self.open = self.open, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def sse_heads(self, room):
        with self.lock:
            return [h for h in self.heads if h.startswith(f"GET /sse?room={room} ")]


def last_event_id(head):
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "last-event-id":
            return value.strip()
    return None


def node_scenario(chat_port, proxy, node_prefix):
    room = "node"
    first = post(chat_port, room, "n1", "10.2.0.1")
    node = subprocess.Popen(
        ["node", os.path.join(os.path.dirname(__file__), "sse_node.mjs"),
         f"http://127.0.0.1:{proxy.port}/sse?room={room}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "EVENTSOURCE_DIR": node_prefix},
    )
    buf = b""

    def next_event(kind, limit=15):
        nonlocal buf
        end = time.time() + limit
        while True:
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                event = json.loads(line)
                if event["type"] == kind:
                    return event
            left = end - time.time()
            if left <= 0:
                raise TimeoutError(f"node: no {kind} event in {limit} s")
            ready, _, _ = select.select([node.stdout], [], [], left)
            if ready:
                chunk = os.read(node.stdout.fileno(), 4096)
                if not chunk:
                    raise EOFError("node ended")
                buf += chunk

    try:
        next_event("open")
        got = next_event("message")
        check("node eventsource: the room's recent message with its id",
              got["id"] == str(first) and json.loads(got["data"])["text"] == "n1", got)
        second = post(chat_port, room, "n2", "10.2.0.2")
        got = next_event("message")
        check("node eventsource: a new message as it is said", got["id"] == str(second), got)
        proxy.drop_all()
        third = post(chat_port, room, "n3", "10.2.0.3")
        next_event("error")
        next_event("open", 20)
        got = next_event("message")
        heads = proxy.sse_heads(room)
        check("node eventsource: reconnects by itself with Last-Event-ID",
              len(heads) == 2 and last_event_id(heads[1]) == str(second), heads)
        check("node eventsource: after the drop, what was said meanwhile, once",
              got["id"] == str(third), got)
        fourth = post(chat_port, room, "n4", "10.2.0.4")
        got = next_event("message")
        check("node eventsource: then new messages, nothing twice", got["id"] == str(fourth), got)
    finally:
        node.stdin.close()
        try:
            node.wait(10)
        except subprocess.TimeoutExpired:
            node.kill()
            node.wait()


async def chromium_scenario(chat_port, proxy, devtools_port):
    room = "browser"
    first = post(chat_port, room, "b1", "10.3.0.1")
    page = await open_page(devtools_port, f"http://127.0.0.1:{proxy.port}/")
    await page.js(
        "window.got = []; window.opens = 0; window.errors = 0;"
        f"window.source = new EventSource('/sse?room={room}');"
        "source.onopen = () => opens++; source.onerror = () => errors++;"
        "source.onmessage = (e) => got.push([e.lastEventId, JSON.parse(e.data).text]); true"
    )
    await page.until("got.length >= 1", "chromium has the recent message")
    second = post(chat_port, room, "b2", "10.3.0.2")
    await page.until("got.length >= 2", "chromium has the new message")
    proxy.drop_all()
    third = post(chat_port, room, "b3", "10.3.0.3")
    await page.until("errors >= 1 && opens >= 2 && got.length >= 3",
                     "chromium reconnects and catches up", 30)
    fourth = post(chat_port, room, "b4", "10.3.0.4")
    await page.until("got.length >= 4", "chromium has the message after the reconnect")
    await asyncio.sleep(0.5)
    got = await page.js("got")
    want = [[str(i), t] for i, t in [(first, "b1"), (second, "b2"), (third, "b3"), (fourth, "b4")]]
    check("chromium EventSource: every message once, in order, with its id", got == want, got)
    heads = proxy.sse_heads(room)
    check("chromium EventSource: reconnects by itself with Last-Event-ID",
          len(heads) == 2 and last_event_id(heads[0]) is None
          and last_event_id(heads[1]) == str(second), heads)
    state = await page.js("source.readyState")
    check("chromium EventSource: open again after the drop", state == 1, state)
    await page.js("source.close(); true")


def main():
    if len(sys.argv) != 3:
        print("usage: sse_browsers.py PATH/TO/chat NODE_PREFIX", file=sys.stderr)
        sys.exit(2)
    chat_bin, node_prefix = sys.argv[1], sys.argv[2]
    chromium = shutil.which("chromium")
    if not chromium or not shutil.which("node"):
        print("sse_browsers: FAIL: chromium and node are needed", file=sys.stderr)
        sys.exit(1)
    work = tempfile.mkdtemp()
    chat_port, devtools_port = free_port(), free_port()
    chat = subprocess.Popen(
        [chat_bin, "--port", str(chat_port), "--workers", "2", "--proxies", "1"],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(work, "chat.log"), "w"),
    )
    browser = None
    try:
        wait_listening(chat_port, chat, "the chat")
        proxy = DroppingProxy(chat_port)
        node_scenario(chat_port, proxy, node_prefix)
        browser = subprocess.Popen(
            [
                chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                f"--user-data-dir={os.path.join(work, 'profile')}",
                f"--remote-debugging-port={devtools_port}", "--remote-allow-origins=*",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(work, "chromium.log"), "w"),
        )
        wait_listening(devtools_port, browser, "chromium", 30)
        asyncio.run(asyncio.wait_for(chromium_scenario(chat_port, proxy, devtools_port), 90))
        stop(browser)
        browser = None
        chat.send_signal(signal.SIGTERM)
        check("the chat exits 0 after SIGTERM", chat.wait(15) == 0)
    finally:
        if browser is not None:
            stop(browser)
        stop(chat)
        shutil.rmtree(work, ignore_errors=True)
    verdict("sse_browsers")


if __name__ == "__main__":
    main()
