#!/usr/bin/env python3
"""Interop: the chat demo in headless Chromium.

    python3 tests/interop/chat_chromium.py target/release/examples/chat
    python3 tests/interop/chat_chromium.py --tls target/release/examples/chat

With --tls the chat serves plain HTTP on one port and HTTPS and WSS on another, one server
(`--tls-port`; a test CA and a leaf for localhost made with the openssl command line; Chromium
trusts exactly that leaf's key, by its SPKI hash); the pages load https://localhost:PORT/ and
join over wss://, and a message a plain-HTTP client posts to the other port reaches them. The page then comes over HTTP/2 (ALPN h2),
and ten EventSources and a WebSocket opened from it at once all get a message — past
HTTP/1.1's six connections per origin — on the page's one connection (the server's figures,
fetched meanwhile: one connection, HTTP/2; the WebSockets by RFC 8441).

Starts `examples/chat` on a free port of 127.0.0.1 and headless Chromium with its DevTools
protocol on another, opens two pages of the chat, joins both to one room through the page's own
form, sends a message from the first page by typing and clicking Send, and checks that the
second page shows it (and the first too: the sender is a member). Then it waits for the live
chart to have a few seconds of figures and takes a screenshot of the page, which must be a real
picture: a PNG of the page's size with many distinct colours, not a blank. Finally it stops the
chat with SIGTERM and checks that it exits 0.

Needs Chromium (Debian's `chromium`) and Python's `websockets` (>= 14): the caller installs
them; a missing one is a failure. Every wait is bounded; both processes are stopped by PID.
"""
import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib

import websockets


