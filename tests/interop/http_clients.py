#!/usr/bin/env python3
"""Interop checks with Python's http.client (and raw sockets) against the `hello` and `echo`
examples.

    tests/interop/http_clients.py target/release/examples/hello target/release/examples/echo

Standard library only. Each server is started on a free port of 127.0.0.1, waited for, checked,
and stopped by PID (terminate, then kill) whatever happens. Every socket operation has a timeout.
Prints one line per check; exits 1 if any check failed, 2 on bad usage or a server that never
came up.
"""

import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HOST = "127.0.0.1"
IO_TIMEOUT = 10.0  # seconds, per socket operation
START_TIMEOUT = 15.0  # seconds for a server to accept its first connection
STOP_TIMEOUT = 5.0  # seconds between terminate and kill
WORKERS = "2"

failures = []


class CheckFailed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise CheckFailed(what)


def expect_eq(got, want, what):
    if got != want:
        raise CheckFailed(f"{what}:\n    want {want!r}\n    got  {got!r}")


def check(name, fn, *args):
    try:
        fn(*args)
    except CheckFailed as e:
        failures.append(name)
        print(f"FAIL {name}: {e}", flush=True)
    except Exception as e:  # a timeout, a reset, a protocol error in http.client, ...
        failures.append(name)
        print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
    else:
        print(f"PASS {name}", flush=True)


# ---------------------------------------------------------------- servers


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Server:
    """One example program on a free port, stopped by PID on exit."""

    def __init__(self, binary):
        self.binary = binary
        self.proc = None
        self.port = None
        self.log = tempfile.TemporaryFile()

    def __enter__(self):
        try:
            return self._start()
        except BaseException:
            self.stop()
            self.log.close()
            raise

    def _start(self):
        # The port is free when picked; another process could take it before the server binds,
        # so a server that exits at once is retried on a new port.
        for _attempt in range(3):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--workers", WORKERS],
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=self.log,
            )
            if self._wait_accepting():
                return self
            if self.proc.poll() is None:
                raise RuntimeError(
                    f"{self.binary} did not accept on port {self.port} within "
                    f"{START_TIMEOUT}s; its output:\n{self.output()}"
                )
        raise RuntimeError(
            f"{self.binary} exited at start (exit status {self.proc.returncode}); "
            f"its output:\n{self.output()}"
        )

    def _wait_accepting(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection((HOST, self.port), timeout=1.0):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def output(self):
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT)

    def __exit__(self, *exc):
        try:
            self.stop()
        finally:
            self.log.close()
        return False


# ---------------------------------------------------------------- helpers


class RecordingConnection(http.client.HTTPConnection):
    """An HTTPConnection that keeps every byte it sends, to know the header order it used."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent = bytearray()

    def send(self, data):
        if hasattr(data, "read") or not isinstance(data, (bytes, bytearray)):
            raise TypeError("RecordingConnection sends bytes only")
        self.sent += data
        super().send(data)


def conn_to(server, cls=http.client.HTTPConnection):
    return cls(HOST, server.port, timeout=IO_TIMEOUT)


def echo_of_sent_head(sent, body):
    """The echo body `echo` must return for a request whose head was `sent` (the bytes
    http.client wrote): `<method> <target>\\n`, `name: value\\n` per header in the order sent
    (name lower-cased, value trimmed), `\\n`, then the (decoded) body."""
    head, sep, _rest = bytes(sent).partition(b"\r\n\r\n")
    expect(sep, "http.client sent no complete head")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ")
    out = f"{method} {target}\n"
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        expect(colon, f"odd header line sent: {line!r}")
        out += name.lower() + ": " + value.strip(" \t") + "\n"
    return out.encode("latin-1") + b"\n" + body


def sent_header_names(sent):
    head = bytes(sent).partition(b"\r\n\r\n")[0].decode("latin-1")
    return [line.split(":", 1)[0].lower() for line in head.split("\r\n")[1:]]


def raw_exchange(server, data):
    """Writes `data` on a new socket, then reads until the server closes or IO_TIMEOUT passes
    without a byte. Returns (bytes received, closed-by-server)."""
    with socket.create_connection((HOST, server.port), timeout=IO_TIMEOUT) as s:
        s.sendall(data)
        return read_to_eof(s)


def read_to_eof(s):
    got = bytearray()
    s.settimeout(IO_TIMEOUT)
    while True:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return bytes(got), False
        except ConnectionResetError:
            # A reset after the reply is also the server closing.
            return bytes(got), True
        if not chunk:
            return bytes(got), True
        got += chunk


def split_responses(data):
    """Splits raw bytes into (status, {lower name: value}, body) triples, bodies by
    Content-Length (absent = none). Whatever follows the last complete one is returned too."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            break
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        n = int(headers.get("content-length", "0"))
        if len(rest) < n:
            break
        out.append((lines[0], status, headers, rest[:n]))
        data = rest[n:]
    return out, data


