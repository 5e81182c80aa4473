#!/usr/bin/env bash
# Interop: a page in headless Chromium opens a WebSocket to the library's echo server, sends
# messages and writes the echoes into the document; the dumped DOM must show them.
#
#   tests/interop/ws_chromium.sh target/release/examples/ws_echo
#
# Installs nothing: the caller installs Debian's `chromium` package (a missing `chromium` is a
# failure, never a skip). Starts the echo server (`--port P --max-message BYTES`, echo at `/`)
# and a small Python HTTP server (the standard library's http.server) for the page, each on a
# free port of 127.0.0.1, and stops both by PID on any exit. Every step is bounded in time.
#
# Chromium's --virtual-time-budget lets the clock run ahead whenever no network fetch is
# pending, and a WebSocket is not a fetch: alone, the DOM could be dumped before the echoes
# arrive. So the page starts a fetch of /hold at once, which the HTTP server answers only when
# the page fetches /done (after the WebSocket has closed) or after 20 s: virtual time waits for
# the WebSocket in real time, and the dump shows the page as it ended.
set -euo pipefail
# shellcheck source=tests/interop/procs.sh
. "$(dirname "$0")/procs.sh"

die() {
    echo "ws_chromium: FAIL: $*" >&2
    exit 1
}

[[ $# -eq 1 ]] || die "usage: $0 PATH/TO/ws_echo"
server_bin=$1
[[ -x $server_bin ]] || die "$server_bin is not an executable file"
command -v chromium >/dev/null ||
    die "chromium is not installed (install Debian's package: apt-get install -y chromium)"
command -v python3 >/dev/null || die "python3 is not installed (it serves the page)"
command -v timeout >/dev/null || die "timeout (coreutils) is not installed"
echo "ws_chromium: $(chromium --version 2>/dev/null | head -n 1)"

work=$(mktemp -d)
server_pid=""
http_pid=""
cleanup() {
    for pid in $server_pid $http_pid; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -9 "$pid" 2>/dev/null || true
        fi
    done
    rm -rf "$work"
}
trap cleanup EXIT

# wait_listening PORT PID WHAT: until PORT accepts connections (10 s), while PID lives.
wait_listening() {
    local port=$1 pid=$2 what=$3
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || die "$what exited before listening on port $port"
        if python3 -c "import socket, sys; socket.create_connection(('127.0.0.1', $port), timeout=1).close()" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    die "$what is not listening on port $port after 10 s"
}

ws_port=$(free_port)
"$server_bin" --port "$ws_port" --max-message 65536 >"$work/server.log" 2>&1 </dev/null &
server_pid=$!
wait_listening "$ws_port" "$server_pid" "the echo server"

# The page: every result goes into <pre id="log"> as one line, and the title says when all is
# done. The expected lines are computed by the script, so they are not in the page's source.
mkdir "$work/site"
cat >"$work/site/page.html" <<EOF
<!doctype html>
<html>
<head><meta charset="utf-8"><title>waiting</title></head>
<body>
<pre id="log"></pre>
<script>
"use strict";
// Pending until /done: holds virtual time (see the top of ws_chromium.sh).
fetch("/hold").catch(() => {});
const log = (line) => { document.getElementById("log").textContent += line + "\n"; };
const text = "hello from chromium " + (6 * 7) + " " + String.fromCodePoint(0x20ac, 0x1d11e);
const big = "abcdefghij".repeat(5000); // 50 000 characters
const bytes = new Uint8Array([1, 2, 3, 250, 0, 255]);
const expected = 3;
let got = 0;
let ws;
try {
    ws = new WebSocket("ws://127.0.0.1:$ws_port/");
} catch (e) {
    log("ERROR constructing: " + e);
}
ws.binaryType = "arraybuffer";
ws.onopen = () => {
    log("open");
    ws.send(text);
    ws.send(bytes);
    ws.send(big);
};
ws.onmessage = (event) => {
    if (typeof event.data === "string") {
        if (event.data.length > 1000) {
            log("big echo " + event.data.length + " " + (event.data === big ? "same" : "different"));
        } else {
            log("text echo: " + event.data);
        }
    } else {
        log("binary echo: " + Array.from(new Uint8Array(event.data)).join(","));
    }
    got += 1;
    if (got === expected) {
        ws.close(1000, "done");
    }
};
ws.onerror = () => log("ERROR event");
ws.onclose = (event) => {
    log("closed " + event.code + " " + (event.wasClean ? "clean" : "unclean"));
    document.title = "finished";
    fetch("/done");
};
</script>
</body>
</html>
EOF

http_port=$(free_port)
cat >"$work/serve.py" <<'EOF'
"""Serves the page's folder; GET /hold waits until GET /done (or 20 s)."""
import functools
import http.server
import sys
import threading

done = threading.Event()


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path in ("/hold", "/done"):
            if self.path == "/done":
                done.set()
            else:
                done.wait(20)
            body = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)
        else:
            super().do_GET()


port, root = int(sys.argv[1]), sys.argv[2]
handler = functools.partial(Handler, directory=root)
http.server.ThreadingHTTPServer(("127.0.0.1", port), handler).serve_forever()
EOF
python3 "$work/serve.py" "$http_port" "$work/site" >"$work/http.log" 2>&1 </dev/null &
http_pid=$!
wait_listening "$http_port" "$http_pid" "the page's HTTP server"

mkdir "$work/profile"
dom=$work/dom.html
status=0
timeout -k 5 60 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --virtual-time-budget=5000 \
    --dump-dom "http://127.0.0.1:$http_port/page.html" >"$dom" 2>"$work/chromium.log" || status=$?
if [[ $status -ne 0 ]]; then
    tail -n 20 "$work/chromium.log" >&2
    die "chromium exited with status $status"
fi

echo "ws_chromium: the page's log:"
sed -n '/<pre id="log">/,/<\/pre>/p' "$dom" | sed 's/^/    /'

euro_clef=$(printf '\xe2\x82\xac\xf0\x9d\x84\x9e')
want=(
    "open"
    "text echo: hello from chromium 42 $euro_clef"
    "binary echo: 1,2,3,250,0,255"
    "big echo 50000 same"
    "closed 1000 clean"
)
# The log's lines alone (the page's source, also in the DOM, must not count).
sed -n '/<pre id="log">/,/<\/pre>/p' "$dom" | sed -e 's/.*<pre id="log">//' -e 's/<\/pre>.*//' >"$work/log.txt"
failed=0
for line in "${want[@]}"; do
    if grep -qxF -- "$line" "$work/log.txt"; then
        echo "ws_chromium: ok   $line"
    else
        echo "ws_chromium: FAIL missing: $line"
        failed=$((failed + 1))
    fi
done
if grep -q "^ERROR" "$work/log.txt"; then
    echo "ws_chromium: FAIL the page logged an error"
    failed=$((failed + 1))
fi
grep -q "<title>finished</title>" "$dom" || {
    echo "ws_chromium: FAIL the page did not finish (title is not 'finished')"
    failed=$((failed + 1))
}
kill -0 "$server_pid" 2>/dev/null || {
    echo "ws_chromium: FAIL the echo server exited"
    failed=$((failed + 1))
}
echo "ws_chromium: $((${#want[@]} + 3 - failed)) passed, $failed failed"
[[ $failed -eq 0 ]]
