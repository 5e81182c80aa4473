#!/usr/bin/env bash
# Interop: the server (examples/ws_echo --deflate) against the Autobahn testsuite's
# fuzzingclient: cases 1–7 and 9 (framing, pings, reserved bits, opcodes, fragments, UTF-8,
# closing, limits and performance) and 12–13 (permessage-deflate: 216 cases of compressed
# messages under every offer the suite makes). Every case must end OK, NON-STRICT or
# INFORMATIONAL; a FAILED, UNIMPLEMENTED or missing case fails the test.
#
#   tests/interop/autobahn_server.sh target/release/examples/ws_echo [CASES...]
#
# wstest comes from tests/interop/autobahn_env.sh (Python 2.7, a virtualenv). The server runs
# on a free port of 127.0.0.1 and is stopped by its PID whatever happens.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() {
    echo "autobahn_server: FAIL: $*" >&2
    exit 1
}

server=${1:?usage: autobahn_server.sh PATH/TO/ws_echo [CASES...]}
[[ -x $server ]] || die "$server is not built"
shift
cases=("$@")
expected=""
if ((${#cases[@]} == 0)); then
    cases=("1.*" "2.*" "3.*" "4.*" "5.*" "6.*" "7.*" "9.*" "12.*" "13.*")
    expected=516 # 300 of RFC 6455, 216 of permessage-deflate
fi

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

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$server" --port "$port" --deflate --max-message 16777216 --workers 1 >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1).close()" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || die "ws_echo exited: $(tail -n 5 "$work/server.log")"
    sleep 0.1
done

case_list=$(printf '"%s", ' "${cases[@]}")
cat >"$work/spec.json" <<SPEC
{
  "outdir": "$work/reports",
  "servers": [{"agent": "web", "url": "ws://127.0.0.1:$port"}],
  "cases": [${case_list%, }],
  "exclude-cases": [],
  "exclude-agent-cases": {}
}
SPEC
echo "autobahn_server: cases ${cases[*]} against $server --deflate"
(cd "$work" && timeout 2400 "$venv/bin/wstest" -m fuzzingclient -s "$work/spec.json" >"$work/client.log" 2>&1) ||
    die "wstest failed: $(tail -n 5 "$work/client.log")"
kill -0 "$server_pid" 2>/dev/null || die "ws_echo died during the run: $(tail -n 5 "$work/server.log")"
[[ -f $work/reports/index.json ]] || die "no report: $(tail -n 5 "$work/client.log")"
# With cases of one's own, every case the suite ran must pass; by default all 516 must be there.
count=${expected:-$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["web"]))' "$work/reports/index.json")}
autobahn_verdict autobahn_server "$work/reports/index.json" web "$count"