# ---------------------------------------------------------------- hello


def hello_get(server):
    c = conn_to(server)
    try:
        c.request("GET", "/")
        r = c.getresponse()
        body = r.read()
        expect_eq(r.status, 200, "status")
        expect_eq(r.version, 11, "HTTP version of the reply")
        expect_eq(body, b"Hello, World!", "body")
        expect_eq(r.getheader("Content-Type"), "text/plain", "Content-Type")
        expect_eq(r.getheader("Content-Length"), "13", "Content-Length")
        expect(r.getheader("Transfer-Encoding") is None, "unexpected Transfer-Encoding")
        expect(r.getheader("Date"), "no Date header")
    finally:
        c.close()


def hello_keep_alive(server):
    c = conn_to(server)
    try:
        c.connect()
        sock = c.sock
        local = sock.getsockname()
        for i, path in enumerate(["/", "/a", "/b?c=d", "/long/" + "x" * 2000, "/"]):
            c.request("GET", path)
            r = c.getresponse()
            body = r.read()
            expect_eq((r.status, body), (200, b"Hello, World!"), f"request {i + 1} ({path[:20]})")
            expect(not r.will_close, f"request {i + 1}: reply says the connection will close")
            expect(
                c.sock is sock and sock.getsockname() == local,
                f"request {i + 1} went on a new connection",
            )
    finally:
        c.close()


