#!/usr/bin/env bash
# Interop checks of the blocking HTTP client (src/client/http.rs) through the `fetch` example,
# against real servers on 127.0.0.1:
#
#   tests/interop/client.sh target/release/examples/fetch
#
#  * nginx (must be on PATH; tests/interop/run.sh installs it): a static file (Content-Length),
#    a chunked reply (sub_filter on a file: nginx drops the Content-Length and chunks on
#    HTTP/1.1), 20 GETs over ONE keep-alive connection proven by nginx's access log
#    ($connection, $connection_requests), HEAD.
#  * Python's `python3 -m http.server` (HTTP/1.0; closes after every reply): a file byte for byte,
#    several paths in one get_all (the client must connect again after each reply), 404, 301,
#    directory listing, HEAD.
#  * a tiny Python BaseHTTPRequestHandler that sends bodies without Content-Length and closes
#    (close-delimited), as HTTP/1.0 and as HTTP/1.1 with `Connection: close`.
#
# Every server runs as the current user in a temporary directory, on a free port of 127.0.0.1,
# and is stopped by its PID when the script exits, whatever happens. Every command that talks
# to a server is under `timeout`. Prints `PASS name` per check; stops at the first failed one
# with `FAIL name` and what differed, and exits 1 (2 on bad usage or a missing tool).
set -euo pipefail
# shellcheck source=tests/interop/procs.sh
. "$(dirname "$0")/procs.sh"

