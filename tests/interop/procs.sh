# Helpers the interop and benchmark scripts share (sourced, not run): stopping a process they
# started, by its PID, and picking a free port on 127.0.0.1.

# stop_pid PID: TERM, wait up to 5 s, then KILL its children (nginx's workers, say) and itself.
stop_pid() {
    local pid=$1 i kids
    [[ -n $pid ]] || return 0
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kids=$(cat /proc/"$pid"/task/*/children 2>/dev/null || true)
        # shellcheck disable=SC2086
        [[ -z $kids ]] || kill -KILL $kids 2>/dev/null || true
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# free_port: a port on 127.0.0.1 that was free a moment ago.
free_port() {
    timeout 10 python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT: until something accepts on 127.0.0.1:PORT (10 s at most).
wait_port() {
    local port=$1
    for _ in $(seq 100); do
        (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
