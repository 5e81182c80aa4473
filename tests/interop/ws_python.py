#!/usr/bin/env python3
"""Interop: Python's `websockets` client against the library's WebSocket echo server.

    python3 tests/interop/ws_python.py target/release/examples/ws_echo

Starts the server (`--port P --max-message BYTES`, echo at path `/`) on a free port of
127.0.0.1, then checks with the `websockets` package (an independent RFC 6455 implementation):
text and binary echo (types kept), a 60 KiB message, fragmented messages (text with a code point
split across fragments, binary), a ping answered by a pong with the same payload, the close
handshake with 1000, and a message over --max-message closed with 1009 (whole or in fragments).

Every step is bounded by a timeout; the server is stopped by its PID whatever happens. Exit
status 0 when every check passed, 1 otherwise (2 when it could not run at all).
"""

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

MAX_MESSAGE = 64 * 1024  # the server's --max-message
STEP = 10.0  # seconds any single step may take

try:
    import websockets
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed
except ImportError as e:  # pragma: no cover - the message is the point
    sys.stderr.write(
        "ws_python: FAIL: the Python package `websockets` (14 or newer) is not installed "
        f"({e}); install it with `python3 -m pip install websockets`\n"
    )
    sys.exit(2)
if int(websockets.__version__.split(".")[0]) < 14:
    sys.stderr.write(
        f"ws_python: FAIL: websockets {websockets.__version__} is too old (14 or newer is "
        "needed, for send(..., text=True)); upgrade it with `python3 -m pip install -U websockets`\n"
    )
    sys.exit(2)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, limit=STEP):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited early with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the server is not listening on port {port} after {limit} s")


def client(uri, **kw):
    # No compression (the server accepts no extension), no keepalive pings of our own, and a
    # limit on what we receive above anything the server may send back.
    return connect(
        uri,
        compression=None,
        ping_interval=None,
        max_size=4 * MAX_MESSAGE,
        open_timeout=STEP,
        close_timeout=STEP,
        **kw,
    )


async def recv(ws):
    return await asyncio.wait_for(ws.recv(), STEP)


async def expect_closed_with(ws, code, what):
    """Waits for the server to close the connection; checks the code it sent."""
    try:
        while True:
            msg = await asyncio.wait_for(ws.recv(), STEP)
            raise AssertionError(f"{what}: got a message ({len(msg)} long) instead of a close")
    except ConnectionClosed as e:
        rcvd = e.rcvd
        assert rcvd is not None, f"{what}: the connection ended without a close frame ({e})"
        assert rcvd.code == code, f"{what}: closed with {rcvd.code} {rcvd.reason!r}, expected {code}"


# --------------------------------------------------------------------------------------------
# The checks: each opens its own connection.


async def text_echo(uri):
    async with client(uri) as ws:
        for text in ["hello", "", "κόσμε €𝄞 ✓", "x" * 125, "y" * 126, "z" * 1000]:
            await ws.send(text)
            got = await recv(ws)
            assert isinstance(got, str), f"text came back as {type(got).__name__}"
            assert got == text, f"sent {text[:40]!r} ({len(text)}), got {got[:40]!r} ({len(got)})"


async def binary_echo(uri):
    async with client(uri) as ws:
        for body in [b"\x00\x01\x02\xff", b"", bytes(range(256)), os.urandom(5000)]:
            await ws.send(body)
            got = await recv(ws)
            assert isinstance(got, bytes), f"binary came back as {type(got).__name__}"
            assert got == body, f"sent {len(body)} bytes, got {len(got)} different ones"


async def large_message(uri):
    async with client(uri) as ws:
        body = os.urandom(60 * 1024)
        await ws.send(body)
        got = await recv(ws)
        assert got == body, f"60 KiB binary: got {len(got)} bytes back, not the same"
        text = ("0123456789abcdef" * 4096)[: 60 * 1024 - 3] + "€"
        await ws.send(text)
        got = await recv(ws)
        assert got == text, f"60 KiB text: got {len(got)} characters back, not the same"