if [[ $# -ne 1 ]]; then
    echo "usage: $0 FETCH_BINARY" >&2
    exit 2
fi
FETCH=$1
[[ -f $FETCH && -x $FETCH ]] || { echo "not an executable file: $FETCH" >&2; exit 2; }
[[ $FETCH == */* ]] || FETCH=./$FETCH
if ! command -v nginx >/dev/null; then
    echo "FAIL: nginx is not on PATH (install it: apt-get install -y nginx; it is in /usr/sbin," \
        "which a non-root PATH may lack); tests/interop/run.sh installs it" >&2
    exit 2
fi
for tool in python3 timeout cmp od awk sed; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed" >&2; exit 2; }
done

TMP=$(mktemp -d)
PIDS=() # servers running: stopped, last first, on exit
stop_all() {
    local i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
        stop_pid "${PIDS[i]}"
    done
    PIDS=()
}
cleanup() {
    stop_all
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# accepting PORT: whether something accepts connections on 127.0.0.1:PORT.
accepting() {
    timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

# wait_up PID PORT LOG WHAT: waits up to 15 s for PORT to accept. Returns 1 if PID exited (its
# port may have been taken between picking and binding: the caller retries); exits 2 if it
# neither exits nor accepts.
wait_up() {
    local pid=$1 port=$2 log=$3 what=$4 i
    for ((i = 0; i < 150; i++)); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 1; }
        accepting "$port" && return 0
        sleep 0.1
    done
    echo "FAIL: $what did not accept on 127.0.0.1:$port within 15s; its output:" >&2
    cat "$log" >&2
    exit 2
}

# The one failure: what differed, and out.
CHECK=""
die() {
    echo "FAIL $CHECK"
    printf '%s\n' "$@" | sed 's/^/    /'
    exit 1
}
begin() {
    CHECK=$1
    rm -rf "$TMP/w"
    mkdir "$TMP/w"
}
pass() { echo "PASS $CHECK"; }

# same WHAT WANT_FILE GOT_FILE: byte-for-byte equality, or out with where they differ and the
# bytes there.
same() {
    local what=$1 want=$2 got=$3 at from
    cmp -s "$want" "$got" && return 0
    # cmp: "... differ: byte N, line L" or "cmp: EOF on FILE after byte N ...".
    at=$(cmp "$want" "$got" 2>&1 | grep -o 'byte [0-9]*' | head -n 1 | grep -o '[0-9]*' || true)
    at=${at:-1}
    from=$((at > 16 ? at - 16 : 1))
    die "$what differs: want $(wc -c <"$want") bytes, got $(wc -c <"$got") bytes; first difference at byte $at" \
        "want from byte $from: $(tail -c +"$from" "$want" | head -c 40 | od -An -c | tr -s ' \n' ' ')" \
        "got from byte $from:  $(tail -c +"$from" "$got" | head -c 40 | od -An -c | tr -s ' \n' ' ')"
}

# fetch OUT ARGS...: runs fetch (bounded) into OUT; out with its stderr if it fails.
fetch() {
    local out=$1 rc=0
    shift
    timeout -k 5 20 "$FETCH" "$@" >"$out" 2>"$TMP/w/fetch.err" || rc=$?
    if [[ $rc -ne 0 ]]; then
        local why="exit status $rc"
        [[ $rc -eq 124 ]] && why="timed out after 20 s"
        die "fetch $* failed ($why): $(cat "$TMP/w/fetch.err")"
    fi
}

# Helpers in Python: splitting fetch's output and raw replies, making files.
cat >"$TMP/helper.py" <<'EOF'
import os, re, sys

def split(out, d):
    """fetch's output -> d/N.line ('status S content-length L body B bytes') and d/N.body."""
    data = open(out, "rb").read()
    at, n = 0, 0
    line_re = re.compile(rb"status (\d+) content-length (\d+|-) body (\d+) bytes\n")
    while at < len(data):
        m = line_re.match(data, at)
        if not m:
            sys.exit("fetch output, reply %d at byte %d: no status line: %r" % (n + 1, at, data[at:at + 80]))
        size = int(m.group(3))
        body = data[m.end():m.end() + size]
        end = m.end() + size
        if len(body) != size or data[end:end + 1] != b"\n":
            sys.exit("fetch output, reply %d: body shorter than the %d bytes announced" % (n + 1, size))
        n += 1
        open(os.path.join(d, "%d.line" % n), "wb").write(m.group(0)[:-1] + b"\n")
        open(os.path.join(d, "%d.body" % n), "wb").write(body)
        at = end + 1
    print(n)

def raw(reply, d):
    """One raw reply -> d/status (status line), d/headers ('name: value', names lower-cased),
    d/payload (the bytes after the head) and, if chunked, d/dechunked and d/chunks (the count)."""
    data = open(reply, "rb").read()
    end = data.find(b"\r\n\r\n")
    if end < 0:
        sys.exit("raw reply: no end of head in %r" % data[:200])
    lines = data[:end].split(b"\r\n")
    open(os.path.join(d, "status"), "wb").write(lines[0] + b"\n")
    with open(os.path.join(d, "headers"), "wb") as f:
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            f.write(name.strip().lower() + b": " + value.strip() + b"\n")
    payload = data[end + 4:]
    open(os.path.join(d, "payload"), "wb").write(payload)
    if any(l.lower().replace(b" ", b"") == b"transfer-encoding:chunked" for l in lines[1:]):
        out, at, chunks = b"", 0, 0
        while True:
            eol = payload.find(b"\r\n", at)
            if eol < 0:
                sys.exit("chunked body: no chunk-size line at byte %d" % at)
            size = int(payload[at:eol].split(b";")[0], 16)
            at = eol + 2
            if size == 0:
                break
            chunks += 1
            out += payload[at:at + size]
            if payload[at + size:at + size + 2] != b"\r\n":
                sys.exit("chunked body: chunk %d not followed by CRLF" % chunks)
            at += size + 2
        if payload[at:] != b"\r\n":
            sys.exit("chunked body: after the last chunk: %r (want CRLF, no trailers)" % payload[at:at + 80])
        open(os.path.join(d, "dechunked"), "wb").write(out)
        open(os.path.join(d, "chunks"), "w").write("%d\n" % chunks)

def pattern(path, size, seed):
    """size bytes of every value, in an order that depends on seed."""
    open(path, "wb").write(bytes((i * seed + i // 251) % 256 for i in range(size)))

def text(path, lines, word):
    """Lines of text, each with `word` twice (sub_filter's target)."""
    with open(path, "w") as f:
        for i in range(lines):
            f.write("line %05d %s of the chunked page %s end\n" % (i, word, word))

cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "split":
    split(*args)
elif cmd == "raw":
    raw(*args)
elif cmd == "pattern":
    pattern(args[0], int(args[1]), int(args[2]))
elif cmd == "text":
    text(args[0], int(args[1]), args[2])
else:
    sys.exit("helper: unknown command " + cmd)
EOF
helper() { timeout 30 python3 "$TMP/helper.py" "$@"; }

# split_out OUT: fetch's output into $TMP/w/N.line and N.body; sets N to the number of replies.
split_out() {
    N=$(helper split "$1" "$TMP/w" 2>"$TMP/w/split.err") ||
        die "fetch's output is not as documented: $(cat "$TMP/w/split.err")"
}
# line N: reply N's status line from fetch.
line() { cat "$TMP/w/$1.line"; }
# want_line N EXPECTED
want_line() {
    [[ $(line "$1") == "$2" ]] || die "reply $1: want '$2', got '$(line "$1")'"
}
# raw FILE: a raw reply into $TMP/w/raw/{status,headers,payload[,dechunked,chunks]}.
raw() {
    mkdir -p "$TMP/w/raw"
    helper raw "$1" "$TMP/w/raw" || die "the raw reply is not well formed"
}
has_header() { grep -qix -- "$1" "$TMP/w/raw/headers"; }
no_header() { ! grep -qi -- "^$1:" "$TMP/w/raw/headers"; }

started=$SECONDS

# ---------------------------------------------------------------- nginx

NGX=$TMP/nginx
mkdir -p "$NGX"/{html/static,html/sub,html/small,logs,tmp}
helper pattern "$NGX/html/static/big.bin" 100000 7
STATIC_LEN=100000
helper text "$NGX/html/sub/page.html" 2500 '@WORD@'
# What nginx sends for /sub/page.html: every @WORD@ replaced.
sed 's/@WORD@/nginx-was-here/g' "$NGX/html/sub/page.html" >"$TMP/sub.want"
for i in 1 2 3; do printf 'small file %s\n' "$i" >"$NGX/html/small/$i.txt"; done

# When run as root, nginx runs its worker as the `user` directive says (default nobody, which
# could not read this root-owned 0700 directory): keep it as the current user. Otherwise the
# directive would only be ignored with a warning, so leave it out.
USER_LINE=""
if [[ $(id -u) -eq 0 ]]; then
    USER_LINE="user $(id -un) $(id -gn);"
fi

# write_nginx_conf PORT PORT2: PORT2 is a server that closes a connection after 7 requests.
write_nginx_conf() {
    local port=$1 port2=$2
    cat >"$NGX/nginx.conf" <<EOF
$USER_LINE
daemon off;
master_process on;
worker_processes 1;
pid $NGX/nginx.pid;
lock_file $NGX/nginx.lock;
error_log $NGX/logs/error.log notice;
events { worker_connections 64; }
http {
    default_type application/octet-stream;
    types { text/html html; text/plain txt; }
    log_format conn '\$connection \$connection_requests \$request_method \$request_uri \$status \$body_bytes_sent';
    access_log $NGX/logs/access.log conn;
    client_body_temp_path $NGX/tmp/body;
    proxy_temp_path $NGX/tmp/proxy;
    fastcgi_temp_path $NGX/tmp/fastcgi;
    uwsgi_temp_path $NGX/tmp/uwsgi;
    scgi_temp_path $NGX/tmp/scgi;
    sendfile on;
    gzip off;
    keepalive_timeout 30s;
    keepalive_requests 1000;
    server {
        listen 127.0.0.1:$port;
        server_name localhost;
        root $NGX/html;
        location /static/ { }
        location /small/ { }
        # sub_filter changes the body, so nginx drops the file's Content-Length and sends the
        # reply chunked (to an HTTP/1.1 request).
        location /sub/ {
            sub_filter '@WORD@' 'nginx-was-here';
            sub_filter_once off;
            sub_filter_types *;
        }
    }
    server {
        listen 127.0.0.1:$port2;
        server_name localhost;
        root $NGX/html;
        keepalive_requests 7; # the 7th reply says Connection: close, and nginx closes
        location /sub/ {
            sub_filter '@WORD@' 'nginx-was-here';
            sub_filter_once off;
            sub_filter_types *;
        }
    }
}
EOF
}

NGINX=(nginx -p "$NGX/" -c "$NGX/nginx.conf" -e "$NGX/logs/error.log")
# two_ports: sets NGX_PORT and NGX_PORT2, two free ports.
two_ports() {
    NGX_PORT=$(free_port)
    NGX_PORT2=$(free_port)
    while [[ $NGX_PORT2 == "$NGX_PORT" ]]; do NGX_PORT2=$(free_port); done
}
two_ports
write_nginx_conf "$NGX_PORT" "$NGX_PORT2" # nginx -t binds them too
if ! timeout 20 "${NGINX[@]}" -t >"$NGX/t.log" 2>&1; then
    echo "FAIL: nginx -t refuses the configuration:" >&2
    cat "$NGX/t.log" "$NGX/nginx.conf" >&2
    exit 2
fi
for attempt in 1 2 3; do
    two_ports
    write_nginx_conf "$NGX_PORT" "$NGX_PORT2"
    "${NGINX[@]}" </dev/null >"$NGX/out.log" 2>&1 &
    NGX_PID=$!
    PIDS+=("$NGX_PID")
    if wait_up "$NGX_PID" "$NGX_PORT" "$NGX/out.log" nginx &&
        wait_up "$NGX_PID" "$NGX_PORT2" "$NGX/out.log" nginx; then
        break
    fi
    unset 'PIDS[-1]'
    if [[ $attempt -eq 3 ]]; then
        echo "FAIL: nginx exited at start three times; its output and error log:" >&2
        cat "$NGX/out.log" "$NGX/logs/error.log" >&2
        exit 2
    fi
done
echo "-- $(nginx -v 2>&1) on 127.0.0.1:$NGX_PORT and :$NGX_PORT2 (pid $NGX_PID)"

begin "nginx: static file: Content-Length, not chunked (--raw)"
fetch "$TMP/w/raw.out" --raw 127.0.0.1 "$NGX_PORT" /static/big.bin
raw "$TMP/w/raw.out"
grep -q '^HTTP/1.1 200 ' "$TMP/w/raw/status" || die "status line: $(cat "$TMP/w/raw/status")"
has_header "content-length: $STATIC_LEN" || die "no 'Content-Length: $STATIC_LEN':" "$(cat "$TMP/w/raw/headers")"
no_header transfer-encoding || die "a Transfer-Encoding on a static file:" "$(cat "$TMP/w/raw/headers")"
same "raw reply's body" "$NGX/html/static/big.bin" "$TMP/w/raw/payload"
pass

begin "nginx: static file: GET, $STATIC_LEN bytes byte for byte"
fetch "$TMP/w/out" 127.0.0.1 "$NGX_PORT" /static/big.bin
split_out "$TMP/w/out"
[[ $N -eq 1 ]] || die "not one reply"
want_line 1 "status 200 content-length $STATIC_LEN body $STATIC_LEN bytes"
same "body" "$NGX/html/static/big.bin" "$TMP/w/1.body"
pass

begin "nginx: sub_filter reply really is chunked: no Content-Length, several chunks (--raw)"
fetch "$TMP/w/raw.out" --raw 127.0.0.1 "$NGX_PORT" /sub/page.html
raw "$TMP/w/raw.out"
grep -q '^HTTP/1.1 200 ' "$TMP/w/raw/status" || die "status line: $(cat "$TMP/w/raw/status")"
has_header 'transfer-encoding: chunked' || die "not chunked:" "$(cat "$TMP/w/raw/headers")"
no_header content-length || die "a Content-Length with chunked:" "$(cat "$TMP/w/raw/headers")"
[[ -f $TMP/w/raw/dechunked ]] || die "no de-chunked body"
CHUNKS=$(cat "$TMP/w/raw/chunks")
[[ $CHUNKS -ge 2 ]] || die "only $CHUNKS chunk(s): the client's chunk boundaries are not exercised"
same "raw reply de-chunked (by this script)" "$TMP/sub.want" "$TMP/w/raw/dechunked"
pass

SUB_LEN=$(wc -c <"$TMP/sub.want")
begin "nginx: chunked reply ($CHUNKS chunks): GET, de-chunked body ($SUB_LEN bytes) byte for byte"
fetch "$TMP/w/out" 127.0.0.1 "$NGX_PORT" /sub/page.html
split_out "$TMP/w/out"
[[ $N -eq 1 ]] || die "not one reply"
want_line 1 "status 200 content-length - body $SUB_LEN bytes"
same "body" "$TMP/sub.want" "$TMP/w/1.body"
pass

begin "nginx: 20 GETs (static, chunked, small, 404) in one get_all: right replies, ONE connection"
KA_PATHS=()
for ((i = 1; i <= 20; i++)); do
    case $((i % 5)) in
        1) KA_PATHS+=("/static/big.bin?ka=$i") ;;
        2) KA_PATHS+=("/sub/page.html?ka=$i") ;;
        3) KA_PATHS+=("/small/$((i % 3 + 1)).txt?ka=$i") ;;
        4) KA_PATHS+=("/missing?ka=$i") ;;
        0) KA_PATHS+=("/sub/page.html?ka=$i") ;;
    esac
done
fetch "$TMP/w/out" 127.0.0.1 "$NGX_PORT" "${KA_PATHS[@]}"
split_out "$TMP/w/out"
[[ $N -eq 20 ]] || die "$N replies for 20 paths"
for ((i = 1; i <= 20; i++)); do
    p=${KA_PATHS[i - 1]}
    case $p in
        /static/*)
            want_line "$i" "status 200 content-length $STATIC_LEN body $STATIC_LEN bytes"
            same "reply $i ($p)" "$NGX/html/static/big.bin" "$TMP/w/$i.body" ;;
        /sub/*)
            want_line "$i" "status 200 content-length - body $SUB_LEN bytes"
            same "reply $i ($p)" "$TMP/sub.want" "$TMP/w/$i.body" ;;
        /small/*)
            f=${p%%\?*}
            len=$(wc -c <"$NGX/html$f")
            want_line "$i" "status 200 content-length $len body $len bytes"
            same "reply $i ($p)" "$NGX/html$f" "$TMP/w/$i.body" ;;
        /missing*)
            len=$(wc -c <"$TMP/w/$i.body")
            want_line "$i" "status 404 content-length $len body $len bytes"
            grep -q '404 Not Found' "$TMP/w/$i.body" || die "reply $i ($p): not nginx's 404 page" ;;
    esac
done
# nginx logs a request once its reply is sent, which may be just after fetch has read it.
for ((t = 0; t < 50; t++)); do
    [[ $(grep -c 'ka=' "$NGX/logs/access.log" || true) -ge 20 ]] && break
    sleep 0.1
done
grep 'ka=' "$NGX/logs/access.log" >"$TMP/w/log" || true
[[ $(wc -l <"$TMP/w/log") -eq 20 ]] ||
    die "nginx logged $(wc -l <"$TMP/w/log") of the 20 requests:" "$(cat "$NGX/logs/access.log")"
conns=$(awk '{ print $1 }' "$TMP/w/log" | sort -u | wc -l)
[[ $conns -eq 1 ]] || die "the 20 requests came over $conns connections (access log: connection, requests on it, ...):" \
    "$(cat "$TMP/w/log")"
# In order, each the connection's next request: 1..20 on one connection used for nothing else.
awk -v paths="${KA_PATHS[*]}" '
    BEGIN { n = split(paths, p, " ") }
    { i++; if ($2 != i || $4 != p[i]) { print "line " i ": " $0 " (want request " i " " p[i] ")"; bad = 1 } }
    END { exit bad }' "$TMP/w/log" >"$TMP/w/order" ||
    die "access log not requests 1..20 of the connection in order:" "$(cat "$TMP/w/order")"
pass

begin "nginx closing after 7 requests (keepalive_requests 7): 20 GETs in one get_all reconnect"
KR_PATHS=()
for ((i = 1; i <= 20; i++)); do
    if ((i % 2)); then KR_PATHS+=("/static/big.bin?kr=$i"); else KR_PATHS+=("/sub/page.html?kr=$i"); fi
done
fetch "$TMP/w/out" 127.0.0.1 "$NGX_PORT2" "${KR_PATHS[@]}"
split_out "$TMP/w/out"
[[ $N -eq 20 ]] || die "$N replies for 20 paths"
for ((i = 1; i <= 20; i++)); do
    if ((i % 2)); then
        want_line "$i" "status 200 content-length $STATIC_LEN body $STATIC_LEN bytes"
        same "reply $i" "$NGX/html/static/big.bin" "$TMP/w/$i.body"
    else
        want_line "$i" "status 200 content-length - body $SUB_LEN bytes"
        same "reply $i" "$TMP/sub.want" "$TMP/w/$i.body"
    fi
done
for ((t = 0; t < 50; t++)); do
    [[ $(grep -c 'kr=' "$NGX/logs/access.log" || true) -ge 20 ]] && break
    sleep 0.1
done
grep 'kr=' "$NGX/logs/access.log" >"$TMP/w/log" || true
# Requests per connection, in order of the requests: 7, 7 and 6.
per_conn=$(awk '{ if ($1 != last) { if (n) printf "%d ", n; n = 0; last = $1 } n++ } END { if (n) printf "%d", n }' "$TMP/w/log")
[[ $per_conn == "7 7 6" ]] || die "requests per connection: want '7 7 6', got '$per_conn':" "$(cat "$TMP/w/log")"
pass

begin "nginx: HEAD on the static file: content-length $STATIC_LEN, no body"
fetch "$TMP/w/out" --head 127.0.0.1 "$NGX_PORT" /static/big.bin
split_out "$TMP/w/out"
[[ $N -eq 1 ]] || die "not one reply"
want_line 1 "status 200 content-length $STATIC_LEN body 0 bytes"
pass

begin "nginx: HEAD on the static file, raw: the head alone"
fetch "$TMP/w/raw.out" --raw --head 127.0.0.1 "$NGX_PORT" /static/big.bin
raw "$TMP/w/raw.out"
has_header "content-length: $STATIC_LEN" || die "no 'Content-Length: $STATIC_LEN':" "$(cat "$TMP/w/raw/headers")"
[[ ! -s $TMP/w/raw/payload ]] || die "$(wc -c <"$TMP/w/raw/payload") bytes after the head of a HEAD reply"
pass

begin "nginx: HEAD on the chunked location: no body"
fetch "$TMP/w/out" --head 127.0.0.1 "$NGX_PORT" /sub/page.html
split_out "$TMP/w/out"
[[ $N -eq 1 ]] || die "not one reply"
want_line 1 "status 200 content-length - body 0 bytes"
pass

kill -0 "$NGX_PID" 2>/dev/null || die "nginx exited during the checks: $(cat "$NGX/logs/error.log")"
if grep -E '\[(alert|crit|emerg)\]' "$NGX/logs/error.log" >"$TMP/ngx.alerts"; then
    CHECK="nginx: error log"
    die "nginx logged alerts:" "$(cat "$TMP/ngx.alerts")"
fi
stop_all

# ---------------------------------------------------------------- python3 -m http.server

PY=$TMP/py
mkdir -p "$PY/root/dir"
helper pattern "$PY/root/data.bin" 70001 13
printf 'hello from http.server\n' >"$PY/root/hello.txt"
printf 'inside\n' >"$PY/root/dir/inner.txt"
for attempt in 1 2 3; do
    PY_PORT=$(free_port)
    (cd "$PY/root" && exec python3 -u -m http.server --bind 127.0.0.1 "$PY_PORT") </dev/null >"$PY/out.log" 2>&1 &
    PY_PID=$!
    PIDS+=("$PY_PID")
    if wait_up "$PY_PID" "$PY_PORT" "$PY/out.log" "python3 -m http.server"; then
        break
    fi
    unset 'PIDS[-1]'
    if [[ $attempt -eq 3 ]]; then
        echo "FAIL: python3 -m http.server exited at start three times; its output:" >&2
        cat "$PY/out.log" >&2
        exit 2
    fi
done
echo "-- python3 -m http.server ($(python3 --version)) on 127.0.0.1:$PY_PORT (pid $PY_PID)"

begin "http.server: file: HTTP/1.0 reply with Content-Length (--raw)"
fetch "$TMP/w/raw.out" --raw 127.0.0.1 "$PY_PORT" /data.bin
raw "$TMP/w/raw.out"
grep -q '^HTTP/1.0 200 ' "$TMP/w/raw/status" || die "status line: $(cat "$TMP/w/raw/status")"
has_header 'content-length: 70001' || die "no 'Content-Length: 70001':" "$(cat "$TMP/w/raw/headers")"
same "raw reply's body" "$PY/root/data.bin" "$TMP/w/raw/payload"
pass

begin "http.server: file: GET, 70001 bytes byte for byte"
fetch "$TMP/w/out" 127.0.0.1 "$PY_PORT" /data.bin
split_out "$TMP/w/out"
[[ $N -eq 1 ]] || die "not one reply"
want_line 1 "status 200 content-length 70001 body 70001 bytes"
same "body" "$PY/root/data.bin" "$TMP/w/1.body"
pass

begin "http.server: 6 paths in one get_all (it closes after each: the client reconnects)"
fetch "$TMP/w/out" 127.0.0.1 "$PY_PORT" /data.bin /hello.txt /missing /dir /dir/inner.txt /data.bin
split_out "$TMP/w/out"
[[ $N -eq 6 ]] || die "$N replies for 6 paths"
want_line 1 "status 200 content-length 70001 body 70001 bytes"
same "reply 1 (/data.bin)" "$PY/root/data.bin" "$TMP/w/1.body"
want_line 2 "status 200 content-length 23 body 23 bytes"
same "reply 2 (/hello.txt)" "$PY/root/hello.txt" "$TMP/w/2.body"
len=$(wc -c <"$TMP/w/3.body")
want_line 3 "status 404 content-length $len body $len bytes"
grep -q 'File not found' "$TMP/w/3.body" || die "reply 3 (/missing): not http.server's 404 page"
# /dir without its slash: a redirect with an empty body (Content-Length: 0).
want_line 4 "status 301 content-length 0 body 0 bytes"
want_line 5 "status 200 content-length 7 body 7 bytes"
same "reply 5 (/dir/inner.txt)" "$PY/root/dir/inner.txt" "$TMP/w/5.body"
want_line 6 "status 200 content-length 70001 body 70001 bytes"
same "reply 6 (/data.bin)" "$PY/root/data.bin" "$TMP/w/6.body"
pass

begin "http.server: directory listing (Content-Length) and a file after it"
fetch "$TMP/w/out" 127.0.0.1 "$PY_PORT" / /hello.txt
split_out "$TMP/w/out"
[[ $N -eq 2 ]] || die "not two replies"
len=$(wc -c <"$TMP/w/1.body")
want_line 1 "status 200 content-length $len body $len bytes"
grep -q 'data.bin' "$TMP/w/1.body" || die "the listing does not name data.bin: $(cat "$TMP/w/1.body")"
same "reply 2 (/hello.txt)" "$PY/root/hello.txt" "$TMP/w/2.body"
pass

begin "http.server: HEAD on the file: content-length 70001, no body"
fetch "$TMP/w/out" --head 127.0.0.1 "$PY_PORT" /data.bin
split_out "$TMP/w/out"
[[ $N -eq 1 ]] || die "not one reply"
want_line 1 "status 200 content-length 70001 body 0 bytes"
pass

kill -0 "$PY_PID" 2>/dev/null || die "http.server exited during the checks: $(cat "$PY/out.log")"
stop_all

# ---------------------------------------------------------------- close-delimited bodies

CL=$TMP/close
mkdir -p "$CL"
helper pattern "$CL/body.bin" 150000 29
cat >"$CL/server.py" <<'EOF'
# Bodies without Content-Length or chunking: the end of the body is the end of the connection.
#   /close10  HTTP/1.0 200, body.bin in pieces with pauses, then close
#   /close11  HTTP/1.1 200 with `Connection: close`, the same
#   /empty    HTTP/1.0 200, no body at all, then close
import http.server, os, sys, time

BODY = open(sys.argv[1], "rb").read()

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/close11":
            self.protocol_version = "HTTP/1.1"
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if path == "/close11":
            self.send_header("Connection", "close")
        self.end_headers()
        if path == "/empty":
            return
        for at in range(0, len(BODY), 16384):
            self.wfile.write(BODY[at:at + 16384])
            self.wfile.flush()
            time.sleep(0.01)

    def log_message(self, format, *args):
        sys.stderr.write("%s\n" % (format % args))

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write("%d\n" % server.server_address[1])
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()
EOF
python3 -u "$CL/server.py" "$CL/body.bin" "$CL/port" </dev/null >"$CL/out.log" 2>&1 &
CL_PID=$!
PIDS+=("$CL_PID")
for ((t = 0; t < 150; t++)); do
    [[ -s $CL/port ]] && break
    kill -0 "$CL_PID" 2>/dev/null || break
    sleep 0.1
done
[[ -s $CL/port ]] || { echo "FAIL: the close-delimited server did not start; its output:" >&2; cat "$CL/out.log" >&2; exit 2; }
CL_PORT=$(cat "$CL/port")
wait_up "$CL_PID" "$CL_PORT" "$CL/out.log" "the close-delimited server" ||
    { echo "FAIL: the close-delimited server exited; its output:" >&2; cat "$CL/out.log" >&2; exit 2; }
echo "-- close-delimited server (http.server.BaseHTTPRequestHandler) on 127.0.0.1:$CL_PORT (pid $CL_PID)"

begin "close-delimited: HTTP/1.0, no Content-Length (--raw shows it)"
fetch "$TMP/w/raw.out" --raw 127.0.0.1 "$CL_PORT" /close10
raw "$TMP/w/raw.out"
grep -q '^HTTP/1.0 200 ' "$TMP/w/raw/status" || die "status line: $(cat "$TMP/w/raw/status")"
no_header content-length || die "a Content-Length:" "$(cat "$TMP/w/raw/headers")"
no_header transfer-encoding || die "a Transfer-Encoding:" "$(cat "$TMP/w/raw/headers")"
same "raw reply's body" "$CL/body.bin" "$TMP/w/raw/payload"
pass

begin "close-delimited: HTTP/1.0 GET: the whole 150000-byte body, read to the close"
fetch "$TMP/w/out" 127.0.0.1 "$CL_PORT" /close10
split_out "$TMP/w/out"
[[ $N -eq 1 ]] || die "not one reply"
want_line 1 "status 200 content-length - body 150000 bytes"
same "body" "$CL/body.bin" "$TMP/w/1.body"
pass

begin "close-delimited: HTTP/1.1 with Connection: close: the whole body"
fetch "$TMP/w/out" 127.0.0.1 "$CL_PORT" /close11
split_out "$TMP/w/out"
[[ $N -eq 1 ]] || die "not one reply"
want_line 1 "status 200 content-length - body 150000 bytes"
same "body" "$CL/body.bin" "$TMP/w/1.body"
pass

begin "close-delimited: empty body"
fetch "$TMP/w/out" 127.0.0.1 "$CL_PORT" /empty
split_out "$TMP/w/out"
[[ $N -eq 1 ]] || die "not one reply"
want_line 1 "status 200 content-length - body 0 bytes"
pass

begin "close-delimited: 4 paths in one get_all (a new connection after each close)"
fetch "$TMP/w/out" 127.0.0.1 "$CL_PORT" /close10 /empty /close11 /close10
split_out "$TMP/w/out"
[[ $N -eq 4 ]] || die "not four replies"
for i in 1 3 4; do
    want_line "$i" "status 200 content-length - body 150000 bytes"
    same "reply $i" "$CL/body.bin" "$TMP/w/$i.body"
done
want_line 2 "status 200 content-length - body 0 bytes"
pass

kill -0 "$CL_PID" 2>/dev/null || die "the close-delimited server exited during the checks: $(cat "$CL/out.log")"
stop_all

echo "client.sh: all checks passed in $((SECONDS - started))s"
