#!/usr/bin/env bash
# Interop tests against real programs: curl and Python's http.client talking to the `hello`
# and `echo` examples over 127.0.0.1, the library's blocking client (the `fetch` example)
# talking to nginx and Python's http.server, the rate limiter behind nginx, `ws_echo`
# against Python's `websockets` and headless Chromium, and two chat instances sharing rooms
# and rate limits through Redis behind nginx, the WebSocket client against Python websockets,
# Node ws and the Autobahn fuzzingserver, SSE with Node and Chromium EventSource, HTTPS and WSS
# with curl, openssl s_client, Python, Node, Go and Chromium, HTTP/2 (h2c and h2) with curl,
# nghttp, Python h2 and httpx, Node and Go, the chat's metrics scraped by Prometheus. Run by
# .ci/run; runnable on its own:
#
#   tests/interop/run.sh
#
# Installs curl, nginx, redis-server, chromium, node, npm, openssl, go, prometheus and nghttp2-client
# with apt-get, websockets, httpx[http2] and prometheus_client with pip, and the eventsource package with npm, when they are missing
# (CI runs as root on a machine that may be new); a tool still missing afterwards is a failure,
# never a skip.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() {
    echo "interop: FAIL: $*" >&2
    exit 1
}

command -v python3 >/dev/null ||
    die "python3 is not installed (the http.client checks need it; install python3 first)"
command -v timeout >/dev/null || die "timeout (coreutils) is not installed"

# apt_install COMMAND PACKAGE: installs PACKAGE when COMMAND is missing (apt-get update once).
APT_UPDATED=""
apt_install() {
    local cmd=$1 package=$2
    command -v "$cmd" >/dev/null && return 0
    echo "interop: $cmd is missing; installing $package with apt-get"
    command -v apt-get >/dev/null || die "$cmd is missing and there is no apt-get to install it"
    export DEBIAN_FRONTEND=noninteractive
    if [[ -z $APT_UPDATED ]]; then
        timeout 600 apt-get update
        APT_UPDATED=1
    fi
    timeout 600 apt-get install -y "$package"
    command -v "$cmd" >/dev/null || die "$cmd is still missing after apt-get install $package"
}

# nginx lives in /usr/sbin, which a non-root PATH may lack.
[[ :$PATH: == *:/usr/sbin:* ]] || PATH=$PATH:/usr/sbin
apt_install curl curl
apt_install nginx nginx
apt_install redis-server redis-server
apt_install chromium chromium
apt_install node nodejs
apt_install npm npm
apt_install openssl openssl
apt_install go golang-go
apt_install prometheus prometheus
apt_install nghttp nghttp2-client
# Node's EventSource client from npm, into a directory of its own (removed at exit).
NODE_PREFIX=$(mktemp -d)
trap 'rm -rf "$NODE_PREFIX"' EXIT
echo "interop: installing the eventsource and ws packages with npm"
timeout 600 npm install --prefix "$NODE_PREFIX" --silent --no-audit --no-fund eventsource@3 ws@8 ||
    die "npm could not install eventsource and ws"
if ! python3 -c 'import websockets, sys; sys.exit(int(websockets.__version__.split(".")[0]) < 14)' 2>/dev/null; then
    echo "interop: installing Python's websockets with pip"
    timeout 600 python3 -m pip install --quiet 'websockets>=14' || die "pip could not install websockets"
fi
if ! python3 -c 'import requests' 2>/dev/null; then
    echo "interop: installing Python's requests with pip"
    timeout 600 python3 -m pip install --quiet requests || die "pip could not install requests"
fi
if ! python3 -c 'import prometheus_client' 2>/dev/null; then
    echo "interop: installing Python's prometheus_client (its text-format parser) with pip"
    timeout 600 python3 -m pip install --quiet prometheus_client || die "pip could not install prometheus_client"
fi
if ! python3 -c 'import httpx, h2' 2>/dev/null; then
    echo "interop: installing Python's httpx with HTTP/2 (h2) with pip"
    timeout 600 python3 -m pip install --quiet 'httpx[http2]' || die "pip could not install httpx[http2]"
fi
echo "interop: $(curl --version | head -n 1)"
echo "interop: httpx $(python3 -c 'import httpx; print(httpx.__version__)')"
echo "interop: websockets $(python3 -c 'import websockets; print(websockets.__version__)')"
echo "interop: $(chromium --version 2>/dev/null | head -n 1)"
echo "interop: node $(node --version), eventsource $(node -p "require('$NODE_PREFIX/node_modules/eventsource/package.json').version"), ws $(node -p "require('$NODE_PREFIX/node_modules/ws/package.json').version")"
echo "interop: $(python3 --version)"
echo "interop: $(openssl version), $(go version)"
echo "interop: $(nginx -v 2>&1)"
echo "interop: $(redis-server --version)"
echo "interop: $(prometheus --version 2>&1 | head -n 1)"

# The default target directory, as CI uses. With the `redis` feature: the chat's `--redis`;
# with `tls`: the examples' --tls-cert/--tls-key and ws_client's wss:// (the examples are the
# same without them otherwise).
unset CARGO_TARGET_DIR
cargo build --release --features redis,tls --examples
hello=target/release/examples/hello
echo=target/release/examples/echo
fetch=target/release/examples/fetch
limited=target/release/examples/rate_limited
ws_echo=target/release/examples/ws_echo
ws_client=target/release/examples/ws_client
chat=target/release/examples/chat
for built in "$hello" "$echo" "$fetch" "$limited" "$ws_echo" "$ws_client" "$chat"; do
    [[ -x $built ]] || die "the build did not produce $built"
