#!/usr/bin/env bash
# Instructions muster executes per proxied call, counted by valgrind's callgrind: a figure
# that, unlike wall-clock time, hardly moves when other work shares the machine, so it
# serves as the regression figure of the call path.
#
#   tests/benches/call_instructions.sh [CALLS]            # default 400 calls
#   MUSTER_BIN=target/release/muster tests/benches/call_instructions.sh
#
# Starts the shared harness' fast rmcp backend (bench-backend) and `muster serve` under
# callgrind with instrumentation off, makes 50 warm-up calls with mcp-load (`call_tool` ->
# `x_bench_echo`, one session, concurrency 1), switches it on, makes CALLS calls,
# switches it off and prints muster's instructions per call (all threads). The backend is
# not counted (CALLGRIND_KEEP=DIR keeps the dumps for callgrind_annotate). MUSTER_CONFIG_EXTRA is appended to the generated config.yaml (top-level
# keys, e.g. `observability: {metrics: {enabled: false}}`), to measure what a setting costs.
# LOAD_ARGS are added to every mcp-load call (e.g. `--protocol-version 2026-07-28` for a
# stateless client). Needs valgrind and the harness binaries (`../shared/perf/run.sh
# --setup-only` builds them into ~/.cache/muster-perf); PERF_BIN_DIR names another folder.
set -euo pipefail

calls=${1:-400}
root=$(cd "$(dirname "$0")/../.." && pwd)
muster=${MUSTER_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/muster}
bins=${PERF_BIN_DIR:-${PERF_CACHE:-$HOME/.cache/muster-perf}/target/release}
for tool in valgrind callgrind_control; do
    command -v "$tool" >/dev/null || { echo "call_instructions.sh: $tool not found" >&2; exit 2; }
done
for bin in "$muster" "$bins/bench-backend" "$bins/mcp-load"; do
    [ -x "$bin" ] || { echo "call_instructions.sh: no executable $bin" >&2; exit 2; }
done

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

"$bins/bench-backend" --port "$backend_port" >"$work/backend.log" 2>&1 &
pids+=($!)
mkdir -p "$work/config/mcpservers"
printf 'aggregator:\n  port: %s\n  host: localhost\n' "$port" >"$work/config/config.yaml"
if [ -n "${MUSTER_CONFIG_EXTRA:-}" ]; then
    printf '%s\n' "$MUSTER_CONFIG_EXTRA" >>"$work/config/config.yaml"
fi
cat >"$work/config/mcpservers/bench.yaml" <<EOF
apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: bench
spec:
  type: streamable-http
  url: http://localhost:$backend_port/mcp
  autoStart: true
EOF

valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.out" \
    "$muster" serve --config-path "$work/config" >"$work/muster.log" 2>&1 &
muster_pid=$!
pids+=("$muster_pid")

load() {
    "$bins/mcp-load" --url "http://localhost:$port/mcp" --tool call_tool \
        --args '{"name":"x_bench_echo","arguments":{"message":"instructions"}}' \
        --expect instructions --warmup 0 -c 1 -q ${LOAD_ARGS:-} "$@"
}

# Ready once a call through muster succeeds (valgrind makes start-up slow).
for _ in $(seq 1 240); do
    if load -n 1 >/dev/null 2>&1; then break; fi
    sleep 0.5
done
load -n 50 >/dev/null || { echo "muster did not get ready; its log:" >&2; cat "$work/muster.log" >&2; exit 1; }

callgrind_control -i on "$muster_pid" >/dev/null 2>&1
load -n "$calls" >/dev/null
callgrind_control -i off "$muster_pid" >/dev/null 2>&1
callgrind_control -d "$muster_pid" >/dev/null 2>&1
sleep 1

# The dump holds what was counted while instrumentation was on: its `totals:` line.
total=$(awk '/^totals:/ { s += $2 } END { print s + 0 }' "$work"/callgrind.out.*)
echo "muster: $calls proxied calls, $total instructions, $((total / calls)) instructions per call"
# CALLGRIND_KEEP=DIR keeps the dumps for a profile: callgrind_annotate --inclusive=yes DIR/callgrind.out.*
if [ -n "${CALLGRIND_KEEP:-}" ]; then
    mkdir -p "$CALLGRIND_KEEP"
    cp "$work"/callgrind.out.* "$CALLGRIND_KEEP"/
fi
