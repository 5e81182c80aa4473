#!/usr/bin/env bash
# Interop tests against real programs: curl and Python's http.client talking to the `hello`
# and `echo` examples over 127.0.0.1, and the library's blocking client (the `fetch` example)
# talking to nginx and Python's http.server. Run by .ci/run; runnable on its own from anywhere:
#
#   tests/interop/run.sh
#
# Installs curl and nginx with apt-get when they are missing (CI runs as root on a machine that
# may be new); a tool that is still missing afterwards is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() {
    echo "interop: FAIL: $*" >&2
    exit 1
}

command -v python3 >/dev/null ||
    die "python3 is not installed (the http.client checks need it; install python3 first)"
command -v timeout >/dev/null || die "timeout (coreutils) is not installed"

# apt_install COMMAND PACKAGE: installs PACKAGE when COMMAND is missing (apt-get update once).
APT_UPDATED=""
apt_install() {
    local cmd=$1 package=$2
    command -v "$cmd" >/dev/null && return 0
    echo "interop: $cmd is missing; installing $package with apt-get"
    command -v apt-get >/dev/null || die "$cmd is missing and there is no apt-get to install it"
    export DEBIAN_FRONTEND=noninteractive
    if [[ -z $APT_UPDATED ]]; then
        timeout 600 apt-get update
        APT_UPDATED=1
    fi
    timeout 600 apt-get install -y "$package"
    command -v "$cmd" >/dev/null || die "$cmd is still missing after apt-get install $package"
}

# nginx lives in /usr/sbin, which a non-root PATH may lack.
[[ :$PATH: == *:/usr/sbin:* ]] || PATH=$PATH:/usr/sbin
apt_install curl curl
apt_install nginx nginx
echo "interop: $(curl --version | head -n 1)"
echo "interop: $(python3 --version)"
echo "interop: $(nginx -v 2>&1)"

# The default target directory, as CI uses.
unset CARGO_TARGET_DIR
cargo build --release --examples
hello=target/release/examples/hello
echo=target/release/examples/echo
fetch=target/release/examples/fetch
[[ -x $hello && -x $echo && -x $fetch ]] || die "the build did not produce $hello, $echo and $fetch"

failed=()
# Each script bounds its own I/O; the outer timeout is the last resort.
echo
echo "== interop: Python http.client =="
timeout -k 10 300 python3 tests/interop/http_clients.py "$hello" "$echo" || failed+=("http_clients.py (exit $?)")
echo
echo "== interop: curl =="
timeout -k 10 300 tests/interop/curl.sh "$hello" "$echo" || failed+=("curl.sh (exit $?)")
echo
echo "== interop: the blocking client (examples/fetch) against nginx and Python's http.server =="
timeout -k 10 300 tests/interop/client.sh "$fetch" || failed+=("client.sh (exit $?)")

echo
if [[ ${#failed[@]} -ne 0 ]]; then
    die "${failed[*]}"
fi
echo "interop: all passed"