done

failed=()
# Each script bounds its own I/O; the outer timeout is the last resort.
echo
echo "== interop: Python http.client =="
timeout -k 10 300 python3 tests/interop/http_clients.py "$hello" "$echo" || failed+=("http_clients.py (exit $?)")
echo
echo "== interop: curl =="
timeout -k 10 300 tests/interop/curl.sh "$hello" "$echo" || failed+=("curl.sh (exit $?)")
echo
echo "== interop: the blocking client (examples/fetch) against nginx and Python's http.server =="
timeout -k 10 300 tests/interop/client.sh "$fetch" || failed+=("client.sh (exit $?)")
echo
echo "== interop: rate limiting behind nginx =="
timeout -k 10 300 tests/interop/rate_limit_nginx.sh "$limited" || failed+=("rate_limit_nginx.sh (exit $?)")
echo
echo "== interop: WebSocket, Python's websockets against ws_echo =="
timeout -k 10 300 python3 tests/interop/ws_python.py "$ws_echo" || failed+=("ws_python.py (exit $?)")
echo
echo "== interop: the WebSocket client (examples/ws_client) against Python's websockets and Node's ws servers =="
timeout -k 10 120 python3 tests/interop/ws_clients.py "$ws_client" "$NODE_PREFIX" || failed+=("ws_clients.py (exit $?)")
echo
# The two Autobahn suites run side by side: each on a free port and in a directory of its own
# (the shared virtualenv is made first, once), one Python process busy each — the client
# suite's output is shown after the server suite's.
echo "== interop: the Autobahn test suite's environment =="
bash -c 'die() { echo "autobahn: $*" >&2; exit 1; }; source tests/interop/autobahn_env.sh' ||
    failed+=("autobahn_env.sh (exit $?)")
autobahn_client_log=$(mktemp)
timeout -k 10 1800 tests/interop/autobahn_client.sh "$ws_client" >"$autobahn_client_log" 2>&1 &
autobahn_client_pid=$!
echo
echo "== interop: ws_echo --deflate against the Autobahn fuzzingclient (cases 1-7, 9, 12, 13) =="
timeout -k 10 2400 tests/interop/autobahn_server.sh "$ws_echo" || failed+=("autobahn_server.sh (exit $?)")
echo
echo "== interop: the WebSocket client against the Autobahn fuzzingserver (cases 1-7, 9, 12, 13), run beside it =="
autobahn_client_status=0
wait "$autobahn_client_pid" || autobahn_client_status=$?
cat "$autobahn_client_log"
[ "$autobahn_client_status" -eq 0 ] || failed+=("autobahn_client.sh (exit $autobahn_client_status)")
echo
echo "== interop: compressed messages with the chat (Python websockets, C zlib on raw frames) =="
timeout -k 10 120 python3 tests/interop/chat_deflate.py "$chat" || failed+=("chat_deflate.py (exit $?)")
echo
echo "== interop: WebSocket, a page in headless Chromium against ws_echo =="
timeout -k 10 120 bash tests/interop/ws_chromium.sh "$ws_echo" || failed+=("ws_chromium.sh (exit $?)")
echo
echo "== interop: the chat demo in headless Chromium (two pages, a message, the chart, SIGTERM) =="
timeout -k 10 180 python3 tests/interop/chat_chromium.py "$chat" || failed+=("chat_chromium.py (exit $?)")
echo
echo "== interop: the chat over HTTPS and WSS in headless Chromium =="
timeout -k 10 180 python3 tests/interop/chat_chromium.py --tls "$chat" || failed+=("chat_chromium.py --tls (exit $?)")
echo
echo "== interop: HTTPS and WSS against curl, openssl s_client, Python, Node, Go and ws_client =="
timeout -k 10 400 python3 tests/interop/tls_clients.py target/release/examples "$NODE_PREFIX" || failed+=("tls_clients.py (exit $?)")

echo "== interop: HTTP/2 (h2c and h2 by ALPN) with curl, nghttp, Python h2 and httpx, Node and Go =="
timeout -k 10 400 python3 tests/interop/h2_clients.py target/release/examples || failed+=("h2_clients.py (exit $?)")
echo
echo "== interop: Server-Sent Events, curl -N and httpx against the chat =="
timeout -k 10 120 python3 tests/interop/sse_clients.py "$chat" || failed+=("sse_clients.py (exit $?)")
echo
echo "== interop: EventSource in Node (npm eventsource) and Chromium, reconnecting with Last-Event-ID =="
timeout -k 10 240 python3 tests/interop/sse_browsers.py "$chat" "$NODE_PREFIX" || failed+=("sse_browsers.py (exit $?)")
echo
echo "== interop: the chat's /metrics (prometheus_client's parser, a real Prometheus scraping it), --log, async route, stop time =="
timeout -k 10 240 python3 tests/interop/chat_metrics.py "$chat" || failed+=("chat_metrics.py (exit $?)")
echo
echo "== interop: two chat instances sharing rooms and rate limits through Redis, behind nginx =="
timeout -k 10 180 python3 tests/interop/fleet_nginx.py "$chat" || failed+=("fleet_nginx.py (exit $?)")

echo
if [[ ${#failed[@]} -ne 0 ]]; then
    die "${failed[*]}"
fi
echo "interop: all passed"
