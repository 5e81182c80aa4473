#!/usr/bin/env bash
# tlsfuzzer's TLS 1.3 record-layer scripts (keyupdate, zero-length-data, record-layer-limits,
# empty-alert, unencrypted-alert, record-padding, ccs: 164 cases) and others that apply to this
# server, against the `hello` example over TLS, on 127.0.0.1. Run by .ci/run; runnable on its own:
#
#   tests/interop/tlsfuzzer.sh
#
# tlsfuzzer and the tlslite-ng it needs are not ours to commit: they are read from
# $TLSFUZZER_DIR, by default ../shared/tlsfuzzer beside this checkout (kept there unmodified, runs
# offline). Python's ecdsa is installed with pip when missing. A missing piece fails the run.
#
# Every case must pass but those listed in EXPECTED_FAILURES below: each fails inside rustls'
# handshake, before our records take over (docs/GUIDE.md, "TLS and tlsfuzzer", says why), and is
# passed to the script as an expected failure — should one start passing, the script fails too.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() {
    echo "tlsfuzzer: FAIL: $*" >&2
    exit 1
}

TLSFUZZER_DIR=${TLSFUZZER_DIR:-$(cd .. && pwd)/shared/tlsfuzzer}
[[ -d $TLSFUZZER_DIR/tlsfuzzer/_apps && -d $TLSFUZZER_DIR/tlslite ]] ||
    die "no tlsfuzzer at $TLSFUZZER_DIR (set TLSFUZZER_DIR to a checkout with tlsfuzzer/ and tlslite/)"
command -v python3 >/dev/null || die "python3 is not installed"
command -v openssl >/dev/null || die "openssl is not installed"
if ! python3 -c 'import ecdsa' 2>/dev/null; then
    echo "tlsfuzzer: installing Python's ecdsa with pip"
    timeout 600 python3 -m pip install --quiet ecdsa || die "pip could not install ecdsa"
fi

WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
    [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# The scripts expect an RSA certificate.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
    -days 2 -subj /CN=localhost >/dev/null 2>&1 || die "openssl could not make a certificate"

cargo build --release --quiet --features tls --example hello
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
target/release/examples/hello --port "$PORT" --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" \
    >"$WORK/hello.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2).close()" 2>/dev/null && break
    sleep 0.1
done

# SCRIPT|its options, one per line; `--coalescing`: several KeyUpdate requests while we are
# silent get one answer (RFC 8446 §4.6.3).
SCRIPTS=(
    # The record-layer set the figures are given for (164 cases).
    "test_tls13_keyupdate|--coalescing"
    "test_tls13_zero_length_data|"
    "test_tls13_record_layer_limits|"
    "test_tls13_empty_alert|"
    "test_tls13_unencrypted_alert|"
    "test_tls13_record_padding|"
    "test_tls13_ccs|"
    # Others that apply to this server and run in seconds: records around the handshake, a
    # whole conversation, tickets, HelloRetryRequest, cipher and group negotiation.
    "test_tls13_zero_content_type|"
    "test_tls13_0rtt_garbage|"
    "test_tls13_conversation|"
    "test_tls13_count_tickets|"
    "test_tls13_hrr|"
    "test_tls13_invalid_ciphers|"
    "test_tls13_nociphers|"
    "test_tls13_no_unknown_groups|"
)
# Cases that fail inside rustls' handshake (SCRIPT|case|what the failure says; empty: however
# it fails, which varies from run to run).
EXPECTED_FAILURES=(
    "test_tls13_record_layer_limits|max size payload (2**14) of Finished msg, with 16348 bytes of left padding, cipher TLS_AES_128_GCM_SHA256|decrypt_error"
    "test_tls13_record_layer_limits|max size payload (2**14) of Finished msg, with 16348 bytes of left padding, cipher TLS_CHACHA20_POLY1305_SHA256|decrypt_error"
    "test_tls13_empty_alert|empty alert with no padding using handshake keys|decode_error"
    "test_tls13_empty_alert|empty alert with 2 bytes of padding using handshake keys|decode_error"
    "test_tls13_empty_alert|empty alert with 5 bytes of padding using handshake keys|decode_error"
    "test_tls13_empty_alert|empty alert with 30 bytes of padding using handshake keys|decode_error"
    "test_tls13_zero_content_type|zero content type during handshake|Unexpected closure"
    "test_tls13_zero_content_type|zero content type with padding during handshake|Unexpected closure"
    "test_tls13_0rtt_garbage|handshake with invalid 0-RTT|"
    "test_tls13_0rtt_garbage|handshake with invalid 0-RTT and CCS|bad_record_mac"
    "test_tls13_0rtt_garbage|handshake with invalid 0-RTT and CCS between early data records|"
    "test_tls13_0rtt_garbage|handshake with invalid 0-RTT and unknown version (downgrade to TLS 1.2)|handshake_failure"
    "test_tls13_0rtt_garbage|handshake with invalid 0-RTT with fragmented early data|"
    "test_tls13_0rtt_garbage|undecryptable record later in handshake together with early_data|"
)

total_pass=0
total_xfail=0
total=0
failed=""
for entry in "${SCRIPTS[@]}"; do
    script=${entry%%|*}
    options=${entry#*|}
    args=(-h 127.0.0.1 -p "$PORT")
    [[ -n $options ]] && args+=($options)
    for expected in "${EXPECTED_FAILURES[@]}"; do
        [[ ${expected%%|*} == "$script" ]] || continue
        rest=${expected#*|}
        args+=(-x "${rest%|*}")
        [[ -n ${rest##*|} ]] && args+=(-X "${rest##*|}")
    done
    log="$WORK/$script.log"
    status=0
    (cd "$TLSFUZZER_DIR" && PYTHONPATH="$TLSFUZZER_DIR" timeout 900 python3 -c \
        "import sys; from tlsfuzzer._apps import $script as m; sys.argv = ['$script'] + sys.argv[1:]; m.main()" \
        "${args[@]}") >"$log" 2>&1 || status=$?
    count() { sed -n "s/^$1: //p" "$log" | tail -n 1; }
    t=$(count TOTAL)
    p=$(count PASS)
    x=$(count XFAIL)
    f=$(count FAIL)
    [[ -n $t && -n $p ]] || {
        tail -n 30 "$log" >&2
        die "$script printed no summary"
    }
    echo "tlsfuzzer: $script: $p of $t passed, ${x:-0} expected failures (rustls' handshake), ${f:-0} failed"
    total=$((total + t))
    total_pass=$((total_pass + p))
    total_xfail=$((total_xfail + ${x:-0}))
    if [[ $status -ne 0 ]]; then
        sed -n '/^FAILED:/,$p' "$log" >&2
        failed="$failed $script"
    fi
done
echo "tlsfuzzer: $total_pass of $total passed, $total_xfail expected failures (the record-layer set's 164: nginx 1.22 / OpenSSL 3.0 passes 158)"
[[ -z $failed ]] || die "unexpected results in:$failed"
kill -0 "$SERVER_PID" 2>/dev/null || die "the server died during the run"
echo "tlsfuzzer: OK"
