#!/usr/bin/env bash
# Writes symbol-order.txt: the functions `muster serve` executes, the busiest first, which the
# build (../build.rs) hands to the linker so that they are laid out together
# (docs/decisions/0009-functions-laid-out-by-profile.md).
#
#   cargo build --release -p muster-bin && crates/muster-bin/layout/generate.sh
#
# Runs the release binary under valgrind's callgrind, from its start to its shutdown, in front
# of the shared harness' fast rmcp backend, and drives it the way a user would: proxied calls
# from session clients (one, eight and 32 at a time) and from 2026-07-28 stateless clients,
# list_tools, filter_tools, describe_tool, core_service_list and a workflow. Every function
# of the muster binary that ran is listed in parts, each ordered by the instructions its
# functions executed: first those that ran from the start to the last proxied call (what
# every muster that proxies calls runs, start-up included); then what the same start and
# calls added with the server over stdio, then over legacy SSE, then with legacy SSE clients
# calling muster's `/sse` front door (runs of their own); last
# those only the meta-tools, the workflow and the shutdown ran. A muster that proxies calls
# then maps the first parts alone instead of pages where its functions sit among the
# others. Native runs of the same calls add to the first part what ran there only, counted
# with uprobes (native_functions.py). Needs root (for the uprobes), taskset, valgrind
# (callgrind_control), nm, readelf and python3 besides the harness binaries
# (tests/benches/muster_bench.sh); the SSE run needs the Python MCP SDK of the test
# dependencies (PYTHON names another interpreter) and is left out without it; the SSE
# front door run needs target/release/sse-bench (SSE_BENCH).
# Run it again after larger changes: functions renamed since are skipped by the linker and
# new ones land among the rest of the code.
set -euo pipefail

layout=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/benches/muster_bench.sh
source "$layout/../../../tests/benches/muster_bench.sh"
require_tools valgrind callgrind_annotate callgrind_control nm readelf python3
start_backend_and_config
mkdir -p "$work/config/workflows"
cat >"$work/config/workflows/echo-twice.yaml" <<'YAML'
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: echo-twice
spec:
  description: "Echo a message, then echo what came back"
  args:
    message:
      type: string
      required: true
  steps:
    - id: first
      tool: x_bench_echo
      args:
        message: "{{ .input.message }}"
    - id: second
      tool: x_bench_echo
      args:
        message: "{{ .results.first }} again"
      condition:
        template: "{{ ne .input.message \"\" }}"
  output:
    echoed: "{{ .results.second }}"
YAML

valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" \
    "$muster" serve --config-path "$work/config" >"$work/muster.log" 2>&1 &
muster_pid=$!
pids+=("$muster_pid")

# The proxied calls of both runs: session clients one, eight and 32 at a time, and a
# 2026-07-28 stateless client.
proxied_calls() {
    load -n 300 --expect instructions
    load -n 300 -c 8 --expect instructions
    load -n 100 --protocol-version 2026-07-28 --expect instructions
    load -n 2000 -c 32 --expect instructions
}

wait_ready
proxied_calls
# The costs so far (start-up and proxied calls) go to a dump of their own: callgrind.out.1.
callgrind_control --dump=proxied-calls "$muster_pid" >/dev/null 2>&1
call() { load -n 20 --args "$2" --tool "$1"; }
call list_tools '{}'
call filter_tools '{"pattern":"x_bench_*"}'
call describe_tool '{"name":"x_bench_echo"}'
call call_tool '{"name":"core_service_list","arguments":{}}'
call call_tool '{"name":"workflow_echo-twice","arguments":{"message":"layout"}}'
kill -INT "$muster_pid"
wait "$muster_pid" || true

# The same start and proxied calls with the server over each other transport, in runs of
# their own: what these add to the first part (process spawning and rmcp's client over
# stdio; muster's legacy SSE client) follows it, so a muster whose servers use them maps a
# few more pages after the first part instead of one here and there among the rest.
# callgrind.out-stdio.1 and callgrind.out-sse.1 hold each run's start and proxied calls.
other_transport_run() {
    local name=$1 server=$2 calls=${3:-proxied_calls}
    rm -rf "$work/config-$name"
    mkdir -p "$work/config-$name/mcpservers"
    cp "$work/config/config.yaml" "$work/config-$name/config.yaml"
    printf '%s\n' "$server" >"$work/config-$name/mcpservers/bench.yaml"
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out-$name" \
        "$muster" serve --config-path "$work/config-$name" >"$work/muster.log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    wait_ready
    "$calls"
    callgrind_control --dump=proxied-calls "$pid" >/dev/null 2>&1
    kill -INT "$pid"
    wait "$pid" || true
}
server_yaml() {
    printf 'apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: bench\nspec:\n%s\n  autoStart: true' "$1"
}
other_dumps=()
other_transport_run stdio "$(server_yaml "  type: stdio
  command: $bins/bench-backend
  args: [\"--stdio\"]")"
other_dumps+=("$work/callgrind.out-stdio.1")
python=${PYTHON:-${MUSTER_TEST_DEPS:-$HOME/.cache/muster-test-deps}/venv/bin/python}
if [ -x "$python" ]; then
    # The Python SDK server of the transport benches answers `echo` over legacy SSE.
    sse_port=$(free_port)
    "$python" "$root/tests/benches/py_bench_server.py" "$sse_port" >"$work/py-backend.log" 2>&1 &
    pids+=($!)
    other_transport_run sse "$(server_yaml "  type: sse
  url: http://localhost:$sse_port/sse")"
    other_dumps+=("$work/callgrind.out-sse.1")
else
    echo "no Python with the MCP SDK at $python: the legacy SSE run is left out" >&2
