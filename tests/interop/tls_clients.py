#!/usr/bin/env python3
"""Interop: HTTPS and WSS served by the examples, against real TLS clients.

    python3 tests/interop/tls_clients.py target/release/examples NODE_PREFIX

Makes a test CA and a leaf for localhost with the openssl command line, starts `hello` and
`ws_echo` with --tls-cert/--tls-key, and checks: curl (TLS 1.3 and 1.2, a plain HTTP request
to the TLS port answered by a plain 400, an untrusted certificate refused by curl); `openssl
s_client` (TLS 1.3 and 1.2 with ALPN http/1.1, session resumption in both, TLS 1.3 key
updates both ways, a TLS 1.2 renegotiation refused); Python's ssl module (keep-alive requests on one connection, 40
connections at once), requests, and websockets over wss://; Node's https and ws; Go's
net/http; and the library's own WebSocket client (examples/ws_client --ca) over wss://.

Needs curl, openssl, Python's requests and websockets, node with the ws package under
NODE_PREFIX, and go: the caller installs them; a missing one is a failure. Every wait is
bounded; the servers are stopped by PID.
"""
import asyncio
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

import requests
import websockets

from checks import check, free_port, verdict
import tls_certs


def wait_listening(port, proc, seconds=15):
    end = time.time() + seconds
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit(f"tls_clients: FAIL: a server exited before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"tls_clients: FAIL: nothing listens on {port}")


def out(*args, stdin=b"", seconds=30, env=None):
    r = subprocess.run(args, input=stdin, capture_output=True, timeout=seconds, env=env)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def curl_checks(port, ca, other_ca):
    url = f"https://localhost:{port}/"
    code, body, err = out("curl", "-sS", "--cacert", ca, "--tlsv1.3", url)
    check("curl over TLS 1.3", code == 0 and body == "Hello, World!", f"{code} {body!r} {err}")
    code, body, err = out("curl", "-sS", "--cacert", ca, "--tlsv1.2", "--tls-max", "1.2", url)
    check("curl over TLS 1.2", code == 0 and body == "Hello, World!", f"{code} {body!r} {err}")
    code, body, err = out("curl", "-sS", "--cacert", ca, url + "a", url + "b", "-w", "%{num_connects} ")
    check("curl: two requests, one connection", body == "Hello, World!1 Hello, World!0 ", repr(body))
    code, body, err = out("curl", "-sS", "-i", f"http://127.0.0.1:{port}/")
    check("plain HTTP to the TLS port: a plain 400 saying so",
          body.startswith("HTTP/1.1 400") and "speaks HTTPS" in body, repr(body))
    code, body, err = out("curl", "-sS", "--cacert", other_ca, url)
    check("curl refuses a certificate of another CA", code == 60, f"{code} {err}")


def s_client(port, ca, *extra, stdin=b""):
    return out("openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost",
               "-CAfile", ca, *extra, stdin=stdin, seconds=20)


def openssl_checks(port, work, ca):
    request = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    for version in ("-tls1_3", "-tls1_2"):
        # -ign_eof: read on after our request (its end of input) until the server closes.
        code, text, _ = s_client(port, ca, version, "-ign_eof", "-alpn", "http/1.1", stdin=request)
        check(f"openssl s_client {version}: verified, ALPN http/1.1, answered",
              "Verify return code: 0 (ok)" in text and "ALPN protocol: http/1.1" in text
              and "Hello, World!" in text, text[-600:])
        sess = os.path.join(work, f"sess{version}")
        s_client(port, ca, version, "-ign_eof", "-sess_out", sess, stdin=request)
        code, text, _ = s_client(port, ca, version, "-ign_eof", "-sess_in", sess, stdin=request)
        check(f"openssl s_client {version}: the session resumes", "Reused, TLS" in text, text[-600:])
    # TLS 1.3 key updates ("K": ours, and the server's asked for; "k": ours alone) between
    # requests: every request after them is still answered.
    # s_client reads a command only at the start of a read of its input, one line at a time,
    # and not with -ign_eof: its input stays open a second after the last line instead.
    lines = [b"GET /1 HTTP/1.1\r\nHost: localhost\r\n\r\n", b"K\n",
             b"GET /2 HTTP/1.1\r\nHost: localhost\r\n\r\n", b"k\n", request]
    proc = subprocess.Popen(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost",
         "-CAfile", ca, "-tls1_3"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for line in lines:
        time.sleep(0.3)
        proc.stdin.write(line)
        proc.stdin.flush()
    time.sleep(1)
    proc.stdin.close()
    try:
        text = proc.stdout.read().decode(errors="replace")
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        text = "timed out"
    check("openssl s_client: TLS 1.3 key updates both ways, requests answered after them",
          text.count("KEYUPDATE") == 2 and text.count("Hello, World!") == 3, text[-600:])
    # TLS 1.2 renegotiation ("R" asks for it): refused, no second handshake.
    code, text, err = s_client(port, ca, "-tls1_2", stdin=b"R\n")
    check("TLS 1.2 renegotiation is refused", "no renegotiation" in (text + err), (text + err)[-600:])


def python_checks(port, ca):
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            got = b""
            for n in range(3):
                tls.sendall(b"GET /%d HTTP/1.1\r\nHost: localhost\r\n\r\n" % n)
                while got.count(b"Hello, World!") <= n:
                    chunk = tls.recv(4096)
                    if not chunk:
                        break
                    got += chunk
            check("Python ssl: three keep-alive requests on one connection",
                  got.count(b"Hello, World!") == 3, repr(got[-200:]))
            check("Python ssl: TLS 1.3 and http/1.1 chosen",
                  tls.version() == "TLSv1.3" and tls.selected_alpn_protocol() in (None, "http/1.1"),
                  f"{tls.version()} {tls.selected_alpn_protocol()}")
    results = []

    def one():
        try:
            r = requests.get(f"https://localhost:{port}/", verify=ca, timeout=10)
            results.append(r.status_code == 200 and r.text == "Hello, World!")
        except Exception as e:  # noqa: BLE001 - recorded as a failure
            results.append(repr(e))

    threads = [threading.Thread(target=one) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    check("requests: 40 connections at once", results.count(True) == 40, repr(results[:3]))


async def websockets_checks(port, ca):
    ctx = ssl.create_default_context(cafile=ca)
    async with websockets.connect(f"wss://localhost:{port}/", ssl=ctx, max_size=1 << 20) as ws:
        await ws.send("hello over wss")
        text = await asyncio.wait_for(ws.recv(), 10)
        await ws.send(bytes(range(256)) * 200)
        data = await asyncio.wait_for(ws.recv(), 10)
    check("Python websockets over wss://: text and 51 200 bytes echoed",
          text == "hello over wss" and data == bytes(range(256)) * 200, repr(text))


NODE = r"""
const https = require('https'), fs = require('fs');
const WebSocket = require(process.argv[4] + '/node_modules/ws');
const ca = fs.readFileSync(process.argv[3]);
const port = process.argv[2];
https.get({host: 'localhost', port, path: '/', ca}, res => {
  let body = '';
  res.on('data', d => body += d);
  res.on('end', () => {
    console.log('https ' + res.statusCode + ' ' + body);
    const ws = new WebSocket(`wss://localhost:${process.argv[5]}/`, {ca});
    ws.on('open', () => ws.send('node over wss'));
    ws.on('message', m => { console.log('ws ' + m); ws.close(1000); });
    ws.on('close', code => { console.log('closed ' + code); process.exit(0); });
    ws.on('error', e => { console.log('error ' + e); process.exit(1); });
  });
}).on('error', e => { console.log('error ' + e); process.exit(1); });
setTimeout(() => { console.log('timeout'); process.exit(1); }, 10000);
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
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for i := 0; i < 3; i++ {
		res, err := client.Get("https://localhost:" + os.Args[2] + "/")
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Println(res.StatusCode, res.Proto, res.TLS.Version == tls.VersionTLS13, string(body))
	}
}
"""


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: tls_clients.py PATH/TO/examples NODE_PREFIX")
    examples, node_prefix = sys.argv[1], sys.argv[2]
    for tool in ("curl", "openssl", "node", "go"):
        if not shutil.which(tool):
            raise SystemExit(f"tls_clients: FAIL: {tool} is not installed")
    work = tempfile.mkdtemp()
    procs = []
    try:
        ca, chain, key, _ = tls_certs.make(work)
        other = os.path.join(work, "other")
        os.mkdir(other)
        other_ca = tls_certs.make(other)[0]
        hello_port, ws_port = free_port(), free_port()
        tls = ["--tls-cert", chain, "--tls-key", key, "--workers", "1"]
        hello = subprocess.Popen([f"{examples}/hello", "--port", str(hello_port), *tls],
                                 stderr=subprocess.DEVNULL)
        procs.append(hello)
        ws = subprocess.Popen([f"{examples}/ws_echo", "--port", str(ws_port), *tls],
                              stderr=subprocess.DEVNULL)
        procs.append(ws)
        wait_listening(hello_port, hello)
        wait_listening(ws_port, ws)
        curl_checks(hello_port, ca, other_ca)
        openssl_checks(hello_port, work, ca)
        python_checks(hello_port, ca)
        asyncio.run(asyncio.wait_for(websockets_checks(ws_port, ca), 30))
        script = os.path.join(work, "client.js")
        with open(script, "w") as f:
            f.write(NODE)
        code, text, err = out("node", script, str(hello_port), ca, node_prefix, str(ws_port))
        check("Node https and ws over TLS",
              "https 200 Hello, World!" in text and "ws node over wss" in text
              and "closed 1000" in text, text + err)
        gofile = os.path.join(work, "client.go")
        with open(gofile, "w") as f:
            f.write(GO)
        env = dict(os.environ, GOCACHE=os.path.join(work, "gocache"), GOPATH=os.path.join(work, "gopath"))
        code, text, err = out("go", "run", gofile, ca, str(hello_port), seconds=180, env=env)
        check("Go net/http: three requests over TLS 1.3",
              text.count("200 HTTP/1.1 true Hello, World!") == 3, text + err)
        code, text, err = out(f"{examples}/ws_client", "--ca", ca, f"wss://localhost:{ws_port}/",
                              stdin=b"one\ntwo\n")
        check("examples/ws_client --ca over wss://", code == 0 and text == "one\ntwo\n", f"{code} {text!r} {err}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(work, ignore_errors=True)
    verdict("tls_clients")


if __name__ == "__main__":
    main()
