#!/usr/bin/env python3
"""Interop: compressed WebSocket messages (permessage-deflate, RFC 7692) with the chat.

    python3 tests/interop/chat_deflate.py target/release/examples/chat

Starts the chat on a free port of 127.0.0.1, then:
  1. two Python `websockets` clients (which offer permessage-deflate by default) join one room;
     each must have agreed to the extension, and a long message from one reaches both;
  2. a raw-socket client offering the extension, whose frames are read by hand: the chat's
     message frames to it carry RSV1 and inflate with Python's zlib (C zlib) to the JSON the
     chat sends; a message it sends compressed is heard by a `websockets` member.

Every step is bounded by a timeout; the chat is stopped by its PID whatever happens. Exit
status 0 when every check passed, 1 otherwise (2 when it could not run at all).
"""

import asyncio
import base64
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import zlib

STEP = 10.0

try:
    import websockets
    from websockets.asyncio.client import connect
except ImportError as e:  # pragma: no cover
    sys.stderr.write(f"chat_deflate: FAIL: the Python package `websockets` is missing ({e})\n")
    sys.exit(2)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc):
    deadline = time.monotonic() + STEP
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the chat exited ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the chat is not listening")


async def next_message(ws, text):
    """The next chat message (skipping history and notices) whose text is `text`."""
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), STEP))
        if msg.get("text") == text:
            return msg


async def websockets_clients(base, room):
    a = await connect(f"{base}/ws?room={room}&name=ana", open_timeout=STEP)
    b = await connect(f"{base}/ws?room={room}&name=bo", open_timeout=STEP)
    try:
        for ws in (a, b):
            names = [type(e).__name__ for e in ws.protocol.extensions]
            assert names == ["PerMessageDeflate"], f"extensions agreed: {names}"
        text = "compressed both ways, " * 8
        await a.send(text)
        for ws in (a, b):
            await next_message(ws, text)
    finally:
        await a.close()
        await b.close()


class Raw:
    """A WebSocket client over a plain socket that reads frames by hand."""

    def __init__(self, port, target):
        self.sock = socket.create_connection(("127.0.0.1", port), STEP)
        self.sock.settimeout(STEP)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
            ).encode()
        )
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self.more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        self.head = head.decode("latin-1")

    def more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise AssertionError("the chat closed the connection")
        self.buf += chunk

    def frame(self):
        while True:
            if len(self.buf) >= 2:
                n, at = self.buf[1] & 0x7F, 2
                if n == 126:
                    n, at = (struct.unpack(">H", self.buf[2:4])[0], 4) if len(self.buf) >= 4 else (None, 0)
                elif n == 127:
                    n, at = (struct.unpack(">Q", self.buf[2:10])[0], 10) if len(self.buf) >= 10 else (None, 0)
                if n is not None and len(self.buf) >= at + n:
                    first, payload = self.buf[0], self.buf[at : at + n]
                    self.buf = self.buf[at + n :]
                    return first, payload
            self.more()

    def send(self, first, payload):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([first]) + (
            bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
        )
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)


def deflate(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    out = c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b"\x00\x00\xff\xff")
    return out[:-4]


def inflate(data):
    return zlib.decompressobj(-15).decompress(data + b"\x00\x00\xff\xff")


async def raw_frames(base, port, room):
    raw = Raw(port, f"/ws?room={room}&name=raw")
    assert raw.head.startswith("HTTP/1.1 101"), raw.head
    agreed = [l for l in raw.head.split("\r\n") if l.lower().startswith("sec-websocket-extensions:")]
    assert agreed and "permessage-deflate" in agreed[0], f"no extension agreed: {raw.head!r}"
    print(f"chat_deflate: the chat answered {agreed[0]!r}")
    member = await connect(f"{base}/ws?room={room}&name=cy", open_timeout=STEP)
    try:
        # From a websockets member to the raw client: compressed frames (RSV1), C zlib inflates.
        text = "the chat's frames are compressed on the wire " * 4
        await member.send(text)
        while True:
            first, payload = await asyncio.to_thread(raw.frame)
            assert first & 0x0F == 0x1, f"frame {first:#x}"
            data = inflate(payload) if first & 0x40 else payload
            msg = json.loads(data)
            if msg.get("text") == text:
                assert first & 0x40, "the chat sent a long message uncompressed"
                print(f"chat_deflate: {len(data)} bytes of JSON came as {len(payload)} compressed")
                break
        # From the raw client, compressed by C zlib, to the websockets member.
        text = "and what a client compresses is read " * 4
        raw.send(0xC1, deflate(text.encode()))
        await next_message(member, text)
    finally:
        await member.close()
        raw.sock.close()


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(f"usage: {sys.argv[0]} PATH/TO/chat\n")
        return 2
    binary = sys.argv[1]
    sys.stdout.reconfigure(line_buffering=True)
    print(f"chat_deflate: websockets {websockets.__version__}, zlib {zlib.ZLIB_RUNTIME_VERSION}")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port)], stdin=subprocess.DEVNULL)
    failed = []
    try:
        wait_listening(port, proc)
        base = f"ws://127.0.0.1:{port}"
        for check in (websockets_clients, raw_frames):
            try:
                if check is raw_frames:
                    coro = check(base, port, f"raw{os.getpid()}")
                else:
                    coro = check(base, f"py{os.getpid()}")
                asyncio.run(asyncio.wait_for(coro, 6 * STEP))
                print(f"chat_deflate: ok   {check.__name__}")
            except Exception as e:  # noqa: BLE001
                print(f"chat_deflate: FAIL {check.__name__}: {type(e).__name__}: {e}")
                failed.append(check.__name__)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
