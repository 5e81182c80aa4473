#!/usr/bin/env bash
# The rate limiter behind a real proxy: nginx on 127.0.0.1 in front of the `rate_limited` example
# (`rate_limits(1, 100, 1)`), nginx appending the client's address to X-Forwarded-For.
#
#   tests/interop/rate_limit_nginx.sh target/release/examples/rate_limited
#
# Checks, with curl connecting to nginx from two loopback source addresses:
#   - 127.0.0.2 and 127.0.0.3 have separate buckets: each one's first POST in a second is 200;
#   - a second POST from the same address in the same second is 429, passed back through nginx
#     with Retry-After: 1;
#   - a client sending its own X-Forwarded-For: 1.2.3.4 cannot escape its bucket;
#   - reads are a bucket of their own.
#
# Installs nothing: the caller installs nginx (Debian: apt-get install -y nginx-light or nginx).
# nginx and the server get a temporary directory of their own (configuration, pid, logs, temp
# files) and free ports on 127.0.0.1; both are stopped by their PID when the script exits,
# whatever happens. Every curl has --max-time. Prints one line per check; exits 1 if any check
# failed, 2 on bad usage or a missing tool.
set -euo pipefail
# shellcheck source=tests/interop/procs.sh
. "$(dirname "$0")/procs.sh"

