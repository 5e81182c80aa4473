#!/usr/bin/env bash
# Interop: the WebSocket client (examples/ws_client --echo --deflate) against the Autobahn
# testsuite's fuzzingserver, cases 1–7 and 9 (framing, pings and pongs, reserved bits, opcodes,
# fragments, UTF-8, the closing handshake, limits and performance), and of 12–13
# (permessage-deflate) the 18 message sizes of 12.1 and two sizes under each of the suite's 7
# responses (13.*.1, 13.*.9) — AUTOBAHN_ALL=1 runs all 216 (8.5 minutes on two cores; the
# server's run, autobahn_server.sh, always takes every one). Every case must end OK, NON-STRICT or
# INFORMATIONAL; a FAILED, UNIMPLEMENTED or missing case fails the test.
#
#   tests/interop/autobahn_client.sh target/release/examples/ws_client
#
# wstest comes from tests/interop/autobahn_env.sh (Python 2.7, a virtualenv). The
# fuzzingserver runs on a free port of 127.0.0.1 and is stopped by its PID whatever happens.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() {
    echo "autobahn_client: FAIL: $*" >&2
    exit 1
}

client=${1:?usage: autobahn_client.sh PATH/TO/ws_client}
[[ -x $client ]] || die "$client is not built"

source tests/interop/autobahn_env.sh

work=$(mktemp -d)
server_pid=""
cleanup() {
    if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# AUTOBAHN_ALL=1: every case of 12 and 13 (516 in all).
if [[ -n ${AUTOBAHN_ALL:-} ]]; then
    deflate_cases='"12.*", "13.*"'
else
    deflate_cases='"12.1.*", "13.1.1", "13.2.1", "13.3.1", "13.4.1", "13.5.1", "13.6.1", "13.7.1",
            "13.1.9", "13.2.9", "13.3.9", "13.4.9", "13.5.9", "13.6.9", "13.7.9"'
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/spec.json" <<SPEC
{
  "url": "ws://127.0.0.1:$port",
  "outdir": "$work/reports",
  "cases": ["1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "9.*", $deflate_cases],
  "exclude-cases": [],
  "exclude-agent-cases": {}
}
SPEC
(cd "$work" && exec "$venv/bin/wstest" -m fuzzingserver -s "$work/spec.json" >"$work/server.log" 2>&1) &
server_pid=$!
for _ in $(seq 1 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1).close()" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || die "the fuzzingserver exited: $(tail -n 5 "$work/server.log")"
    sleep 0.2
done

base="ws://127.0.0.1:$port"
count=$(timeout 30 "$client" "$base/getCaseCount" </dev/null | head -n 1)
[[ $count =~ ^[0-9]+$ ]] || die "getCaseCount answered ${count@Q}"
echo "autobahn_client: $count cases"
for ((case = 1; case <= count; case++)); do
    # A case may end with the client failing the connection on purpose: its exit code is not
    # the verdict, the report is.
    timeout 120 "$client" --echo --deflate "$base/runCase?case=$case&agent=web" </dev/null >/dev/null 2>&1 || true
done
timeout 60 "$client" "$base/updateReports?agent=web" </dev/null >/dev/null 2>&1 || true

autobahn_verdict autobahn_client "$work/reports/index.json" web "$count"
