#!/usr/bin/env python3
"""Interop: HTTP/2 served by the examples, against real HTTP/2 clients.

    python3 tests/interop/h2_clients.py target/release/examples

Starts `hello` and `echo` plain (h2c by prior knowledge on the HTTP/1.1 port) and `hello`
over TLS (h2 by ALPN, a test CA), and checks: curl --http2-prior-knowledge and --http2 (a
100 KiB body echoed whole over h2c; over TLS, ALPN h2 and HTTP/1.1 still there for
--http1.1); nghttp (100 requests on one connection, h2c and TLS); Python's h2 state machine
(200 streams at once on one connection, each answered with its own path) and httpx[http2]
(50 concurrent requests over TLS on one connection); Node's http2 (h2c and TLS); Go's
net/http (TLS, HTTP/2 negotiated). Live streams: WebSocket over HTTP/2 (RFC 8441) against
`ws_echo` with Python's h2 — three WebSockets on one connection, h2c and TLS — and ten of
`chat`'s event streams on one h2c connection, each getting a message posted to their room.

Needs curl, nghttp, node, go and Python's h2 and httpx[http2]: the caller installs them; a
missing one is a failure. Every wait is bounded; the servers are stopped by PID.
"""
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import h2.config
import h2.connection
import h2.events
import h2.settings
import httpx

from checks import check, free_port, verdict
import tls_certs


def wait_listening(port, proc, seconds=15):
    end = time.time() + seconds
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit(f"h2_clients: FAIL: a server exited before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"h2_clients: FAIL: nothing listens on {port}")


def out(*args, stdin=b"", seconds=60, env=None):
    r = subprocess.run(args, input=stdin, capture_output=True, timeout=seconds, env=env)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def curl_checks(plain, echo, tls, ca):
    code, body, err = out("curl", "-sS", "--http2-prior-knowledge", f"http://127.0.0.1:{plain}/",
                          "-w", " %{http_version}")
    check("curl --http2-prior-knowledge (h2c)", code == 0 and body == "Hello, World! 2", f"{code} {body!r} {err}")
    data = bytes((i * 7) % 251 for i in range(100 * 1024))
    path = os.path.join(tempfile.gettempdir(), f"h2-body-{os.getpid()}")
    with open(path, "wb") as f:
        f.write(data)
    try:
        r = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "--data-binary", f"@{path}",
                            f"http://127.0.0.1:{echo}/upload"], capture_output=True, timeout=60)
    finally:
        os.unlink(path)
    head, _, body = r.stdout.partition(b"\n\n")
    check("curl h2c: a 100 KiB body echoed whole",
          r.returncode == 0 and head.startswith(b"POST /upload\n") and body == data,
          f"{r.returncode} {head[:200]!r} {len(body)} bytes {r.stderr!r}")
    code, body, err = out("curl", "-sS", "--http2", "--cacert", ca, f"https://localhost:{tls}/",
                          "-w", " %{http_version}")
    check("curl --http2 over TLS: ALPN h2", code == 0 and body == "Hello, World! 2", f"{code} {body!r} {err}")
    code, body, err = out("curl", "-sS", "--http1.1", "--cacert", ca, f"https://localhost:{tls}/",
                          "-w", " %{http_version}")
    check("curl --http1.1 over TLS: ALPN http/1.1 still served", code == 0 and body == "Hello, World! 1.1",
          f"{code} {body!r} {err}")


def nghttp_checks(plain, tls):
    for name, url in (("h2c", f"http://127.0.0.1:{plain}/"), ("TLS", f"https://localhost:{tls}/")):
        code, text, err = out("nghttp", "-n", "-s", "-m", "100", url)
        # -s prints a line per request: its status and timings.
        ok = code == 0 and text.count(" 200 ") >= 100
        check(f"nghttp: 100 requests on one connection over {name}", ok, f"{code} {text[-400:]} {err}")


def python_h2_checks(plain):
    """200 streams opened at once on one h2c connection; each reply carries its own path."""
    s = socket.create_connection(("127.0.0.1", plain), timeout=10)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.increment_flow_control_window(1 << 24)
    s.sendall(conn.data_to_send())
    streams = [1 + 2 * i for i in range(200)]
    for sid in streams:
        conn.send_headers(sid, [(":method", "GET"), (":path", f"/s/{sid}"), (":scheme", "http"),
                                (":authority", "localhost")], end_stream=True)
    s.sendall(conn.data_to_send())
    bodies, ended = {}, set()
    end = time.time() + 20
    while len(ended) < len(streams) and time.time() < end:
        data = s.recv(65536)
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.DataReceived):
                bodies[event.stream_id] = bodies.get(event.stream_id, b"") + event.data
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                ended.add(event.stream_id)
        s.sendall(conn.data_to_send())
    s.close()
    right = all(bodies.get(sid, b"").startswith(f"GET /s/{sid}\n".encode()) for sid in streams)
    check("Python h2: 200 streams at once on one connection, each its own reply",
          len(ended) == 200 and right, f"{len(ended)} ended")


