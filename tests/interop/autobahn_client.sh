#!/usr/bin/env bash
# Interop: the WebSocket client (examples/ws_client --echo) against the Autobahn testsuite's
# fuzzingserver, cases 1–7 and 9 (framing, pings and pongs, reserved bits, opcodes, fragments,
# UTF-8, the closing handshake, limits and performance). Every case must end OK, NON-STRICT or
# INFORMATIONAL; a FAILED, UNIMPLEMENTED or missing case fails the test.
#
#   tests/interop/autobahn_client.sh target/release/examples/ws_client
#
# `autobahntestsuite` runs on Python 2 only: this script makes a virtualenv for it from a
# Python 2.7 it finds (on PATH, or pyenv's), installing the package from the registry with pip
# the first time (kept in $AUTOBAHN_VENV, default ~/.cache/web-autobahn). No Python 2.7 is a
# failure, never a skip. The fuzzingserver runs on a free port of 127.0.0.1 and is stopped by
# its PID whatever happens.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() {
    echo "autobahn_client: FAIL: $*" >&2
    exit 1
}

client=${1:?usage: autobahn_client.sh PATH/TO/ws_client}
[[ -x $client ]] || die "$client is not built"

python2=""
for candidate in python2.7 python2 "$HOME"/.pyenv/versions/2.7*/bin/python /root/.pyenv/versions/2.7*/bin/python; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (2, 7))' 2>/dev/null; then
        python2=$(command -v "$candidate")
        break
    fi
done
[[ -n $python2 ]] || die "no Python 2.7 found (autobahntestsuite needs it; pyenv install 2.7.18)"

venv=${AUTOBAHN_VENV:-$HOME/.cache/web-autobahn}
if [[ ! -x $venv/bin/wstest ]]; then
    echo "autobahn_client: installing autobahntestsuite into $venv (Python 2.7: $python2)"
    timeout 600 "$python2" -m pip install --quiet virtualenv 2>/dev/null ||
        timeout 600 "$python2" -m ensurepip --user >/dev/null 2>&1 || true
    timeout 600 "$python2" -m virtualenv --quiet "$venv" || die "could not make a virtualenv with $python2"
    timeout 900 "$venv/bin/pip" install --quiet autobahntestsuite 2>/dev/null ||
        die "pip could not install autobahntestsuite"
fi
[[ -x $venv/bin/wstest ]] || die "wstest is missing from $venv"

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
cat >"$work/spec.json" <<SPEC
{
  "url": "ws://127.0.0.1:$port",
  "outdir": "$work/reports",
  "cases": ["1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "9.*"],
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
    timeout 120 "$client" --echo "$base/runCase?case=$case&agent=web" </dev/null >/dev/null 2>&1 || true
done
timeout 60 "$client" "$base/updateReports?agent=web" </dev/null >/dev/null 2>&1 || true

python3 - "$work/reports/index.json" "$count" <<'PY'
import json, sys
path, count = sys.argv[1], int(sys.argv[2])
results = json.load(open(path))["web"]
verdicts = {}
for case, r in results.items():
    verdicts.setdefault(r["behavior"], []).append(case)
    if r.get("behaviorClose") not in ("OK", "INFORMATIONAL", "NON-STRICT"):
        verdicts.setdefault("close " + r["behaviorClose"], []).append(case)
good = {"OK", "NON-STRICT", "INFORMATIONAL"}
bad = {k: v for k, v in verdicts.items() if k not in good}
summary = ", ".join(f"{k} {len(v)}" for k, v in sorted(verdicts.items()))
print(f"autobahn_client: {len(results)} of {count} cases reported: {summary}")
if len(results) != count or bad:
    for k, v in sorted(bad.items()):
        print(f"autobahn_client: {k}: {' '.join(sorted(v)[:20])}")
    print("autobahn_client: FAIL")
    sys.exit(1)
print("autobahn_client: passed")
PY
