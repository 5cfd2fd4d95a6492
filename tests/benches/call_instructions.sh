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
# stateless client). BACKEND=sse or BACKEND=py-http puts the Python SDK server of
# py_bench_server.py behind muster instead, over legacy SSE or streamable HTTP. Needs valgrind and the harness binaries (`../shared/perf/run.sh
# --setup-only` builds them into ~/.cache/muster-perf); PERF_BIN_DIR names another folder.
set -euo pipefail

calls=${1:-400}
# shellcheck source=tests/benches/muster_bench.sh
source "$(dirname "$0")/muster_bench.sh"
require_tools valgrind callgrind_control
start_backend_and_config

valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.out" \
    "$muster" serve --config-path "$work/config" >"$work/muster.log" 2>&1 &
muster_pid=$!
pids+=("$muster_pid")

wait_ready
load -n 50 --expect instructions >/dev/null || { echo "warm-up calls failed" >&2; exit 1; }

callgrind_control -i on "$muster_pid" >/dev/null 2>&1
load -n "$calls" --expect instructions >/dev/null
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