if [[ $# -ne 1 ]]; then
    echo "usage: $0 RATE_LIMITED_BINARY" >&2
    exit 2
fi
SERVER_BIN=$1
[[ -f $SERVER_BIN && -x $SERVER_BIN ]] || { echo "not an executable file: $SERVER_BIN" >&2; exit 2; }
for tool in nginx curl python3; do
    command -v "$tool" >/dev/null || {
        echo "FAIL: $tool is not installed (this script installs nothing; e.g. apt-get install -y nginx-light curl python3)" >&2
        exit 2
    }
done
echo "rate_limit_nginx: $(nginx -v 2>&1)"

CURL=(curl -q -sS --max-time 10 --noproxy '*')

TMP=$(mktemp -d)
chmod 755 "$TMP" # nginx workers may run as another user than the master
SERVER_PID=""
NGINX_PID=""
cleanup() {
    stop_pid "$NGINX_PID"
    stop_pid "$SERVER_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# wait_http PORT PID NAME: until GET / on PORT answers (any status), or exit 2 if PID died.
wait_http() {
    local port=$1 pid=$2 name=$3 i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || return 1
        if "${CURL[@]}" -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "FAIL: $name did not answer on port $port within 10 s" >&2
    exit 2
}

# The server, retried on another port should the free one be taken before it binds.
for attempt in 1 2 3; do
    BACKEND_PORT=$(free_port)
    "$SERVER_BIN" --port "$BACKEND_PORT" --workers 2 --writes 1 --reads 100 --hops 1 \
        </dev/null >"$TMP/server.log" 2>&1 &
    SERVER_PID=$!
    wait_http "$BACKEND_PORT" "$SERVER_PID" server && break
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    [[ $attempt -lt 3 ]] || { echo "FAIL: the server did not start:" >&2; cat "$TMP/server.log" >&2; exit 2; }
done

# nginx in the foreground (daemon off), everything under $TMP.
USER_LINE=""
[[ $EUID -ne 0 ]] || USER_LINE="user root root;"
write_config() {
    cat >"$TMP/nginx.conf" <<EOF
$USER_LINE
daemon off;
master_process on;
worker_processes 1;
pid $TMP/nginx.pid;
error_log $TMP/error.log info;
events { worker_connections 64; }
http {
    access_log $TMP/access.log;
    client_body_temp_path $TMP/client_body;
    proxy_temp_path $TMP/proxy;
    fastcgi_temp_path $TMP/fastcgi;
    uwsgi_temp_path $TMP/uwsgi;
    scgi_temp_path $TMP/scgi;
    server {
        listen 127.0.0.1:$PROXY_PORT;
        location / {
            proxy_pass http://127.0.0.1:$BACKEND_PORT;
            proxy_http_version 1.1;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
        }
    }
}
EOF
}
for attempt in 1 2 3; do
    PROXY_PORT=$(free_port)
    write_config
    nginx -p "$TMP" -e "$TMP/error.log" -c "$TMP/nginx.conf" </dev/null >"$TMP/nginx.out" 2>&1 &
    NGINX_PID=$!
    wait_http "$PROXY_PORT" "$NGINX_PID" nginx && break
    wait "$NGINX_PID" 2>/dev/null || true
    NGINX_PID=""
    [[ $attempt -lt 3 ]] || { echo "FAIL: nginx did not start:" >&2; cat "$TMP/nginx.out" "$TMP/error.log" >&2 || true; exit 2; }
done
echo "rate_limit_nginx: server on port $BACKEND_PORT, nginx on port $PROXY_PORT"

# ask FROM METHOD [curl options...]: prints "STATUS RETRY_AFTER" for one request to nginx from
# source address FROM; the body is left in $TMP/body.
ask() {
    local from=$1 method=$2 out retry
    shift 2
    out=$("${CURL[@]}" --interface "$from" -X "$method" -o "$TMP/body" -D "$TMP/head" \
        -w '%{http_code}' "$@" "http://127.0.0.1:$PROXY_PORT/") || out="curl-failed"
    retry=$(tr -d '\r' <"$TMP/head" 2>/dev/null | awk -F': ' 'tolower($1) == "retry-after" { print $2 }')
    echo "$out ${retry:--}"
}

names=()
want=()
got=()
# check NAME WANT GOT: records one result.
check() {
    names+=("$1")
    want+=("$2")
    got+=("$3")
}

# in_one_second FUNCTION: runs FUNCTION just after a wall-clock second begins, again (up to 5
# times) when a second boundary fell inside it; its checks are kept from the last run only.
in_one_second() {
    local attempt start n=${#names[@]}
    for attempt in 1 2 3 4 5; do
        names=("${names[@]:0:n}")
        want=("${want[@]:0:n}")
        got=("${got[@]:0:n}")
        sleep "$(python3 -c 'import time; print(f"{1.01 - time.time() % 1:.3f}")')"
        start=$(date +%s)
        "$1"
        [[ $(date +%s) != "$start" ]] || return 0
        echo "rate_limit_nginx: a second boundary fell inside $1 (attempt $attempt); again"
    done
    echo "FAIL: five attempts of $1 straddled a second boundary" >&2
    exit 1
}

two_callers() {
    check "127.0.0.2 first POST" "200 -" "$(ask 127.0.0.2 POST --data a)"
    check "127.0.0.3 first POST: a separate bucket" "200 -" "$(ask 127.0.0.3 POST --data a)"
    check "127.0.0.2 second POST in the same second: 429 through nginx" "429 1" "$(ask 127.0.0.2 POST --data a)"
    local body
    body=$(cat "$TMP/body" 2>/dev/null || true)
    check "the 429's text body reaches the client through nginx" "yes" \
        "$([[ $body == *"Too Many Requests"* ]] && echo yes || echo "no: '$body'")"
    check "127.0.0.3 second POST, sending its own X-Forwarded-For: 1.2.3.4" "429 1" \
        "$(ask 127.0.0.3 POST --data a -H 'X-Forwarded-For: 1.2.3.4')"
    check "127.0.0.2 GET: reads are a bucket of their own" "200 -" "$(ask 127.0.0.2 GET)"
}

forged_first() {
    # A forged header on a caller's first write spends that caller's own bucket, not one named
    # after the forged address.
    check "127.0.0.3 first POST, sending X-Forwarded-For: 1.2.3.4, 127.0.0.9" "200 -" \
        "$(ask 127.0.0.3 POST --data a -H 'X-Forwarded-For: 1.2.3.4, 127.0.0.9')"
    check "127.0.0.3 POST without the header in the same second" "429 1" "$(ask 127.0.0.3 POST --data a)"
    check "127.0.0.2 POST from another address is still free" "200 -" "$(ask 127.0.0.2 POST --data a)"
}

in_one_second two_callers
in_one_second forged_first

failed=0
for i in "${!want[@]}"; do
    if [[ ${got[$i]} == "${want[$i]}" ]]; then
        echo "ok   ${names[$i]}: ${got[$i]}"
    else
        echo "FAIL ${names[$i]}: got '${got[$i]}', want '${want[$i]}' (status, Retry-After)"
        failed=1
    fi
done

if [[ $failed -ne 0 ]]; then
    echo "--- nginx error log" >&2
    tail -n 20 "$TMP/error.log" >&2 || true
    echo "--- nginx access log" >&2
    tail -n 20 "$TMP/access.log" >&2 || true
    exit 1
fi
echo "rate_limit_nginx: all passed"
