#!/usr/bin/env bash
# Interop tests against real programs: curl and Python's http.client talking to the `hello`
# and `echo` examples over 127.0.0.1. Run by .ci/run; runnable on its own from anywhere:
#
#   tests/interop/run.sh
#
# Installs curl with apt-get when it is missing (CI runs as root on a machine that may be new);
# a tool that is still missing afterwards is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() {
    echo "interop: FAIL: $*" >&2
    exit 1
}

command -v python3 >/dev/null ||
    die "python3 is not installed (the http.client checks need it; install python3 first)"
command -v timeout >/dev/null || die "timeout (coreutils) is not installed"

if ! command -v curl >/dev/null; then
    echo "interop: curl is missing; installing it with apt-get"
    command -v apt-get >/dev/null || die "curl is missing and there is no apt-get to install it"
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get update
    timeout 600 apt-get install -y curl
    command -v curl >/dev/null || die "curl is still missing after apt-get install"
fi
echo "interop: $(curl --version | head -n 1)"
echo "interop: $(python3 --version)"

# The default target directory, as CI uses.
unset CARGO_TARGET_DIR
cargo build --release --examples
hello=target/release/examples/hello
echo=target/release/examples/echo
[[ -x $hello && -x $echo ]] || die "the build did not produce $hello and $echo"

failed=()
# Each script bounds its own I/O; the outer timeout is the last resort.
echo
echo "== interop: Python http.client =="
timeout -k 10 300 python3 tests/interop/http_clients.py "$hello" "$echo" || failed+=("http_clients.py (exit $?)")
echo
echo "== interop: curl =="
timeout -k 10 300 tests/interop/curl.sh "$hello" "$echo" || failed+=("curl.sh (exit $?)")

echo
if [[ ${#failed[@]} -ne 0 ]]; then
    die "${failed[*]}"
fi
echo "interop: all passed"
