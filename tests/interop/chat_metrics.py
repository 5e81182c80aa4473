#!/usr/bin/env python3
"""The chat's observability against real tools: its `GET /metrics` read by the
`prometheus_client` package's text-format parser and scraped by a real Prometheus server (its
targets page says the scrape is up, its query API returns the chat's figures); `--log info`
writes the library's events and an access-log line per exchange (with the real status of a
deferred reply) to standard error; `/api/history` answers from async code; an idle chat exits
within 100 ms of SIGTERM. The chat serves a plain port and a TLS one (`--tls-port`) as one
server: a WebSocket member on the plain port and an event stream over TLS are both in the one
target Prometheus scrapes.

    python3 tests/interop/chat_metrics.py target/release/examples/chat

The chat and Prometheus run on free ports of 127.0.0.1 and are stopped by their PIDs whatever
happens. Every wait is bounded. Prints one line per check; exits 1 if any failed.
"""

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, free_port, post, verdict  # noqa: E402

NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(port, path, timeout=10):
    """Status and body of `GET path`."""
    try:
        with NO_PROXY.open(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers.get("Content-Type", "")


def wait_port(port, limit=15):
    until = time.time() + limit
    while time.time() < until:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def samples(text):
    """{(name, frozenset(labels)): value} and {family: type} of an exposition, by the parser."""
    values, types = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            values[(s.name, frozenset(s.labels.items()))] = s.value
    return values, types


def websocket(port):
    """A chat member of room `m`, its handshake done."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(
        b"GET /ws?room=m&name=watcher HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
        b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        % port
    )
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(4096)
    return s


def event_stream(port, ca):
    """An event stream of room `m` over TLS (HTTP/1.1 by ALPN), its head read."""
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["http/1.1"])
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    s = context.wrap_socket(raw, server_hostname="localhost")
    s.sendall(b"GET /sse?room=m HTTP/1.1\r\nHost: localhost\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(4096)
    return s


def prometheus_scrape(port):
    """Scrapes the chat with a real Prometheus; its view of `web_websockets` and
    `web_event_streams` (one target, whatever port each came to), or why not."""
    prom = shutil.which("prometheus")
    if prom is None:
        return None, "prometheus is not installed"
    web_port = free_port()
    data = tempfile.mkdtemp()
    config = os.path.join(data, "prometheus.yml")
    with open(config, "w") as f:
        f.write(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: chat\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{port}']\n"
        )
    proc = subprocess.Popen(
        [prom, f"--config.file={config}", f"--storage.tsdb.path={data}/tsdb",
         f"--web.listen-address=127.0.0.1:{web_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        if not wait_port(web_port, 60):
            return None, "Prometheus did not start: " + proc.stderr.read(2000).decode(errors="replace")
        until = time.time() + 60
        health, value = None, None
        while time.time() < until:
            # Prometheus listens before it is ready: until then its API answers 503 in text.
            status, body, _ = get(web_port, "/api/v1/targets")
            if status != 200:
                time.sleep(0.5)
                continue
            targets = json.loads(body)["data"]["activeTargets"]
            health = targets[0]["health"] if targets else None
            status, body, _ = get(web_port, "/api/v1/query?query=web_websockets")
            status2, body2, _ = get(web_port, "/api/v1/query?query=web_event_streams")
            if status != 200 or status2 != 200:
                time.sleep(0.5)
                continue
            result = json.loads(body)["data"]["result"]
            streams = json.loads(body2)["data"]["result"]
            if health == "up" and result and streams:
                value = float(result[0]["value"][1])
                return (health, value, float(streams[0]["value"][1]), len(targets)), ""
            time.sleep(0.5)
        return None, f"no scrape in 60 s (health {health})"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(data, ignore_errors=True)


def main():
    chat = sys.argv[1]
    port, tls_port = free_port(), free_port()
    log = tempfile.TemporaryFile()
    work = tempfile.mkdtemp()
    import tls_certs

    ca, chain, key, _ = tls_certs.make(work)
    proc = subprocess.Popen(
        [chat, "--port", str(port), "--workers", "2", "--log", "info", "--proxies", "0",
         "--tls-port", str(tls_port), "--tls-cert", chain, "--tls-key", key],
        stdout=subprocess.DEVNULL, stderr=log,
    )
    try:
        check("the chat starts on its plain and its TLS port", wait_port(port) and wait_port(tls_port))
        # Traffic of every kind: answered at once, deferred (a post waits for its id), not
        # found, refused by the server (no Host), async, a member and a stream that stay.
        post(port, "m", "hello", "203.0.113.9")
        status, body, _ = get(port, "/api/history?room=m")
        check("/api/history answers from async code with the room's messages",
              status == 200 and '"text":"hello"' in body, f"{status} {body}")
        check("an unknown path is 404", get(port, "/nowhere")[0] == 404)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET / HTTP/1.1\r\n\r\n")
            check("a request without Host is refused 400", s.recv(100).startswith(b"HTTP/1.1 400"))
        ws = websocket(port)
        sse = event_stream(tls_port, ca)
        time.sleep(0.3)

        status, text, ctype = get(port, "/metrics")
        check("/metrics is 200 in the text format",
              status == 200 and ctype.startswith("text/plain; version=0.0.4"), f"{status} {ctype}")
        try:
            values, types = samples(text)
            parsed = True
        except Exception as e:  # the parser's own error is the finding
            values, types, parsed = {}, {}, False
            check("prometheus_client parses /metrics", False, repr(e))
        if parsed:
            check("prometheus_client parses /metrics", True)
            v = lambda name, **labels: values.get((name, frozenset(labels.items())))
            check("open connections per worker (label worker)",
                  v("web_open_connections", worker="0") is not None
                  and v("web_open_connections", worker="1") is not None
                  and v("web_open_connections", worker="0") + v("web_open_connections", worker="1") >= 2,
                  str({k: x for k, x in values.items() if k[0] == "web_open_connections"}))
            check("a WebSocket member and an event stream", v("web_websockets") == 1 and v("web_event_streams") == 1,
                  f"{v('web_websockets')} {v('web_event_streams')}")
            check("replies by status class: 2xx, 4xx (404 and 400), 1xx (the upgrade)",
                  v("web_responses_total", **{"class": "2xx"}) >= 3
                  and v("web_responses_total", **{"class": "4xx"}) >= 2
                  and v("web_responses_total", **{"class": "1xx"}) == 1,
                  str({k: x for k, x in values.items() if k[0] == "web_responses_total"}))
            check("counters are counters and gauges gauges",
                  types.get("web_responses") == "counter" and types.get("web_websockets") == "gauge"
                  and types.get("web_queued_output_bytes") == "gauge"
                  and types.get("web_fleet_errors") == "counter", str(types))
            check("queued output and fleet errors are there",
                  v("web_queued_output_bytes") is not None and v("web_fleet_errors_total") == 0)

        scraped, why = prometheus_scrape(port)
        check("a real Prometheus scrapes one target for both ports (up, web_websockets = 1 "
              "from the plain port, web_event_streams = 1 over TLS)",
              scraped is not None and scraped[0] == "up" and scraped[1:] == (1.0, 1.0, 1),
              why or str(scraped))

        ws.close()
        sse.close()
        time.sleep(0.5)
        # Idle now: the stop is measured from SIGTERM to the process's exit.
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=10)
        took = time.monotonic() - began
        check("an idle chat exits 0 within 100 ms of SIGTERM", code == 0 and took < 0.1,
              f"exit {code} after {took * 1000:.0f} ms")

        log.seek(0)
        lines = log.read().decode(errors="replace").splitlines()
        access = [l for l in lines if "chat::access" in l]
        check("an access-log line per exchange, the deferred post with its real 201",
              any('target="/api/messages?room=m"' in l and "status=201" in l and "kind=Deferred" in l for l in access),
              "\n".join(access[:10]))
        check("the event stream over TLS is logged as such (200, tls=true)",
              any('target="/sse?room=m"' in l and "status=200" in l and "tls=true" in l for l in access),
              "\n".join(l for l in access if "/sse" in l))
        check("the WebSocket session is logged when it ends (101)",
              any('target="/ws?room=m&name=watcher"' in l and "status=101" in l for l in access))
        check("an access line names the client, the protocol and the route a router matched",
              any('target="/api/messages?room=m"' in l and 'protocol="HTTP/1.1"' in l
                  and "client=127.0.0.1" in l and 'route="/api/messages"' in l for l in access),
              "\n".join(access[:10]))
        check("the library's own event for the refused request (status 400)",
              any("web:" in l and "request refused" in l and "status=400" in l for l in lines),
              "\n".join(l for l in lines if "chat::access" not in l)[:2000])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    verdict("chat_metrics.py")


if __name__ == "__main__":
    main()
