#!/usr/bin/env bash
# Short coverage-guided fuzz runs of every target in fuzz/ (cargo fuzz, libFuzzer, nightly):
# FUZZ_SECONDS each (default 30, so that sixteen targets keep `.ci/run` within its hour on two
# cores), starting from the seed corpora in fuzz/corpus/ (a target without one starts empty), new inputs kept in a scratch
# directory. A crash, a failed check or a leak fails the run (and leaves the input under
# fuzz/artifacts/). Installs cargo-fuzz from crates.io when it is missing.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

die() {
    echo "fuzz: FAIL: $*" >&2
    exit 1
}

rustup toolchain list | grep -q '^nightly' ||
    die "the nightly toolchain is missing (cargo fuzz needs it: rustup toolchain install nightly)"
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install --locked cargo-fuzz || die "cargo install cargo-fuzz failed"
fi
seconds=${FUZZ_SECONDS:-30}
cargo +nightly fuzz build
for target in $(cargo +nightly fuzz list); do
    scratch=$(mktemp -d)
    log=$(mktemp)
    mkdir -p "corpus/$target"
    echo "fuzz: $target for ${seconds}s"
    status=0
    cargo +nightly fuzz run "$target" "$scratch" "corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1 ||
        status=$?
    grep -E '^(stat::number_of_executed_units|SUMMARY)|panicked|ERROR' "$log" || true
    rm -rf "$scratch"
    if [[ $status -ne 0 ]]; then
        tail -n 40 "$log" >&2
        die "$target found a failure (exit $status; the input is under fuzz/artifacts/$target)"
    fi
    rm -f "$log"
done
echo "fuzz: every target ran ${seconds}s without a failure"
