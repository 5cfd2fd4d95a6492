#!/usr/bin/env bash
# Writes symbol-order.txt: the functions `muster serve` executes, the busiest first, which the
# build (../build.rs) hands to the linker so that they are laid out together
# (docs/decisions/0009-functions-laid-out-by-profile.md).
#
#   cargo build --release -p muster-bin && crates/muster-bin/layout/generate.sh
#
# Runs the release binary under valgrind's callgrind, from its start to its shutdown, in front
# of the shared harness' fast rmcp backend, and drives it the way a user would: proxied calls
# from session clients (one and eight at a time) and from 2026-07-28 stateless clients,
# list_tools, filter_tools, describe_tool, core_service_list and a workflow. Every function
# of the muster binary that ran is listed, ordered by the instructions it executed. Needs
# valgrind, nm and python3 besides the harness binaries (tests/benches/muster_bench.sh).
# Run it again after larger changes: functions renamed since are skipped by the linker and
# new ones land among the rest of the code.
set -euo pipefail

layout=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/benches/muster_bench.sh
source "$layout/../../../tests/benches/muster_bench.sh"
require_tools valgrind callgrind_annotate nm python3
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

wait_ready
load -n 300 --expect instructions
load -n 300 -c 8 --expect instructions
load -n 100 --protocol-version 2026-07-28 --expect instructions
call() { load -n 20 --args "$2" --tool "$1"; }
call list_tools '{}'
call filter_tools '{"pattern":"x_bench_*"}'
call describe_tool '{"name":"x_bench_echo"}'
call call_tool '{"name":"core_service_list","arguments":{}}'
call call_tool '{"name":"workflow_echo-twice","arguments":{"message":"layout"}}'
kill -INT "$muster_pid"
wait "$muster_pid" || true

nm --defined-only --print-size "$muster" >"$work/symbols.txt"
for dump in "$work"/callgrind.out*; do
    callgrind_annotate --threshold=100 --inclusive=no "$dump"
done >"$work/costs.txt" 2>/dev/null
python3 - "$work/symbols.txt" "$work/costs.txt" "$work"/callgrind.out* >"$layout/symbol-order.txt" <<'PY'
import re, sys
symbols, costs, dumps = sys.argv[1], sys.argv[2], sys.argv[3:]
size = {}
for line in open(symbols):
    parts = line.split()
    if len(parts) == 4 and parts[2] in "tTwW":
        size[parts[3]] = size.get(parts[3], 0) + int(parts[1], 16)
# callgrind marks recursive calls with 'N; the linker knows the plain name.
plain = lambda name: re.sub(r"'\d+$", "", name)
cost = {}
for line in open(costs):
    found = re.match(r"^\s*([\d,]+) \([^)]*\)\s+\S*:(\S+) \[", line)
    if found:
        name = plain(found.group(2))
        cost[name] = cost.get(name, 0) + int(found.group(1).replace(",", ""))
for dump in dumps:
    for line in open(dump, errors="replace"):
        found = re.match(r"^c?fn=\(\d+\) (.+)$", line)
        if found:
            cost.setdefault(plain(found.group(1)), 0)
ran = sorted((n for n in cost if n in size), key=lambda n: (-cost[n], n))
print("\n".join(ran))
print(f"{len(ran)} functions, {sum(size[n] for n in ran)} bytes of code", file=sys.stderr)
PY
echo "wrote $layout/symbol-order.txt"