def fail(msg):
    print(f"chat_chromium: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what, seconds=15):
    end = time.time() + seconds
    while time.time() < end:
        if proc.poll() is not None:
            fail(f"{what} exited before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    fail(f"{what} is not listening on {port} after {seconds} s")


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Page:
    """One page target, driven over its own DevTools WebSocket."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0

    async def call(self, method, **params):
        self.next_id += 1
        mine = self.next_id
        await self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            msg = json.loads(await asyncio.wait_for(self.ws.recv(), 30))
            if msg.get("id") == mine:
                if "error" in msg:
                    fail(f"{method}: {msg['error']}")
                return msg.get("result", {})

    async def js(self, expression):
        result = await self.call(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in result:
            fail(f"script failed: {expression}: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    async def until(self, expression, what, seconds=15):
        end = time.time() + seconds
        while time.time() < end:
            if await self.js(expression):
                return
            await asyncio.sleep(0.1)
        fail(f"timed out waiting until {what}")


async def open_page(devtools_port, url):
    req = urllib.request.Request(
        f"http://127.0.0.1:{devtools_port}/json/new?{url}", method="PUT"
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        target = json.load(r)
    ws = await websockets.connect(target["webSocketDebuggerUrl"], max_size=64 << 20)
    page = Page(ws)
    await page.call("Page.enable")
    await page.call("Runtime.enable")
    # The new target starts on about:blank and navigates: wait for the chat page itself.
    await page.until(
        f"location.href.startsWith({json.dumps(url)}) && document.readyState === 'complete'"
        " && document.getElementById('join') !== null",
        f"{url} loaded",
        30,
    )
    return page


def png_colours(png):
    """The number of distinct RGB(A) pixel values of an 8-bit RGB/RGBA PNG, and its size."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        fail("the screenshot is not a PNG")
    at, idat, width, height, colour_type = 8, b"", 0, 0, 0
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind = png[at + 4 : at + 8]
        data = png[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour_type = struct.unpack(">IIBB", data[:10])
            if depth != 8 or colour_type not in (2, 6):
                fail(f"unexpected PNG format: depth {depth}, colour type {colour_type}")
        elif kind == b"IDAT":
            idat += data
        at += 12 + length
    bpp = 4 if colour_type == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours = set()
    pos = 0
    for _ in range(height):
        filt = raw[pos]
        line = bytearray(raw[pos + 1 : pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if filt == 1:
                line[i] = (line[i] + a) & 255
            elif filt == 2:
                line[i] = (line[i] + b) & 255
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for i in range(0, stride, bpp * 4):  # every fourth pixel is plenty
            colours.add(bytes(line[i : i + 3]))
        prev = line
    return len(colours), width, height


async def scenario(base, devtools_port, shot_path, plain_port=None):
    alice = await open_page(devtools_port, base)
    bob = await open_page(devtools_port, base)
    room = f"room{os.getpid()}"
    for page, name in ((alice, "alice"), (bob, "bob")):
        await page.js(
            f"document.getElementById('room').value = {json.dumps(room)};"
            f"document.getElementById('name').value = {json.dumps(name)};"
            "document.getElementById('join').click(); true"
        )
        await page.until(
            "!document.getElementById('send').disabled", f"{name} joined the room"
        )
    # Chromium offers permessage-deflate; the chat always agrees (messages go compressed).
    for page, name in ((alice, "alice"), (bob, "bob")):
        agreed = await page.js("socket.extensions")
        if not str(agreed).startswith("permessage-deflate"):
            fail(f"{name}'s WebSocket agreed to {agreed!r}, not permessage-deflate")
    print(f"chat_chromium: the WebSockets agreed to {agreed!r}")
    text = f"hello from alice {time.time():.0f}, long enough to be sent compressed both ways"
    await alice.js(
        f"document.getElementById('text').value = {json.dumps(text)};"
        "document.getElementById('send').click(); true"
    )
    shown = (
        "[...document.querySelectorAll('#messages li')]"
        f".some(li => li.textContent.includes({json.dumps(text)}))"
    )
    await bob.until(shown, "bob's page shows alice's message")
    await alice.until(shown, "alice's page shows her own message")
    print(f"chat_chromium: bob's page shows {text!r}")
    if plain_port is not None:
        posted = f"posted over plain HTTP {time.time():.0f}"
        request = urllib.request.Request(
            f"http://127.0.0.1:{plain_port}/api/messages?room={room}&name=dave",
            data=posted.encode(), method="POST",
        )
        no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with no_proxy.open(request, timeout=10) as r:
            if r.status != 201:
                fail(f"the plain port answered the post {r.status}")
        await bob.until(
            "[...document.querySelectorAll('#messages li')]"
            f".some(li => li.textContent.includes({json.dumps(posted)}))",
            "bob's HTTPS page shows the message posted on the plain port",
        )
        print("chat_chromium: a message posted on the plain port reached the HTTPS page")
    # The live panel: a few seconds of figures on the chart, numbers filled in.
    await bob.until(
        "document.getElementById('websockets').textContent.trim() !== '–'",
        "the figures are shown",
    )
    await asyncio.sleep(3.5)
    figures = await bob.js("document.getElementById('websockets').textContent")
    if not figures or int(figures.replace(",", "")) < 2:
        fail(f"the panel shows {figures!r} WebSockets, expected at least 2")
    shot = await bob.call("Page.captureScreenshot", format="png")
    png = base64.b64decode(shot["data"])
    with open(shot_path, "wb") as f:
        f.write(png)
    colours, width, height = png_colours(png)
    print(f"chat_chromium: screenshot {width}x{height}, {colours} distinct colours")
    if width < 400 or height < 300 or colours < 50:
        fail(f"the screenshot looks blank ({width}x{height}, {colours} colours)")
    if base.startswith("https:"):
        await over_http2(bob, room)
    for page in (alice, bob):
        await page.ws.close()


async def over_http2(page, room):
    """Over TLS the page comes over HTTP/2 (ALPN h2); then ten EventSources and a WebSocket
    opened from it at once all get a message the WebSocket sends — over HTTP/1.1 Chromium
    opens at most six connections per origin and the seventh stream would wait silently. Each
    rides a stream of the page's connection: event streams as they are, the WebSocket by
    RFC 8441's extended CONNECT (the server counts one HTTP/2 connection)."""
    protocol = await page.js(
        "performance.getEntriesByType('navigation')[0].nextHopProtocol"
    )
    if protocol != "h2":
        fail(f"the page came over {protocol!r}, not h2")
    print("chat_chromium: the page came over HTTP/2 (ALPN h2)")
    got = await page.js(
        "new Promise(done => {"
        # A room of their own: with no history to replay, opening ten at once costs nothing
        # of the chat's replay allowance (5 a second per caller).
        f"  const room = {json.dumps(room + '-h2')}, text = 'eleven ' + Date.now();"
        "  const sources = [], heard = new Set(); let opened = 0, ws = null, ended = false;"
        "  const finish = r => { if (ended) return; ended = true;"
        "    sources.forEach(s => s.close()); if (ws) ws.close(); done(r); };"
        # The figures while all eleven are open. A connection of an earlier step may still be
        # closing as they are read (a worker publishes its figures at the end of a turn): read
        # again, up to 3 s, while more than one connection is counted.
        "  const figures = tries => fetch('/metrics').then(r => r.text()).then(text => {"
        "    const open = [...text.matchAll(/^web_open_connections(?:\\{[^}]*\\})? (\\d+)/gm)]"
        "      .reduce((sum, m) => sum + Number(m[1]), 0);"
        "    if (open !== 1 && tries > 0) setTimeout(() => figures(tries - 1), 200);"
        "    else finish(text); }, e => finish('metrics: ' + e));"
        "  const check = () => { if (heard.size === 11) figures(15); };"
        "  const send = () => { if (opened === 11) ws.send(text); };"
        # The HTTP/2 streams answered before the eleven open (read first, on this page's
        # connection): the figures after must show eleven more.
        "  fetch('/metrics').then(r => r.text()).then(before => {"
        "  window.h2Before = Number((before.match(/^web_http2_streams_total (\\d+)/m) || [0, 0])[1]);"
        "  for (let i = 0; i < 10; i++) {"
        "    const es = new EventSource('/sse?room=' + encodeURIComponent(room));"
        "    es.onopen = () => { opened++; send(); };"
        "    es.onmessage = e => { if (e.data.includes(text)) { heard.add(i); check(); } };"
        "    sources.push(es);"
        "  }"
        "  ws = new WebSocket('wss://' + location.host + '/ws?room=' + encodeURIComponent(room)"
        "    + '&name=carol');"
        "  ws.onopen = () => { opened++; send(); };"
        "  ws.onmessage = e => { if (String(e.data).includes(text)) { heard.add('ws'); check(); } };"
        "  });"
        "  setTimeout(() => finish('within 15 s: ' + opened + ' open, ' + heard.size + ' heard'),"
        "    15000);"
        "}).then(text => text + '\\nh2_before ' + window.h2Before)"
    )
    if "web_http2_connections" not in str(got):
        fail(f"ten EventSources and a WebSocket over HTTP/2: {got}")
    print("chat_chromium: ten EventSources and a WebSocket from one HTTP/2 page all got the message")
    # The figures, fetched by the page while all eleven were open: one HTTP/2 connection
    # carried them — the only one there was, and eleven more streams answered on HTTP/2 since
    # the page's first read. (Chromium may hold a spare connection with nothing on it, a
    # preconnect: counted among the connections, never among HTTP/2's.)
    connections = metric(got, "web_open_connections")
    http2 = metric(got, "web_http2_connections")
    streams, websockets = metric(got, "web_event_streams"), metric(got, "web_websockets")
    h2_streams = metric(got, "web_http2_streams_total") - metric(got, "h2_before")
    print(f"chat_chromium: meanwhile the server had {connections} connection(s), {http2} HTTP/2 "
          f"(with {h2_streams} streams answered since the page's first read), "
          f"{streams} event streams, {websockets} WebSocket(s)")
    if http2 != 1 or h2_streams < 11 or streams < 10 or websockets < 1:
        fail("the eleven streams were not all on the page's one HTTP/2 connection")


def metric(text, name):
    """The sum of a metric's samples in Prometheus' text format."""
    total = 0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def main():
    args = sys.argv[1:]
    tls = args[:1] == ["--tls"]
    if tls:
        args = args[1:]
    if len(args) != 1:
        fail("usage: chat_chromium.py [--tls] PATH/TO/chat")
    chat_bin = args[0]
    chromium = shutil.which("chromium")
    if not chromium:
        fail("chromium is not installed (apt-get install -y chromium)")
    work = tempfile.mkdtemp()
    chat_port, devtools_port = free_port(), free_port()
    chat_args, browser_args = [], []
    base = f"http://127.0.0.1:{chat_port}/"
    page_port, plain_port = chat_port, None
    if tls:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import tls_certs

        _, chain, key, spki = tls_certs.make(work)
        page_port, plain_port = free_port(), chat_port
        chat_args = ["--tls-cert", chain, "--tls-key", key, "--tls-port", str(page_port)]
        browser_args = [f"--ignore-certificate-errors-spki-list={spki}"]
        base = f"https://localhost:{page_port}/"
    chat = subprocess.Popen(
        [chat_bin, "--port", str(chat_port), "--workers", "2", *chat_args],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(work, "chat.log"), "w"),
    )
    browser = None
    try:
        wait_listening(chat_port, chat, "the chat")
        wait_listening(page_port, chat, "the chat")
        browser = subprocess.Popen(
            [
                chromium,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=1200,800",
                f"--user-data-dir={os.path.join(work, 'profile')}",
                f"--remote-debugging-port={devtools_port}",
                *browser_args,
                "--remote-allow-origins=*",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(work, "chromium.log"), "w"),
        )
        wait_listening(devtools_port, browser, "chromium", 30)
        asyncio.run(
            asyncio.wait_for(
                scenario(base, devtools_port, os.path.join(work, "chat.png"), plain_port), 90
            )
        )
        stop(browser)
        browser = None
        chat.send_signal(signal.SIGTERM)
        try:
            code = chat.wait(15)
        except subprocess.TimeoutExpired:
            fail("the chat did not stop within 15 s of SIGTERM")
        if code != 0:
            fail(f"the chat exited with {code} after SIGTERM")
        print("chat_chromium: SIGTERM stopped the chat, exit 0")
        print("chat_chromium: passed")
    finally:
        if browser is not None:
            stop(browser)
        stop(chat)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
