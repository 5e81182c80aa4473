#!/usr/bin/env python3
"""Interop: the library's WebSocket client (`examples/ws_client`) against independent servers —
Python's `websockets` and Node's `ws` (from npm). Against each: every line of standard input
comes back as a message and is printed on its own line (text, and a 100 KiB line), the extra
header reaches the server, the subprotocol offered is chosen, and the client exits 0 after the
closing handshake — begun by the client (end of input) or by the server (`bye` → 1000).

    python3 tests/interop/ws_clients.py target/release/examples/ws_client NODE_PREFIX

NODE_PREFIX is a directory where `npm install ws` was run (tests/interop/run.sh does it). The
servers run on free ports of 127.0.0.1 and are stopped by PID whatever happens; every wait is
bounded. Prints one line per check; exits 1 if any failed.
"""

import asyncio
import os
import subprocess
import sys
import threading

from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, verdict  # noqa: E402



async def python_handler(ws):
    try:
        async for msg in ws:
            if msg == "header":
                await ws.send(ws.request.headers.get("X-Test", "none"))
            elif msg == "protocol":
                await ws.send(ws.subprotocol or "none")
            elif msg == "bye":
                await ws.close(1000, "bye")
            else:
                await ws.send(msg)
    except ConnectionClosed:
        pass  # what came after a close is not answered


def python_server():
    """Starts the `websockets` server on a thread of its own; returns its port and stopper."""
    ready = threading.Event()
    state = {}

    def run():
        async def main():
            async with serve(
                python_handler, "127.0.0.1", 0, subprotocols=["chat"], max_size=1 << 20
            ) as server:
                state["port"] = server.sockets[0].getsockname()[1]
                state["stop"] = asyncio.get_running_loop().create_future()
                state["loop"] = asyncio.get_running_loop()
                ready.set()
                await state["stop"]

        asyncio.run(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("the websockets server did not start")

    def stop():
        state["loop"].call_soon_threadsafe(state["stop"].set_result, None)
        thread.join(10)

    return state["port"], stop


def run_client(client, url, lines):
    proc = subprocess.run(
        [client, "--header", "X-Test: from-web", "--protocol", "chat", url],
        input="".join(l + "\n" for l in lines).encode(),
        capture_output=True,
        timeout=30,
    )
    return proc.returncode, proc.stdout.decode(errors="replace").splitlines(), proc.stderr.decode()


def scenario(name, client, url):
    big = "x" * (100 * 1024)
    code, out, err = run_client(client, url, ["hello", "two words", big, "header", "protocol"])
    check(f"{name}: exit 0 after the client's close", code == 0, (code, err))
    check(f"{name}: each line comes back, in order", out[:3] == ["hello", "two words", big],
          [o[:40] for o in out])
    check(f"{name}: the extra header reaches the server", out[3:4] == ["from-web"], out[3:])
    check(f"{name}: the offered subprotocol is chosen", out[4:5] == ["chat"], out[4:])
    code, out, err = run_client(client, url, ["one", "bye", "never sent"])
    check(f"{name}: the server's close ends the client with 0", code == 0 and out == ["one"],
          (code, out, err))


def main():
    if len(sys.argv) != 3:
        print("usage: ws_clients.py PATH/TO/ws_client NODE_PREFIX", file=sys.stderr)
        sys.exit(2)
    client, node_prefix = sys.argv[1], sys.argv[2]
    port, stop = python_server()
    try:
        scenario("python websockets", client, f"ws://127.0.0.1:{port}/")
    finally:
        stop()
    node = subprocess.Popen(
        ["node", os.path.join(os.path.dirname(__file__), "ws_node_server.mjs")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "NODE_PREFIX": node_prefix},
    )
    try:
        line = node.stdout.readline().decode().strip()
        if not line.isdigit():
            raise RuntimeError(f"the node server did not start: {line!r}")
        scenario("node ws", client, f"ws://127.0.0.1:{line}/")
    finally:
        node.stdin.close()
        try:
            node.wait(10)
        except subprocess.TimeoutExpired:
            node.kill()
            node.wait()
    verdict("ws_clients")


if __name__ == "__main__":
    main()