def ws_frame(opcode, payload, mask=b"\x01\x02\x03\x04"):
    """A client's WebSocket frame (masked), whole."""
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    else:
        head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def h2_session(port, tls_ca=None):
    """A client connection (h2c, or h2 by ALPN over TLS) and its h2 state machine."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if tls_ca:
        import ssl

        ctx = ssl.create_default_context(cafile=tls_ca)
        ctx.set_alpn_protocols(["h2"])
        s = ctx.wrap_socket(s, server_hostname="localhost")
        if s.selected_alpn_protocol() != "h2":
            raise SystemExit("h2_clients: FAIL: ALPN did not choose h2")
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    s.sendall(conn.data_to_send())
    return s, conn


def pump(s, conn, until, seconds=15):
    """Reads and answers frames until `until(event)` says all came; the events read."""
    events = []
    end = time.time() + seconds
    while time.time() < end and not until(events):
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        if not data:
            break
        for event in conn.receive_data(data):
            events.append(event)
            if isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        s.sendall(conn.data_to_send())
    return events


def data_of(events, stream):
    return b"".join(e.data for e in events
                    if isinstance(e, h2.events.DataReceived) and e.stream_id == stream)


def websocket_over_h2_checks(port, tls_ca=None):
    """RFC 8441 against ws_echo: the server enables extended CONNECT; three WebSockets on one
    connection each echo their own messages; one closes with the close handshake."""
    s, conn = h2_session(port, tls_ca)
    pump(s, conn, lambda ev: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in ev))
    enabled = conn.remote_settings.get(h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL) == 1
    streams = [1, 3, 5]
    for sid in streams:
        conn.send_headers(sid, [(":method", "CONNECT"), (":protocol", "websocket"),
                                (":scheme", "https" if tls_ca else "http"), (":path", "/"),
                                (":authority", "localhost"), ("sec-websocket-version", "13")])
    s.sendall(conn.data_to_send())
    heads = pump(s, conn, lambda ev: sum(isinstance(e, h2.events.ResponseReceived) for e in ev) == 3)
    ok = [e.stream_id for e in heads if isinstance(e, h2.events.ResponseReceived)
          and dict(e.headers).get(b":status") == b"200"]
    for sid in streams:
        for i in range(3):
            conn.send_data(sid, ws_frame(0x1, f"stream {sid} message {i}".encode()))
    s.sendall(conn.data_to_send())
    want = {sid: b"".join(bytes([0x81, len(m)]) + m for m in
                          (f"stream {sid} message {i}".encode() for i in range(3))) for sid in streams}
    events = pump(s, conn, lambda ev: all(data_of(ev, sid) == want[sid] for sid in streams))
    echoed = all(data_of(events, sid) == want[sid] for sid in streams)
    conn.send_data(1, ws_frame(0x8, (1000).to_bytes(2, "big")))
    s.sendall(conn.data_to_send())
    closing = pump(s, conn, lambda ev: any(isinstance(e, h2.events.StreamEnded) and e.stream_id == 1
                                           for e in ev))
    closed = data_of(closing, 1) == b"\x88\x02\x03\xe8" and any(
        isinstance(e, h2.events.StreamEnded) and e.stream_id == 1 for e in closing)
    s.close()
    over = "TLS (h2)" if tls_ca else "h2c"
    check(f"Python h2, RFC 8441 over {over}: extended CONNECT enabled, three WebSockets on one "
          "connection echo their own messages, the close handshake ends the stream",
          enabled and sorted(ok) == streams and echoed and closed,
          f"enabled={enabled} ok={ok} echoed={echoed} closed={closed}")


def event_streams_over_h2_check(chat):
    """Ten event streams of the chat on one h2c connection; a message posted (over HTTP/1.1)
    reaches each."""
    s, conn = h2_session(chat)
    room = f"h2room{os.getpid()}"
    streams = [1 + 2 * i for i in range(10)]
    for sid in streams:
        conn.send_headers(sid, [(":method", "GET"), (":path", f"/sse?room={room}"),
                                (":scheme", "http"), (":authority", "localhost")], end_stream=True)
    s.sendall(conn.data_to_send())
    heads = pump(s, conn, lambda ev: sum(isinstance(e, h2.events.ResponseReceived) for e in ev) == 10)
    opened = sum(isinstance(e, h2.events.ResponseReceived) and dict(e.headers).get(b":status") == b"200"
                 for e in heads)
    time.sleep(0.3)
    code, body, err = out("curl", "-sS", "--data-binary", "to every stream",
                          f"http://127.0.0.1:{chat}/api/messages?room={room}&name=h2")
    events = pump(s, conn, lambda ev: all(b"to every stream" in data_of(ev, sid) for sid in streams))
    got = sum(b"to every stream" in data_of(events, sid) for sid in streams)
    s.close()
    check("Python h2: ten chat event streams on one h2c connection each get a posted message",
          opened == 10 and got == 10, f"opened={opened} got={got} post={code} {body} {err}")


async def httpx_checks(tls, ca):
    async with httpx.AsyncClient(http2=True, verify=ca) as client:
        replies = await asyncio.gather(*(client.get(f"https://localhost:{tls}/{i}") for i in range(50)))
    ok = all(r.status_code == 200 and r.http_version == "HTTP/2" and r.text == "Hello, World!"
             for r in replies)
    check("httpx[http2]: 50 concurrent requests over TLS, HTTP/2", ok,
          f"{[(r.status_code, r.http_version) for r in replies[:3]]}")


NODE = r"""
const http2 = require('http2');
const fs = require('fs');
const [plain, tls, ca] = process.argv.slice(2);
function get(url, options) {
  return new Promise((done, fail) => {
    const session = http2.connect(url, options);
    session.on('error', fail);
    let left = 10, ok = 0;
    for (let i = 0; i < 10; i++) {
      const req = session.request({ ':path': '/' + i });
      let body = '', status = 0;
      req.on('response', h => { status = h[':status']; });
      req.setEncoding('utf8');
      req.on('data', d => { body += d; });
      req.on('end', () => {
        if (status === 200 && body === 'Hello, World!') ok++;
        if (--left === 0) { session.close(); done(ok); }
      });
    }
  });
}
(async () => {
  const a = await get('http://127.0.0.1:' + plain);
  const b = await get('https://localhost:' + tls, { ca: fs.readFileSync(ca) });
  console.log('h2c ' + a + ' tls ' + b);
  process.exit(0);
})().catch(e => { console.log('error ' + e); process.exit(1); });
setTimeout(() => { console.log('timeout'); process.exit(1); }, 15000);
"""

GO = r"""
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	pem, _ := os.ReadFile(os.Args[1])
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: true,
	}}
	for i := 0; i < 3; i++ {
		res, err := client.Get("https://localhost:" + os.Args[2] + "/")
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Println(res.StatusCode, res.Proto, string(body))
	}
}
"""


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: h2_clients.py PATH/TO/examples")
    examples = sys.argv[1]
    for tool in ("curl", "nghttp", "node", "go"):
        if not shutil.which(tool):
            raise SystemExit(f"h2_clients: FAIL: {tool} is not installed")
    work = tempfile.mkdtemp()
    procs = []
    try:
        ca, chain, key, _ = tls_certs.make(work)
        plain, echo, tls = free_port(), free_port(), free_port()
        ws_plain, ws_tls, chat = free_port(), free_port(), free_port()
        for args in ([f"{examples}/hello", "--port", str(plain)],
                     [f"{examples}/echo", "--port", str(echo)],
                     [f"{examples}/hello", "--port", str(tls), "--tls-cert", chain, "--tls-key", key],
                     [f"{examples}/ws_echo", "--port", str(ws_plain)],
                     [f"{examples}/ws_echo", "--port", str(ws_tls), "--tls-cert", chain, "--tls-key", key],
                     [f"{examples}/chat", "--port", str(chat)]):
            procs.append(subprocess.Popen([*args, "--workers", "1"], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        for port, proc in zip((plain, echo, tls, ws_plain, ws_tls, chat), procs):
            wait_listening(port, proc)
        websocket_over_h2_checks(ws_plain)
        websocket_over_h2_checks(ws_tls, ca)
        event_streams_over_h2_check(chat)
        curl_checks(plain, echo, tls, ca)
        nghttp_checks(plain, tls)
        python_h2_checks(echo)
        asyncio.run(asyncio.wait_for(httpx_checks(tls, ca), 30))
        script = os.path.join(work, "client.js")
        with open(script, "w") as f:
            f.write(NODE)
        code, text, err = out("node", script, str(plain), str(tls), ca)
        check("Node http2: 10 streams over h2c and over TLS", text.strip() == "h2c 10 tls 10", text + err)
        gofile = os.path.join(work, "client.go")
        with open(gofile, "w") as f:
            f.write(GO)
        env = dict(os.environ, GOCACHE=os.path.join(work, "gocache"), GOPATH=os.path.join(work, "gopath"))
        code, text, err = out("go", "run", gofile, ca, str(tls), seconds=180, env=env)
        check("Go net/http: three requests over TLS, HTTP/2", text.count("200 HTTP/2.0 Hello, World!") == 3,
              text + err)
        for p in procs:
            check(f"{p.args[0].rsplit('/', 1)[-1]} still running", p.poll() is None)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(work, ignore_errors=True)
    verdict("h2_clients")


if __name__ == "__main__":
    main()