fi
# The same calls from legacy SSE clients, through muster's own `/sse` front door, to the
# server over streamable HTTP (`sse-bench load`, SSE_BENCH names another build).
sse_bench=${SSE_BENCH:-$root/target/release/sse-bench}
sse_front_calls() {
    local url="http://localhost:$port/sse"
    local args='{"name":"x_bench_echo","arguments":{"message":"instructions"}}'
    for c in 1 8 32; do
        "$sse_bench" load --url "$url" --tool call_tool --args "$args" --warmup 0 -q \
            --expect instructions -n $((c * 40)) -c "$c" >/dev/null
    done
}
if [ -x "$sse_bench" ]; then
    other_transport_run sse-front "$(server_yaml "  type: streamable-http
  url: http://localhost:$backend_port/mcp")" sse_front_calls
    other_dumps+=("$work/callgrind.out-sse-front.1")
else
    echo "no $sse_bench (cargo build --release -p muster-tests --bin sse-bench): the SSE front door run is left out" >&2
fi

nm --defined-only --print-size "$muster" >"$work/symbols.txt"
# callgrind.out.1: from the start to the last proxied call; then the other transports' runs;
# callgrind.out: the rest.
for dump in "$work/callgrind.out.1" "${other_dumps[@]}" "$work/callgrind.out"; do
    callgrind_annotate --threshold=100 --inclusive=no "$dump" >"$dump.costs" 2>/dev/null
done
grep -oE '^c?fn=\([0-9]+\) .+$' "$work/callgrind.out.1" | sed -E "s/^c?fn=\([0-9]+\) //; s/'[0-9]+\$//" |
    sort -u >"$work/callgrind-part1.txt"

# The same start and proxied calls natively. Paths that depend on timing, which callgrind's
# serialized run never takes (a task still running when its handle is dropped, a lock found
# taken), run there only. The first runs tell which code pages a native muster maps; the
# next count, with a uprobe at each function on those pages that callgrind did not see,
# which of them ran. They join the first part. `native_run one-cpu` runs muster on one CPU,
# where it uses tokio's current-thread scheduler instead of worker threads: every other run
# is such a run, so the functions of both schedulers are counted.
native_run() {
    local launch=()
    if [ "${1:-}" = one-cpu ]; then
        # The first CPU this script may use.
        launch=(taskset --cpu-list "$(awk '/^Cpus_allowed_list/ { split($2, cpus, /[,-]/); print cpus[1] }' /proc/self/status)")
    fi
    "${launch[@]}" "$muster" serve --config-path "$work/config" >"$work/native.log" 2>&1 &
    native_pid=$!
    pids+=("$native_pid")
    wait_ready
    proxied_calls
}
trap 'python3 "$layout/native_functions.py" remove 2>/dev/null || true; cleanup' EXIT
stop_native() {
    kill -INT "$native_pid"
    wait "$native_pid" || true
}
# Which of those paths run differs from one run to the next: candidates and calls are each
# gathered over two runs.
for round in one-cpu every-cpu; do
    native_run "$round"
    python3 "$layout/native_functions.py" candidates "$muster" "$native_pid" "$work/callgrind-part1.txt" \
        >>"$work/candidates-all.txt"
    stop_native
done
sort -u "$work/candidates-all.txt" >"$work/candidates.txt"
python3 "$layout/native_functions.py" add "$muster" "$work/candidates.txt"
# The probes count on until they are collected.
native_run one-cpu
stop_native
native_run
python3 "$layout/native_functions.py" collect "$muster" >"$work/native.txt"
stop_native

python3 - "$work/symbols.txt" "$work/native.txt" "$work/callgrind.out.1" "${other_dumps[@]}" \
    "$work/callgrind.out" >"$layout/symbol-order.txt" <<'PY'
import re, sys
symbols, native, dumps = sys.argv[1], sys.argv[2], sys.argv[3:]
size = {}
for line in open(symbols):
    parts = line.split()
    if len(parts) == 4 and parts[2] in "tTwW":
        size[parts[3]] = size.get(parts[3], 0) + int(parts[1], 16)
# callgrind marks recursive calls with 'N; the linker knows the plain name.
plain = lambda name: re.sub(r"'\d+$", "", name)
def costs(dump):
    """The functions a dump saw, with the instructions they executed."""
    cost = {}
    for line in open(dump + ".costs"):
        found = re.match(r"^\s*([\d,]+) \([^)]*\)\s+\S*:(\S+) \[", line)
        if found:
            name = plain(found.group(2))
            cost[name] = cost.get(name, 0) + int(found.group(1).replace(",", ""))
    for line in open(dump, errors="replace"):
        found = re.match(r"^c?fn=\(\d+\) (.+)$", line)
        if found:
            cost.setdefault(plain(found.group(1)), 0)
    return cost
listed = set()
# The native run's functions, the most called first.
native_calls = {}
for line in open(native):
    name, calls = line.split()
    native_calls.setdefault(name, int(calls))
for part, dump in enumerate(dumps):
    cost = costs(dump)
    if part == 0:
        new = [n for n in native_calls if n in size and n not in cost]
        print(f"native run: {len(new)} functions callgrind did not see", file=sys.stderr)
    else:
        new = []
    ran = sorted((n for n in cost if n in size and n not in listed), key=lambda n: (-cost[n], n))
    # After callgrind's, the native run's own, the most called first.
    ran += sorted((n for n in new if n not in listed), key=lambda n: (-native_calls[n], n))
    listed.update(ran)
    print("\n".join(ran))
    print(f"part {part + 1}: {len(ran)} functions, {sum(size[n] for n in ran)} bytes of code", file=sys.stderr)
PY
echo "wrote $layout/symbol-order.txt"
