#!/usr/bin/env bash
# web-bench against the examples, briefly: `idle` holds 1 000 connections of each kind
# (keep-alive HTTP to examples/hello, WebSocket to examples/ws_echo — plain, and over TLS with
# a message sent after the upgrade —, event streams to the chat's /sse, and event streams on
# HTTP/2 connections, 100 to a connection, to `hello --events` and to the chat) and its record
# must say they were all held, none failed, and each cost the
# server between 1 and 2 000 bytes; `--help` of both commands answers. Every server is started
# here on a free port of 127.0.0.1 and stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/interop/procs.sh

cargo build --release -p web-bench
cargo build --release --example hello --example chat
cargo build --release --features tls --example ws_echo
command -v openssl >/dev/null || { echo "web_bench: FAIL: openssl is not installed (it makes the wss:// run's certificate)" >&2; exit 1; }
bench=target/release/web-bench
$bench idle --help >/dev/null
$bench fanout --help >/dev/null
$bench compare --help >/dev/null

out=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do stop_pid "$pid"; done
    rm -rf "$out"
}
trap cleanup EXIT

# run NAME BINARY SCHEME TARGET KIND [BENCH-ARGS...]: starts BINARY on a free port with one
# worker (and $SERVER_ARGS), measures 1 000 idle connections of KIND, checks the record.
run() {
    local name=$1 binary=$2 scheme=$3 target=$4 kind=$5
    shift 5
    local port
    port=$(free_port)
    local pid
    # shellcheck disable=SC2086
    "$binary" --port "$port" --workers 1 ${SERVER_ARGS:-} >"$out/$name.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    wait_port "$port" || true
    timeout 300 $bench idle --pid "$pid" --url "$scheme://127.0.0.1:$port$target" --kind "$kind" -n 1000 \
        --json "$out/$name.json" --svg "$out/$name.svg" "$@" | sed "s/^/$name: /"
    check "$name"
    stop_pid "$pid"
}

check() {
    local name=$1
    python3 - "$out/$name.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
name = sys.argv[2]
bad = []
if r["held"] != 1000: bad.append(f"held {r['held']} of 1000")
if r["failed"]: bad.append(f"{r['failed']} failed: {r['first_error']}")
b = r["bytes_per_connection"]
if b is None or not 1 <= b <= 2000: bad.append(f"{b} bytes per connection")
if r["closed_by_server"]: bad.append(f"{r['closed_by_server']} closed by the server")
if bad:
    sys.exit(f"web_bench: FAIL {name}: " + "; ".join(bad))
print(f"ok   web-bench idle against {name}: {b:.1f} B per idle connection")
PY
    [[ -s $out/$name.svg ]] || { echo "web_bench: FAIL $name: no chart" >&2; exit 1; }
}

run hello target/release/examples/hello http / http
run ws_echo target/release/examples/ws_echo ws / ws
run chat_sse target/release/examples/chat http "/sse?room=bench" sse
SERVER_ARGS="--events news" run hello_h2_sse target/release/examples/hello http /events h2-sse
run chat_h2_sse target/release/examples/chat http "/sse?room=bench2" h2-sse
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$out/key.pem" \
    -out "$out/cert.pem" -days 2 -subj /CN=127.0.0.1 >/dev/null 2>&1
SERVER_ARGS="--tls-cert $out/cert.pem --tls-key $out/key.pem" \
    run ws_echo_wss target/release/examples/ws_echo wss / ws --send subscribe

# fanout KIND SCHEME: one publish to 1 000 members of `hello --events news` (two workers),
# twice; every member must have it, each round's server CPU per member be measured.
fanout() {
    local kind=$1 scheme=$2 port pid
    port=$(free_port)
    target/release/examples/hello --port "$port" --workers 2 --events news >"$out/fanout-$kind.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    wait_port "$port" || true
    timeout 300 $bench fanout --pid "$pid" --url "$scheme://127.0.0.1:$port/events" --kind "$kind" \
        -n 1000 --rounds 2 --json "$out/fanout-$kind.json" | sed "s/^/fanout $kind: /"
    python3 - "$out/fanout-$kind.json" "$kind" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
kind = sys.argv[2]
rounds = r["rounds"]
bad = []
if r["members"] != 1000: bad.append(f"{r['members']} members of 1000")
if len(rounds) != 2: bad.append(f"{len(rounds)} rounds")
for x in rounds:
    if not 0 < x["first_ms"] <= x["median_ms"] <= x["last_ms"]: bad.append(f"times {x}")
    if not 0 < x["server_cpu_us_per_member"] < 10_000: bad.append(f"CPU {x}")
if bad:
    sys.exit(f"web_bench: FAIL fanout {kind}: " + "; ".join(bad))
print(f"ok   web-bench fanout {kind}: last member after {rounds[-1]['last_ms']:.1f} ms, "
      f"{rounds[-1]['server_cpu_us_per_member']:.1f} µs of server CPU per member")
PY
    stop_pid "$pid"
}

fanout ws ws
fanout sse http
fanout h2-sse http
echo "web_bench: passed"
