#!/usr/bin/env bash
# Interop checks with curl against the `hello` and `echo` examples.
#
#   tests/interop/curl.sh target/release/examples/hello target/release/examples/echo
#
# Each server is started on a free port of 127.0.0.1 and stopped by its PID when the script
# exits, whatever happens. Every curl has --max-time. Prints one line per check and, for a
# failed one, what differed; exits 1 if any check failed, 2 on bad usage or a missing tool.
set -euo pipefail
# shellcheck source=tests/interop/procs.sh
. "$(dirname "$0")/procs.sh"

if [[ $# -ne 2 ]]; then
    echo "usage: $0 HELLO_BINARY ECHO_BINARY" >&2
    exit 2
fi
HELLO_BIN=$1
ECHO_BIN=$2
for b in "$HELLO_BIN" "$ECHO_BIN"; do
    [[ -f $b && -x $b ]] || { echo "not an executable file: $b" >&2; exit 2; }
done
for tool in curl python3 timeout awk cmp diff; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed" >&2; exit 2; }
done

# -q (no ~/.curlrc) must come first; no proxy may be used for 127.0.0.1 whatever the
# environment says; every transfer is bounded.
CURL=(curl -q)
OPTS=(-sS --max-time 10 --noproxy '*')

TMP=$(mktemp -d)
SERVER_PID="" # the one server running, if any
stop_server() {
    local pid=$SERVER_PID
    SERVER_PID=""
    stop_pid "$pid"
}
cleanup() {
    stop_server
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# start_server BINARY LOG: sets PORT and PID, or exits 2. A server that exits at once (its port
# was taken between picking and binding) is retried on another port.
start_server() {
    local bin=$1 log=$2 attempt i
    for attempt in 1 2 3; do
        PORT=$(free_port)
        "$bin" --port "$PORT" --workers 2 </dev/null >"$log" 2>&1 &
        PID=$!
        SERVER_PID=$PID
        for ((i = 0; i < 150; i++)); do
            if ! kill -0 "$PID" 2>/dev/null; then
                break
            fi
            if timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$PORT" 2>/dev/null; then
                return 0
            fi
            sleep 0.1
        done
        if kill -0 "$PID" 2>/dev/null; then
            stop_server
            echo "FAIL: $bin did not accept on port $PORT within 15s; its output:" >&2
            cat "$log" >&2
            exit 2
        fi
        stop_server # reaps the one that exited
    done
    echo "FAIL: $bin exited at start three times; its output:" >&2
    cat "$log" >&2
    exit 2
}

FAILED=0
fail() { printf '    %s\n' "$@" >&2; }

# check NAME FUNCTION: runs FUNCTION in a subshell (in its own scratch directory) and reports;
# what FUNCTION printed is shown under a failed check.
check() {
    local name=$1 fn=$2 dir
    dir=$(mktemp -d "$TMP/check.XXXX")
    if (cd "$dir" && "$fn") >"$dir/why" 2>&1; then
        echo "PASS $name"
    else
        echo "FAIL $name"
        cat "$dir/why"
        FAILED=$((FAILED + 1))
    fi
}

# same WHAT WANT_FILE GOT_FILE: byte-for-byte equality, showing the difference when not.
same() {
    local what=$1 want=$2 got=$3
    if cmp -s "$want" "$got"; then
        return 0
    fi
    fail "$what differs (want $(wc -c <"$want") bytes, got $(wc -c <"$got") bytes):"
    if [[ $(wc -c <"$want") -le 4096 && $(wc -c <"$got") -le 4096 ]]; then
        # cat -A makes CR (^M), line ends ($) and other bytes visible.
        diff -u --label want --label got <(cat -A "$want") <(cat -A "$got") | head -40 >&2 || true
    else
        cmp "$want" "$got" >&2 || true
    fi
    return 1
}

# echo_of_verbose STDERR_FILE BODY_FILE: the body `echo` must return for the request curl -v
# reported sending (the "> " lines): "<method> <target>\n", "name: value\n" per header in the
# order sent (name lower-cased, value trimmed), "\n", then the body.
echo_of_verbose() {
    awk '
        /^>/ {
            line = $0
            sub(/\r$/, "", line)
            if (!started) {
                if (line ~ /^> [A-Z]+ /) {
                    split(substr(line, 3), part, " ")
                    printf "%s %s\n", part[1], part[2]
                    started = 1
                }
                next
            }
            if (line == ">" || line == "> ") { done = 1; exit }
            h = substr(line, 3)
            i = index(h, ":")
            name = tolower(substr(h, 1, i - 1))
            value = substr(h, i + 1)
            gsub(/^[ \t]+|[ \t]+$/, "", value)
            printf "%s: %s\n", name, value
        }
        END { if (!done) exit 1; printf "\n" }
    ' "$1" || { fail "no complete request head in curl -v output:"; cat "$1" >&2; return 1; }
    cat "$2"
}

# Sent header names, lower case, from curl -v output.
sent_names() { awk '/^> [^ ]+:/ { h = substr($0, 3); print tolower(substr(h, 1, index(h, ":") - 1)) }' "$1"; }

curl_ok() {
    local rc=0
    "${CURL[@]}" "$@" || rc=$?
    if [[ $rc -ne 0 ]]; then
        fail "curl exited with status $rc"
        [[ -f err ]] && sed 's/^/    | /' err >&2
        return 1
    fi
}

# ---------------------------------------------------------------- hello

hello_get() {
    curl_ok "${OPTS[@]}" -i "$BASE/any/path?x=1" >out || return 1
    local status
    status=$(head -n 1 out | tr -d '\r')
    [[ $status == "HTTP/1.1 200 "* ]] || { fail "status line: $status"; return 1; }
    grep -qix $'content-type: text/plain\r' out || { fail "no 'Content-Type: text/plain':"; cat -A out >&2; return 1; }
    grep -qix $'content-length: 13\r' out || { fail "no 'Content-Length: 13':"; cat -A out >&2; return 1; }
    sed '1,/^\r$/d' out >body
    printf 'Hello, World!' >want
    same "body" want body
}

hello_head() {
    # HEAD, then a GET on the same connection: a body sent after the HEAD reply would be
    # taken as the start of the GET's reply.
    curl_ok "${OPTS[@]}" -v -I "$BASE/h" --next "${OPTS[@]}" -v "$BASE/g" >out 2>err || return 1
    local status
    status=$(head -n 1 out | tr -d '\r')
    [[ $status == "HTTP/1.1 200 "* ]] || { fail "HEAD status line: $status"; return 1; }
    grep -qix $'content-length: 13\r' out || { fail "HEAD without 'Content-Length: 13':"; cat -A out >&2; return 1; }
    grep -qix $'content-type: text/plain\r' out || { fail "HEAD without 'Content-Type: text/plain':"; cat -A out >&2; return 1; }
    # What follows the HEAD reply's head on stdout is the GET's body alone.
    sed '1,/^\r$/d' out >body
    printf 'Hello, World!' >want
    same "output after the HEAD reply head" want body || return 1
    grep -q 'Re-using existing connection\|Re-using existing http: connection\|Reusing existing' err ||
        { fail "the GET after HEAD did not re-use the connection:"; sed 's/^/    | /' err >&2; return 1; }
}

hello_keep_alive() {
    curl_ok "${OPTS[@]}" -v "$BASE/one" "$BASE/two" -o b1 -o b2 2>err || return 1
    printf 'Hello, World!' >want
    same "first body" want b1 || return 1
    same "second body" want b2 || return 1
    local connects
    connects=$(grep -c '^\* Connected to' err || true)
    if [[ $connects -ne 1 ]] ||
        ! grep -q 'Re-using existing connection\|Re-using existing http: connection\|Reusing existing\|left intact' err; then
        fail "curl did not re-use the connection ($connects connects):"
        sed 's/^/    | /' err >&2
        return 1
    fi
}

# ---------------------------------------------------------------- echo

echo_post() {
    curl_ok "${OPTS[@]}" --http1.1 -v -d 'name=value&list=a,b&sp=x y' \
        -H 'X-Custom-Header: Some Value' -H 'UPPER-Case: MiXeD' \
        "$BASE/echo/p%20ath?q=1&r=%2F" -o body 2>err || return 1
    printf 'name=value&list=a,b&sp=x y' >sent_body
    echo_of_verbose err sent_body >want || return 1
    grep -qx 'x-custom-header' <(sent_names err) || { fail "curl did not send X-Custom-Header"; return 1; }
    same "echo body" want body
}

echo_chunked() {
    # ~110 kB with newlines, CRs, a NUL and bytes above 0x7f, so curl sends several chunks.
    { seq 1 20000; printf 'cr\r\nnul\0 high\377\376 0\r\n\r\n end'; } >payload
    curl_ok "${OPTS[@]}" --http1.1 -v -H 'Transfer-Encoding: chunked' --data-binary @- \
        "$BASE/chunked" -o body <payload 2>err || return 1
    sent_names err >names
    grep -qx 'transfer-encoding' names || { fail "curl did not send Transfer-Encoding"; return 1; }
    ! grep -qx 'content-length' names || { fail "curl sent a Content-Length with chunked"; return 1; }
    echo_of_verbose err payload >want || return 1
    same "echo body" want body
}

echo_expect_100() {
    # Over 1 KiB: curl sends the head, waits for the interim 100, then the body.
    seq 1 1500 >payload
    curl_ok "${OPTS[@]}" --http1.1 -v -H 'Expect: 100-continue' --data-binary @payload \
        "$BASE/expect" -o body 2>err || return 1
    grep -qix 'expect' <(sent_names err) || { fail "curl did not send Expect"; return 1; }
    grep -q '^< HTTP/1.1 100' err ||
        { fail "no interim '100 Continue' before the body (curl sent it after its timeout):"; sed 's/^/    | /' err >&2; return 1; }
    echo_of_verbose err payload >want || return 1
    same "echo body" want body
}

echo_keep_alive_mixed() {
    # GET, POST and PUT on one connection, each echoing only its own request.
    curl_ok "${OPTS[@]}" --http1.1 -v "$BASE/a" -o b1 \
        --next "${OPTS[@]}" --http1.1 -v -d 'second' "$BASE/b" -o b2 \
        --next "${OPTS[@]}" --http1.1 -v -X PUT -d 'third' "$BASE/c" -o b3 2>err || return 1
    local connects
    connects=$(grep -c '^\* Connected to' err || true)
    [[ $connects -eq 1 ]] || { fail "$connects connections for 3 requests:"; sed 's/^/    | /' err >&2; return 1; }
    # Split curl's -v output per request and check each echo.
    awk '/^> [A-Z]+ / { n++ } n { print > ("req" n) }' err
    : >empty
    printf 'second' >s2
    printf 'third' >s3
    echo_of_verbose req1 empty >w1 && echo_of_verbose req2 s2 >w2 && echo_of_verbose req3 s3 >w3 || return 1
    same "first echo" w1 b1 && same "second echo" w2 b2 && same "third echo" w3 b3
}

# ---------------------------------------------------------------- main

started=$SECONDS

start_server "$HELLO_BIN" "$TMP/hello.log"
BASE="http://127.0.0.1:$PORT"
echo "-- hello on 127.0.0.1:$PORT (pid $PID)"
check "hello: curl -i GET -> 200, text/plain, length 13, 'Hello, World!'" hello_get
check "hello: curl -I HEAD -> headers, no body (then a GET on the connection)" hello_head
check "hello: two URLs in one curl re-use the connection" hello_keep_alive
kill -0 "$PID" 2>/dev/null || { echo "FAIL hello exited during the checks"; FAILED=$((FAILED + 1)); }
[[ $FAILED -eq 0 ]] || { echo "   (hello output:)"; cat "$TMP/hello.log"; }
stop_server

failed_before=$FAILED
start_server "$ECHO_BIN" "$TMP/echo.log"
BASE="http://127.0.0.1:$PORT"
echo "-- echo on 127.0.0.1:$PORT (pid $PID)"
check "echo: curl --http1.1 -d POST with custom headers, exact echo" echo_post
check "echo: curl -H 'Transfer-Encoding: chunked' upload de-chunked" echo_chunked
check "echo: curl -H 'Expect: 100-continue' 6 kB body -> 100, then echo" echo_expect_100
check "echo: GET, POST, PUT on one connection, each its own echo" echo_keep_alive_mixed
kill -0 "$PID" 2>/dev/null || { echo "FAIL echo exited during the checks"; FAILED=$((FAILED + 1)); }
[[ $FAILED -eq $failed_before ]] || { echo "   (echo output:)"; cat "$TMP/echo.log"; }
stop_server

if [[ $FAILED -ne 0 ]]; then
    echo "curl.sh: $FAILED check(s) FAILED in $((SECONDS - started))s"
    exit 1
fi
echo "curl.sh: all checks passed in $((SECONDS - started))s"
