#!/usr/bin/env bash
# Overhead of `wrap(vec![rate_limits(..)], hello)` against the same hello handler unwrapped, per
# server core-second, with 1 and with 10 000 distinct callers.
#
#   benches/rate_limit_overhead.sh [--rounds R] [--duration S] [--connections C]
#
# The server (`examples/rate_limited`, one worker) is pinned to CPU 0 and wrk to CPU 1 with
# taskset. Every request is `GET /` with an `X-Forwarded-For` header naming one of N callers
# (a wrk Lua script, the same for both servers); the limiter uses hops 1, so each of the N names
# is a caller of its own, and allowances too high to refuse anything, so every request goes
# through the whole count. The server's CPU time is utime + stime from /proc/PID/stat before and
# after each run: requests / CPU seconds is what one core serves, whatever else the machine runs.
# Rounds alternate the servers so slow phases of a shared machine hit both.
#
# Needs wrk, taskset, python3 and two CPUs; builds the example with cargo (release). Prints one
# line per run, then the median of each configuration and the overhead.
set -euo pipefail
# shellcheck source=tests/interop/procs.sh
. "$(dirname "$0")/../tests/interop/procs.sh"
cd "$(dirname "$0")/.."

ROUNDS=3
DURATION=8
CONNECTIONS=32
while [[ $# -gt 0 ]]; do
    case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds R] [--duration S] [--connections C]" >&2; exit 2 ;;
    esac
done
for tool in wrk taskset python3 cargo; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed" >&2; exit 2; }
done
[[ $(nproc) -ge 2 ]] || { echo "FAIL: needs two CPUs (server on 0, wrk on 1)" >&2; exit 2; }

cargo build --release --example rate_limited >&2
BIN=${CARGO_TARGET_DIR:-target}/release/examples/rate_limited
[[ -x $BIN ]] || { echo "FAIL: no $BIN" >&2; exit 2; }

TMP=$(mktemp -d)
SERVER_PID=""
stop_server() {
    local pid=$SERVER_PID
    SERVER_PID=""
    stop_pid "$pid"
}
trap 'stop_server; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM

# One request string per caller, made once; request() hands them out in turn.
cat >"$TMP/callers.lua" <<'EOF'
local reqs, n, i = {}, 1, 0
function init(args)
    n = tonumber(args[1]) or 1
    for k = 1, n do
        local addr = string.format("10.%d.%d.%d", math.floor(k / 65536) % 256, math.floor(k / 256) % 256, k % 256)
        reqs[k] = wrk.format("GET", "/", { ["X-Forwarded-For"] = "192.0.2.1, " .. addr })
    end
end
function request()
    i = i % n + 1
    return reqs[i]
end
EOF

TICKS=$(getconf CLK_TCK)
cpu_ticks() { # utime + stime of PID (fields 14 and 15; the command name may hold spaces)
    local stat
    stat=$(<"/proc/$1/stat")
    stat=${stat##*) }
    read -r -a f <<<"$stat"
    echo $((f[11] + f[12]))
}

# run VARIANT CALLERS: prints "variant callers requests cpu_seconds"
run() {
    local variant=$1 callers=$2 port args i before after out requests
    port=$(free_port)
    if [[ $variant == limited ]]; then
        args=(--writes 4000000000 --reads 4000000000 --hops 1)
    else
        args=(--no-limit)
    fi
    taskset -c 0 "$BIN" --port "$port" --workers 1 "${args[@]}" </dev/null >"$TMP/server.log" 2>&1 &
    SERVER_PID=$!
    for ((i = 0; i < 100; i++)); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.05
    done
    # Warm-up: connections, caches, the caller table.
    taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d2s -s "$TMP/callers.lua" "http://127.0.0.1:$port/" -- "$callers" >/dev/null
    before=$(cpu_ticks "$SERVER_PID")
    out=$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s "$TMP/callers.lua" "http://127.0.0.1:$port/" -- "$callers")
    after=$(cpu_ticks "$SERVER_PID")
    stop_server
    if grep -q "Non-2xx" <<<"$out"; then
        echo "FAIL: some replies were not 2xx:" >&2
        echo "$out" >&2
        exit 1
    fi
    requests=$(awk '/requests in/ { print $1 }' <<<"$out")
    echo "$variant $callers $requests $(python3 -c "print(($after - $before) / $TICKS)")"
}

echo "# variant callers requests server_cpu_s req_per_core_s req_per_s"
: >"$TMP/results"
for ((r = 1; r <= ROUNDS; r++)); do
    for callers in 1 10000; do
        order=(plain limited)
        ((r % 2)) || order=(limited plain)
        for variant in "${order[@]}"; do
            line=$(run "$variant" "$callers")
            echo "$r $line" >>"$TMP/results"
            read -r v c n s <<<"$line"
            python3 -c "print(f'$v $c $n $s {$n / $s:.0f} {$n / $DURATION:.0f}')"
        done
    done
done

python3 - "$TMP/results" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r, v, c, n, s = line.split()
    runs.setdefault((v, int(c)), {})[int(r)] = int(n) / float(s)
print()
print("Requests per server core-second; overhead: how many fewer the limited server serves, from")
print("the medians, and the median of each round's own pair (the two ran back to back).")
print()
print("| callers | plain (median) | limited (median) | overhead of the medians | median paired overhead | paired, each round |")
print("|---:|---:|---:|---:|---:|---|")
sp = lambda x: f"{x:,.0f}".replace(",", " ")
for c in sorted({c for _, c in runs}):
    p, l = runs[("plain", c)], runs[("limited", c)]
    pm, lm = statistics.median(p.values()), statistics.median(l.values())
    pairs = [100 * (p[r] - l[r]) / p[r] for r in sorted(p) if r in l]
    each = ", ".join(f"{x:+.1f}%" for x in pairs)
    print(f"| {sp(c)} | {sp(pm)} | {sp(lm)} | {100 * (pm - lm) / pm:+.1f}% | {statistics.median(pairs):+.1f}% | {each} |")
EOF