async def fragmented(uri):
    async with client(uri) as ws:
        await ws.send(iter(["frag", "ment", "ed ", "κόσμε"]))
        got = await recv(ws)
        assert got == "fragmented κόσμε", f"fragmented text came back as {got!r}"
        # Text whose code points are split across fragments at the byte level ("€" is
        # e2 82 ac, "𝄞" f0 9d 84 9e): valid once reassembled.
        await ws.send(iter([b"price \xe2", b"\x82", b"\xac 5 \xf0\x9d", b"\x84\x9e"]), text=True)
        got = await recv(ws)
        assert got == "price € 5 𝄞", f"code points split across fragments: got {got!r}"
        await ws.send(iter([b"\x00\x01", b"", b"\x02" * 1000, b"\x03"]))
        got = await recv(ws)
        assert got == b"\x00\x01" + b"\x02" * 1000 + b"\x03", "fragmented binary"
        # Many fragments adding up to 60 KiB.
        parts = [os.urandom(1024) for _ in range(60)]
        await ws.send(iter(parts))
        got = await recv(ws)
        assert got == b"".join(parts), "60 fragments of 1 KiB"
        # An ordinary message still works after fragmented ones.
        await ws.send("after")
        assert await recv(ws) == "after"


async def ping_pong(uri):
    async with client(uri) as ws:
        for payload in [b"are you there?", b"", bytes(range(125))]:
            waiter = await ws.ping(payload)
            await asyncio.wait_for(waiter, STEP)  # resolved by a pong with this payload
        # Messages still flow.
        await ws.send("after the pings")
        assert await recv(ws) == "after the pings"


async def close_1000(uri):
    ws = await client(uri)
    await ws.send("bye soon")
    assert await recv(ws) == "bye soon"
    await asyncio.wait_for(ws.close(code=1000, reason="done"), STEP)
    assert ws.protocol.close_rcvd is not None, "the server sent no close frame"
    code = ws.protocol.close_rcvd.code
    assert code == 1000, f"the server answered the close with {code}, expected 1000"
    assert ws.close_code == 1000, f"close_code {ws.close_code}"


async def too_big(uri):
    # One message over the limit: closed with 1009.
    async with client(uri) as ws:
        await ws.send(b"\x00" * (MAX_MESSAGE + 1))
        await expect_closed_with(ws, 1009, "one frame over --max-message")
    async with client(uri) as ws:
        await ws.send("t" * (MAX_MESSAGE + 100))
        await expect_closed_with(ws, 1009, "a text message over --max-message")
    # Fragments each under the limit, together over it.
    async with client(uri) as ws:
        await ws.send(iter([b"\x01" * (16 * 1024)] * 5))
        await expect_closed_with(ws, 1009, "fragments adding up to more than --max-message")
    # Exactly the limit is fine.
    async with client(uri) as ws:
        body = b"\x02" * MAX_MESSAGE
        await ws.send(body)
        assert await recv(ws) == body, "a message of exactly --max-message"


async def invalid_utf8(uri):
    # Text that is not UTF-8 (RFC 6455 §8.1): closed with 1007, whole or fragmented.
    async with client(uri) as ws:
        await ws.send(b"ok \xff not ok", text=True)
        await expect_closed_with(ws, 1007, "a text frame that is not UTF-8")
    async with client(uri) as ws:
        await ws.send(iter([b"fine \xe2\x82", b"A"]), text=True)
        await expect_closed_with(ws, 1007, "a code point broken across fragments")


async def many_clients(uri):
    async def one(i):
        async with client(uri) as ws:
            for j in range(10):
                msg = f"client {i} message {j}"
                await ws.send(msg)
                assert await recv(ws) == msg
    await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(20))), 3 * STEP)


CHECKS = [
    text_echo,
    binary_echo,
    large_message,
    fragmented,
    ping_pong,
    close_1000,
    too_big,
    invalid_utf8,
    many_clients,
]


async def run_checks(uri):
    failed = []
    for check in CHECKS:
        name = check.__name__
        try:
            await asyncio.wait_for(check(uri), 6 * STEP)
            print(f"ws_python: ok   {name}")
        except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
            print(f"ws_python: FAIL {name}: {type(e).__name__}: {e}")
            failed.append(name)
    return failed


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(f"usage: {sys.argv[0]} PATH/TO/ws_echo\n")
        return 2
    binary = sys.argv[1]
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        sys.stderr.write(f"ws_python: FAIL: {binary} is not an executable file\n")
        return 2
    sys.stdout.reconfigure(line_buffering=True)
    print(f"ws_python: websockets {websockets.__version__}, Python {sys.version.split()[0]}")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--max-message", str(MAX_MESSAGE)],
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, proc)
        failed = asyncio.run(run_checks(f"ws://127.0.0.1:{port}/"))
        if proc.poll() is not None:
            print(f"ws_python: FAIL the server exited during the checks ({proc.returncode})")
            failed.append("server alive")
    except Exception as e:  # noqa: BLE001
        print(f"ws_python: FAIL {type(e).__name__}: {e}")
        return 1
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
    passed = len(CHECKS) - len(failed)
    print(f"ws_python: {passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