def hello_head(server):
    c = conn_to(server)
    try:
        c.connect()
        sock = c.sock
        c.request("HEAD", "/")
        r = c.getresponse()
        body = r.read()
        expect_eq(r.status, 200, "HEAD status")
        expect_eq(body, b"", "HEAD body")
        expect_eq(r.getheader("Content-Length"), "13", "HEAD Content-Length (as a GET would)")
        expect_eq(r.getheader("Content-Type"), "text/plain", "HEAD Content-Type")
        # Body bytes after a HEAD reply would be read as the start of the next reply.
        c.request("GET", "/")
        r = c.getresponse()
        expect_eq((r.status, r.read()), (200, b"Hello, World!"), "GET after HEAD")
        expect(c.sock is sock, "GET after HEAD went on a new connection")
    finally:
        c.close()
    # And on the wire: nothing at all after the HEAD reply's head.
    data, closed = raw_exchange(
        server, b"HEAD /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    expect(closed, "server did not close after HEAD with Connection: close")
    head, sep, rest = data.partition(b"\r\n\r\n")
    expect(sep, f"no complete reply head: {data!r}")
    expect_eq(rest, b"", "bytes after the HEAD reply head")
    expect(head.startswith(b"HTTP/1.1 200 "), f"HEAD status line: {head[:40]!r}")


def hello_http10_closes(server):
    data, closed = raw_exchange(server, b"GET / HTTP/1.0\r\n\r\n")
    replies, rest = split_responses(data)
    expect_eq(len(replies), 1, f"number of replies in {data!r}")
    _line, status, headers, body = replies[0]
    expect_eq((status, body), (200, b"Hello, World!"), "HTTP/1.0 reply")
    expect_eq(rest, b"", "bytes after the reply")
    expect(closed, "server did not close the HTTP/1.0 connection")


def hello_http10_keep_alive(server):
    with socket.create_connection((HOST, server.port), timeout=IO_TIMEOUT) as s:
        for i in range(2):
            s.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            data = bytearray()
            while True:
                replies, _rest = split_responses(bytes(data))
                if replies:
                    break
                chunk = s.recv(65536)
                expect(chunk, f"request {i + 1}: server closed a keep-alive HTTP/1.0 connection")
                data += chunk
            _line, status, headers, body = replies[0]
            expect_eq((status, body), (200, b"Hello, World!"), f"request {i + 1}")
            expect_eq(headers.get("connection", "").lower(), "keep-alive", "Connection header")


def hello_malformed_400(server):
    data, closed = raw_exchange(server, b"GET / HTTP/1.1\r\nHost : x\r\n\r\n")
    expect(data.startswith(b"HTTP/1.1 400 "), f"reply to whitespace before a colon: {data[:60]!r}")
    replies, rest = split_responses(data)
    expect_eq(len(replies), 1, f"number of replies in {data!r}")
    expect_eq(replies[0][2].get("connection", "").lower(), "close", "Connection header of the 400")
    expect_eq(rest, b"", "bytes after the 400")
    expect(closed, "server did not close after the 400")


def hello_malformed_more(server):
    # A few more refusals the README lists: each gets a 4xx/5xx and the connection closes.
    cases = [
        (b"GET / HTTP/1.1\r\n\r\n", 400),  # HTTP/1.1 without Host
        (b"GET / HTTP/1.1\nHost: x\n\n", 400),  # bare LF
        (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        (b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
    ]
    for raw, want in cases:
        data, closed = raw_exchange(server, raw)
        got = data[:12]
        expect(got.startswith(b"HTTP/1.1 %d" % want), f"{raw!r}: want {want}, got {data[:60]!r}")
        expect(closed, f"{raw!r}: server did not close")


# ---------------------------------------------------------------- echo


def echo_post_headers(server):
    c = conn_to(server, RecordingConnection)
    body = b"line one\r\nline two\n\x00\x01\xfe\xff binary & text"
    target = "/echo/p%20ath;x?q=1&r=%2F&s=a+b"
    try:
        c.request(
            "POST",
            target,
            body=body,
            headers={
                "X-Custom-Header": "Some Value",
                "X-Spaces": "inner  spaces kept   ",
                "UPPER-CASE": "MiXeD",
                "Content-Type": "application/octet-stream",
            },
        )
        r = c.getresponse()
        got = r.read()
        expect_eq(r.status, 200, "status")
        expect_eq(r.getheader("Content-Type"), "text/plain", "Content-Type")
        names = sent_header_names(c.sent)
        for n in ["host", "content-length", "x-custom-header", "x-spaces", "upper-case"]:
            expect(n in names, f"http.client did not send {n}: {names}")
        expect_eq(got, echo_of_sent_head(c.sent, body), "echo body")
        expect(b"x-spaces: inner  spaces kept\n" in got, "value not trimmed as the contract says")
    finally:
        c.close()


def echo_repeated_headers_and_get(server):
    # The low-level http.client API, with a header name sent twice and no body.
    c = conn_to(server, RecordingConnection)
    try:
        c.putrequest("GET", "/dup?a=1")
        c.putheader("X-Dup", "first")
        c.putheader("Accept", "*/*")
        c.putheader("X-Dup", "second")
        c.endheaders()
        r = c.getresponse()
        got = r.read()
        expect_eq(r.status, 200, "status")
        expect_eq(got, echo_of_sent_head(c.sent, b""), "echo body")
        # A second request on the same connection echoes its own head only.
        c.sent.clear()
        c.request("DELETE", "/thing/7")
        r = c.getresponse()
        expect_eq(r.read(), echo_of_sent_head(c.sent, b""), "second echo on the connection")
    finally:
        c.close()


def echo_chunked_post(server):
    pieces = [b"first piece\r\n", b"second", b"", b"x" * 70000, b"\r\n0\r\n\r\n tail"]
    c = conn_to(server, RecordingConnection)
    try:
        c.request(
            "POST",
            "/chunked",
            body=iter(pieces),
            headers={"Transfer-Encoding": "chunked", "X-After": "te"},
            encode_chunked=True,
        )
        r = c.getresponse()
        got = r.read()
        expect_eq(r.status, 200, "status")
        names = sent_header_names(c.sent)
        expect("transfer-encoding" in names, f"http.client did not chunk: {names}")
        expect("content-length" not in names, f"http.client sent a Content-Length: {names}")
        want = echo_of_sent_head(c.sent, b"".join(pieces))
        if got != want:
            # Show where they differ rather than 70 kB of x.
            i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), None)
            i = min(len(got), len(want)) if i is None else i
            raise CheckFailed(
                f"echo body differs at byte {i} (lengths got {len(got)}, want {len(want)}):\n"
                f"    want ...{want[max(0, i - 40):i + 40]!r}\n"
                f"    got  ...{got[max(0, i - 40):i + 40]!r}"
            )
    finally:
        c.close()


def echo_connection_close(server):
    c = conn_to(server, RecordingConnection)
    try:
        c.connect()
        # A second descriptor for the same socket: http.client closes its own when the reply
        # says close, this one is used to see what the server does.
        watch = socket.socket(fileno=os.dup(c.sock.fileno()))
    except Exception:
        c.close()
        raise
    try:
        c.request("GET", "/bye", headers={"Connection": "close"})
        r = c.getresponse()
        got = r.read()
        expect_eq(r.status, 200, "status")
        expect_eq(got, echo_of_sent_head(c.sent, b""), "echo body")
        expect_eq((r.getheader("Connection") or "").lower(), "close", "Connection header")
        expect(r.will_close, "http.client does not expect the server to close")
        rest, closed = read_to_eof(watch)
        expect_eq(rest, b"", "bytes after the reply")
        expect(closed, f"server did not close within {IO_TIMEOUT}s")
    finally:
        watch.close()
        c.close()


def echo_http10_closes(server):
    data, closed = raw_exchange(server, b"POST /ten HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc")
    replies, rest = split_responses(data)
    expect_eq(len(replies), 1, f"number of replies in {data!r}")
    _line, status, _headers, body = replies[0]
    expect_eq(status, 200, "status")
    expect_eq(body, b"POST /ten\ncontent-length: 3\n\nabc", "echo body")
    expect_eq(rest, b"", "bytes after the reply")
    expect(closed, "server did not close the HTTP/1.0 connection")


def echo_malformed_400(server):
    data, closed = raw_exchange(server, b"GET / HTTP/1.1\r\nHost : x\r\n\r\n")
    expect(data.startswith(b"HTTP/1.1 400 "), f"reply: {data[:60]!r}")
    expect(b"Host : x" not in data, "the malformed request reached the handler")
    expect(closed, "server did not close after the 400")


# ---------------------------------------------------------------- main


def main(argv):
    if len(argv) != 3:
        print(f"usage: {argv[0]} HELLO_BINARY ECHO_BINARY", file=sys.stderr)
        return 2
    hello, echo = argv[1], argv[2]
    for b in (hello, echo):
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            print(f"not an executable file: {b}", file=sys.stderr)
            return 2
    started = time.monotonic()
    # A TERM (e.g. from an outer `timeout`) unwinds like an error, so the servers are stopped.
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(143))

    suites = [
        (
            hello,
            [
                ("hello: GET / -> 200 text/plain 'Hello, World!' length 13", hello_get),
                ("hello: 5 requests on one keep-alive HTTPConnection", hello_keep_alive),
                ("hello: HEAD -> headers of a GET, no body", hello_head),
                ("hello: HTTP/1.0 request -> reply, then close", hello_http10_closes),
                ("hello: HTTP/1.0 with Connection: keep-alive stays open", hello_http10_keep_alive),
                ("hello: raw 'Host : x' -> 400, then close", hello_malformed_400),
                ("hello: raw malformed requests -> 4xx/505, then close", hello_malformed_more),
            ],
        ),
        (
            echo,
            [
                ("echo: POST with body and custom headers, exact echo", echo_post_headers),
                ("echo: repeated header names, then a second request", echo_repeated_headers_and_get),
                ("echo: chunked POST (encode_chunked=True) de-chunked", echo_chunked_post),
                ("echo: Connection: close -> server closes", echo_connection_close),
                ("echo: HTTP/1.0 POST -> echo, then close", echo_http10_closes),
                ("echo: raw 'Host : x' -> 400, then close", echo_malformed_400),
            ],
        ),
    ]
    for binary, checks in suites:
        try:
            with Server(binary) as server:
                failed_before = len(failures)
                print(f"-- {os.path.basename(binary)} on {HOST}:{server.port} (pid {server.proc.pid})")
                for name, fn in checks:
                    check(name, fn, server)
                if server.proc.poll() is not None:
                    failures.append(f"{binary} alive")
                    print(f"FAIL {binary} exited during the checks (status "
                          f"{server.proc.returncode}); output:\n{server.output()}")
                elif len(failures) > failed_before:
                    print(f"   ({os.path.basename(binary)} output so far:)\n{server.output()}")
        except RuntimeError as e:
            print(f"FAIL starting {binary}: {e}")
            return 2

    took = time.monotonic() - started
    if failures:
        print(f"http_clients.py: {len(failures)} check(s) FAILED in {took:.1f}s")
        return 1
    print(f"http_clients.py: all checks passed in {took:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
