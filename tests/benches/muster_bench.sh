# Sourced by the benches that run `muster serve` in front of the shared harness' fast rmcp
# backend (`bench-backend`) and drive it with its load generator (`mcp-load`); both come
# from `../shared/perf/run.sh --setup-only`, built into ~/.cache/muster-perf (PERF_BIN_DIR
# names another folder). MUSTER_BIN names the binary (default: the release build).
#
# Sets `root`, `muster`, `bins`, `work` (a temporary folder removed on exit), `port` and
# `backend_port`; `pids` collects processes to stop on exit.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
muster=${MUSTER_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/muster}
bins=${PERF_BIN_DIR:-${PERF_CACHE:-$HOME/.cache/muster-perf}/target/release}

# require_tools NAME... : exits unless each command exists.
require_tools() {
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "$(basename "$0"): $tool not found" >&2; exit 2; }
    done
    for bin in "$muster" "$bins/bench-backend" "$bins/mcp-load"; do
        [ -x "$bin" ] || { echo "$(basename "$0"): no executable $bin" >&2; exit 2; }
    done
}

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
backend_port=$(free_port)
port=$(free_port)

# start_backend_and_config: starts the backend and writes $work/config, muster's config
# folder (one server `bench`, MUSTER_CONFIG_EXTRA appended to config.yaml). BACKEND picks
# the backend: `http` (default) bench-backend over streamable HTTP; `py-http` and `sse` the
# Python SDK server of py_bench_server.py over streamable HTTP and over legacy SSE (its
# Python: PYTHON, default the test dependencies' venv), for comparing muster's hops to one
# server.
start_backend_and_config() {
    local type=streamable-http path=/mcp
    case "${BACKEND:-http}" in
        http) "$bins/bench-backend" --port "$backend_port" >"$work/backend.log" 2>&1 & ;;
        py-http | sse)
            local python=${PYTHON:-${MUSTER_TEST_DEPS:-$HOME/.cache/muster-test-deps}/venv/bin/python}
            "$python" "$root/tests/benches/py_bench_server.py" "$backend_port" >"$work/backend.log" 2>&1 &
            if [ "$BACKEND" = sse ]; then type=sse path=/sse; fi
            ;;
        *) echo "$(basename "$0"): BACKEND must be http, py-http or sse" >&2; exit 2 ;;
    esac
    pids+=($!)
    mkdir -p "$work/config/mcpservers"
    printf 'aggregator:\n  port: %s\n  host: localhost\n' "$port" >"$work/config/config.yaml"
    if [ -n "${MUSTER_CONFIG_EXTRA:-}" ]; then
        printf '%s\n' "$MUSTER_CONFIG_EXTRA" >>"$work/config/config.yaml"
    fi
    cat >"$work/config/mcpservers/bench.yaml" <<YAML
apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: bench
spec:
  type: $type
  url: http://localhost:$backend_port$path
  autoStart: true
YAML
}

# load ARGS...: mcp-load against muster, one session, concurrency 1, no warm-up, quiet;
# calls `call_tool` -> `x_bench_echo` unless ARGS name another tool.
load() {
    "$bins/mcp-load" --url "http://localhost:$port/mcp" --tool call_tool \
        --args '{"name":"x_bench_echo","arguments":{"message":"instructions"}}' \
        --warmup 0 -c 1 -q ${LOAD_ARGS:-} "$@"
}

# wait_ready: until a call through muster succeeds (valgrind makes start-up slow).
wait_ready() {
    for _ in $(seq 1 240); do
        if load -n 1 --expect instructions >/dev/null 2>&1; then return 0; fi
        sleep 0.5
    done
    echo "muster did not get ready; its log:" >&2
    cat "$work/muster.log" >&2
    exit 1
}
