#!/usr/bin/env bash
# Short coverage-guided fuzz runs of every target in fuzz/ (cargo fuzz, libFuzzer, nightly):
# FUZZ_SECONDS each (default 30, so that sixteen targets keep `.ci/run` within its hour on two
# cores), FUZZ_JOBS at once (default: one a core), starting from the seed corpora in
# fuzz/corpus/ (a target without one starts empty), new inputs kept in a scratch directory. A
# crash, a failed check or a leak fails the run (and leaves the input under fuzz/artifacts/).
# Installs cargo-fuzz from crates.io when it is missing.
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
# Each libFuzzer run uses one core: run as many targets at once as there are cores.
jobs=${FUZZ_JOBS:-$(nproc)}
cargo +nightly fuzz build

# run_target TARGET LOG: fuzzes TARGET for $seconds, its output in LOG; its exit status.
run_target() {
    local target=$1 log=$2 scratch status=0
    scratch=$(mktemp -d)
    mkdir -p "corpus/$target"
    cargo +nightly fuzz run "$target" "$scratch" "corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1 ||
        status=$?
    rm -rf "$scratch"
    return "$status"
}

mapfile -t targets < <(cargo +nightly fuzz list)
failed=()
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
    batch=("${targets[@]:i:jobs}")
    pids=()
    logs=()
    for target in "${batch[@]}"; do
        log=$(mktemp)
        logs+=("$log")
        run_target "$target" "$log" &
        pids+=($!)
    done
    # Every run of the batch is waited for, a failing one's report printed in order.
    for k in "${!batch[@]}"; do
        status=0
        wait "${pids[k]}" || status=$?
        echo "fuzz: ${batch[k]} for ${seconds}s"
        grep -E '^(stat::number_of_executed_units|SUMMARY)|panicked|ERROR' "${logs[k]}" || true
        if [[ $status -ne 0 ]]; then
            tail -n 40 "${logs[k]}" >&2
            failed+=("${batch[k]} (exit $status; the input is under fuzz/artifacts/${batch[k]})")
        fi
        rm -f "${logs[k]}"
    done
    # A failing batch ends the run (the later targets are not fuzzed).
    [[ ${#failed[@]} -eq 0 ]] || break
done
[[ ${#failed[@]} -eq 0 ]] || die "found a failure: ${failed[*]}"
echo "fuzz: every target ran ${seconds}s without a failure"
