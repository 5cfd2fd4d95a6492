#!/usr/bin/env python3
"""Start to ready, and meta-tool latency at scale, of `muster serve` on a real config directory.

    MUSTER_BIN=target/release/muster python3 tests/benches/discovery_at_scale.py

Part 1, start to ready. READY_SERVERS (20) MCPServers of type streamable-http, all served
by one fast rmcp backend (the side-by-side harness's bench-backend), and READY_WORKFLOWS
(100) workflows. From spawning muster: the time until a `call_tool` on the first server's
`echo` succeeds through a fresh session, and until every server's has. Repeated READY_RUNS
(5) times; the backend's own start to ready (spawn until its first `echo` succeeds) is the
baseline measured in the same run.

Part 2, discovery at scale. SERVERS (100) MCPServers, each exposing the TOOLS (50) tools of
one Python MCP server (the official SDK 2.x, stateless, JSON replies), WORKFLOWS (300)
workflows and SESSIONS (1 000) MCP sessions open. mcp-load then calls each meta-tool CALLS
(500) times at concurrency 1, round-robin over the SESSIONS sessions; p50 and p99 of each
are set against the backend's `echo` measured by mcp-load in the same run: one MCP round
trip to a fast rmcp server on loopback, answered as an SSE stream, for scale. The last
column is muster's CPU time (user + system, from /proc) per call, measured over another
CALLS calls in one session so that opening the sessions is not counted.

PARTS (default "1,2") picks the parts to run, e.g. PARTS=1 for start to ready alone.

Needs mcp-load and bench-backend (built by `../shared/perf/run.sh --setup-only`; found in
PERF_CACHE, default ~/.cache/muster-perf, or named by MCP_LOAD / BENCH_BACKEND) and a
Python with the `mcp` package (PYTHON, default $MUSTER_TEST_DEPS/venv/bin/python).
Linux only; everything else is the Python standard library.
"""

import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SERVERS = int(os.environ.get("SERVERS", "100"))
TOOLS = int(os.environ.get("TOOLS", "50"))
WORKFLOWS = int(os.environ.get("WORKFLOWS", "300"))
SESSIONS = int(os.environ.get("SESSIONS", "1000"))
CALLS = int(os.environ.get("CALLS", "500"))
READY_SERVERS = int(os.environ.get("READY_SERVERS", "20"))
READY_WORKFLOWS = int(os.environ.get("READY_WORKFLOWS", "100"))
READY_RUNS = int(os.environ.get("READY_RUNS", "5"))

PERF_CACHE = os.environ.get("PERF_CACHE", os.path.expanduser("~/.cache/muster-perf"))
MCP_LOAD = os.environ.get("MCP_LOAD", f"{PERF_CACHE}/target/release/mcp-load")
BENCH_BACKEND = os.environ.get("BENCH_BACKEND", f"{PERF_CACHE}/target/release/bench-backend")
TEST_DEPS = os.environ.get("MUSTER_TEST_DEPS", os.path.expanduser("~/.cache/muster-test-deps"))
PYTHON = os.environ.get("PYTHON", f"{TEST_DEPS}/venv/bin/python")
MUSTER = os.environ.get("MUSTER_BIN", "target/release/muster")

VERBS = ["list", "get", "create", "delete", "update", "describe", "watch", "scale", "restart",
         "query"]
NOUNS = ["pods", "deployments", "services", "nodes", "metrics", "dashboards", "alerts",
         "volumes", "secrets", "events"]

# The Python MCP server of part 2: TOOLS tools named like a cluster API's.
CATALOG_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer

port, tools = int(sys.argv[1]), int(sys.argv[2])
verbs, nouns = sys.argv[3].split(","), sys.argv[4].split(",")
app = MCPServer("catalog", log_level="WARNING")

def tool(namespace: str, name: str = "") -> str:
    return f"{namespace}/{name}"

for t in range(tools):
    verb, noun = verbs[t % len(verbs)], nouns[(t // len(verbs)) % len(nouns)]
    app.add_tool(tool, name=f"{verb}_{noun}_{t}",
                 description=f"{verb.capitalize()} {noun} of the cluster ({t}).\\n"
                             "Longer documentation that discovery never shows.")
app.run(transport="streamable-http", host="127.0.0.1", port=port, stateless_http=True,
        json_response=True)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(conn, body, session=None):
    """POSTs one JSON-RPC message; returns (status, session id, parsed reply or None)."""
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "Host": "localhost",
               "MCP-Protocol-Version": "2025-06-18"}
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
    response = conn.getresponse()
    raw = response.read().decode()
    reply = None
    if raw.lstrip().startswith("{"):
        reply = json.loads(raw)
    else:
        for line in raw.splitlines():
            if line.startswith("data:") and line[5:].strip().startswith("{"):
                reply = json.loads(line[5:])
    return response.status, response.getheader("Mcp-Session-Id"), reply


def open_session(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    status, session, _ = post(conn, {
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "discovery-at-scale", "version": "1"}}})
    if status != 200:
        raise OSError(f"initialize answered {status}")
    post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return conn, session


def call(conn, session, tool, arguments):
    """True when the call succeeded (no JSON-RPC error, no isError)."""
    status, _, reply = post(conn, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                   "params": {"name": tool, "arguments": arguments}}, session)
    return (status == 200 and reply is not None and "result" in reply
            and not reply["result"].get("isError"))


def meta_text(conn, session, tool, arguments):
    """The text of a meta-tool's reply."""
    _, _, reply = post(conn, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": tool, "arguments": arguments}}, session)
    return reply["result"]["content"][0]["text"]


def wait_listening(port, deadline):
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.001)
    raise TimeoutError(f"nothing listens on {port}")


def write_config(directory, port, servers, workflows, backend_url, first_tool):
    with open(os.path.join(directory, "config.yaml"), "w") as f:
        f.write(f"aggregator:\n  port: {port}\n  host: localhost\n"
                f"  limits:\n    maxSessions: {SESSIONS * 2 + 100}\n")
    os.makedirs(os.path.join(directory, "mcpservers"))
    os.makedirs(os.path.join(directory, "workflows"))
    for i in range(servers):
        with open(os.path.join(directory, "mcpservers", f"s{i:03}.yaml"), "w") as f:
            f.write("apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\n"
                    f"metadata:\n  name: s{i:03}\nspec:\n  type: streamable-http\n"
                    f"  url: {backend_url}\n  autoStart: true\n"
                    f"  description: Cluster {i} API\n")
    for w in range(workflows):
        verb, noun = VERBS[w % len(VERBS)], NOUNS[(w // len(VERBS)) % len(NOUNS)]
        name = f"{verb}-{noun}-report-{w}"
        with open(os.path.join(directory, "workflows", f"{name}.yaml"), "w") as f:
            f.write("apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\n"
                    f"metadata:\n  name: {name}\nspec:\n"
                    f"  description: {verb.capitalize()} {noun} everywhere and report ({w})\n"
                    "  args:\n    namespace:\n      type: string\n      required: true\n"
                    "    limit:\n      type: integer\n      default: 10\n"
                    "  steps:\n    - id: first\n"
                    f"      tool: {first_tool}\n"
                    "      args:\n        message: \"{{ .input.namespace }}\"\n")


def start_muster(config):
    return subprocess.Popen([MUSTER, "serve", "--config-path", config],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(process):
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def ms(seconds):
    return f"{seconds * 1000:.1f} ms"


def backend_start_to_ready():
    """Spawn bench-backend and time its first successful `echo`."""
    port = free_port()
    started = time.monotonic()
    backend = subprocess.Popen([BENCH_BACKEND, "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, started + 10)
        conn, session = open_session(port)
        while not call(conn, session, "echo", {"message": "x"}):
            time.sleep(0.001)
        return time.monotonic() - started
    finally:
        stop(backend)


def muster_start_to_ready(backend_url):
    """Spawn muster on READY_SERVERS servers; time its first and last server's first call."""
    port = free_port()
    config = tempfile.mkdtemp(prefix="muster-ready-")
    try:
        write_config(config, port, READY_SERVERS, READY_WORKFLOWS, backend_url, "x_s000_echo")
        started = time.monotonic()
        muster = start_muster(config)
        try:
            wait_listening(port, started + 30)
            conn, session = open_session(port)
            pending = [f"x_s{i:03}_echo" for i in range(READY_SERVERS)]
            first = None
            while pending:
                if time.monotonic() > started + 30:
                    raise TimeoutError(f"not ready after 30 s: {pending[:3]}")
                if call(conn, session, "call_tool",
                        {"name": pending[0], "arguments": {"message": "x"}}):
                    pending.pop(0)
                    first = first or time.monotonic() - started
                else:
                    time.sleep(0.001)
            return first, time.monotonic() - started
        finally:
            stop(muster)
    finally:
        shutil.rmtree(config, ignore_errors=True)


def part_one():
    port = free_port()
    backend = subprocess.Popen([BENCH_BACKEND, "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, time.monotonic() + 10)
        url = f"http://127.0.0.1:{port}/mcp"
        baseline, firsts, alls = [], [], []
        for _ in range(READY_RUNS):
            baseline.append(backend_start_to_ready())
            first, every = muster_start_to_ready(url)
            firsts.append(first)
            alls.append(every)
    finally:
        stop(backend)
    print(f"\nstart to ready, {READY_SERVERS} servers and {READY_WORKFLOWS} workflows, "
          f"{READY_RUNS} runs (median, min-max):")
    for label, values in [("bench-backend alone, first echo", baseline),
                          ("muster, first server's first call", firsts),
                          ("muster, every server's first call", alls)]:
        print(f"  {label:<36} {ms(statistics.median(values)):>9}   "
              f"({ms(min(values))} - {ms(max(values))})")
    return {"backend": baseline, "first": firsts, "all": alls}


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mcp_load(url, tool, arguments, sessions, pid=None):
    """Latencies of CALLS calls over `sessions` sessions (after a second of unmeasured
    ones); with `pid`, also that process's CPU time per call (ms, key `cpu_ms`), measured
    over another CALLS calls in one session, so that opening the sessions is not counted."""
    def run(count, sessions, warmup):
        out = subprocess.run([MCP_LOAD, "--url", url, "--tool", tool, "--args",
                              json.dumps(arguments), "-n", str(count), "--warmup", warmup,
                              "--sessions", str(sessions), "--json", "-", "-q"],
                             capture_output=True, text=True, timeout=600)
        report = json.loads(out.stdout)
        if report["failed"]:
            raise RuntimeError(f"{tool} {arguments}: {report['errors']}")
        return report
    latency = run(CALLS, sessions, "1")["latency_ms"]
    if pid:
        before = cpu_seconds(pid)
        report = run(CALLS, 1, "0")
        latency["cpu_ms"] = (cpu_seconds(pid) - before) * 1000 / report["ok"]
    return latency


def part_two():
    backend_port, muster_port = free_port(), free_port()
    backend = subprocess.Popen([PYTHON, "-c", CATALOG_SERVER, str(backend_port), str(TOOLS),
                                ",".join(VERBS), ",".join(NOUNS)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    echo_port = free_port()
    echo = subprocess.Popen([BENCH_BACKEND, "--port", str(echo_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    config = tempfile.mkdtemp(prefix="muster-scale-")
    muster = None
    try:
        wait_listening(backend_port, time.monotonic() + 30)
        wait_listening(echo_port, time.monotonic() + 10)
        write_config(config, muster_port, SERVERS, WORKFLOWS,
                     f"http://127.0.0.1:{backend_port}/mcp", "x_s000_list_pods_0")
        muster = start_muster(config)
        wait_listening(muster_port, time.monotonic() + 30)
        conn, session = open_session(muster_port)
        expected = SERVERS * TOOLS + WORKFLOWS
        deadline = time.monotonic() + 120
        while True:
            text = meta_text(conn, session, "filter_tools",
                             {"pattern": "*_*", "limit": 1})
            total = json.loads(text)["total"]
            if total >= expected:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{total} of {expected} tools after 120 s")
            time.sleep(0.2)
        url = f"http://localhost:{muster_port}/mcp"
        middle = f"s{SERVERS // 2:03}"
        cases = [
            ("list_tools", "list_tools", {}),
            ("filter_tools pattern", "filter_tools", {"pattern": f"x_{middle}_*"}),
            ("filter_tools description", "filter_tools",
             {"description_filter": "dashboards of the cluster (2"}),
            ("filter_tools query", "filter_tools", {"query": "restart deployments cluster"}),
            ("filter_tools query, schemas", "filter_tools",
             {"query": "scale workflow report", "include_schema": True, "limit": 10}),
            ("describe_tool", "describe_tool", {"name": f"x_{middle}_list_pods_0"}),
            ("list_core_tools", "list_core_tools", {}),
            ("list_resources", "list_resources", {}),
            ("list_prompts", "list_prompts", {}),
            ("call_tool core_service_list", "call_tool",
             {"name": "core_service_list", "arguments": {}}),
        ]
        reference = mcp_load(f"http://127.0.0.1:{echo_port}/mcp", "echo", {"message": "x"}, 1)
        print(f"\nmeta-tools at {SERVERS} servers x {TOOLS} tools, {WORKFLOWS} workflows, "
              f"{SESSIONS} sessions ({CALLS} calls each, concurrency 1):")
        print(f"  {'call':<30} {'p50 ms':>8} {'p99 ms':>8} {'p50 x':>7} {'p99 x':>7} "
              f"{'muster CPU ms':>14}")
        print(f"  {'bench-backend echo':<30} {reference['p50']:>8.3f} {reference['p99']:>8.3f}")
        results = {"reference": reference}
        for label, tool, arguments in cases:
            latency = mcp_load(url, tool, arguments, SESSIONS, muster.pid)
            results[label] = latency
            print(f"  {label:<30} {latency['p50']:>8.3f} {latency['p99']:>8.3f} "
                  f"{latency['p50'] / reference['p50']:>7.2f} {latency['p99'] / reference['p99']:>7.2f} "
                  f"{latency['cpu_ms']:>14.3f}")
        with open(f"/proc/{muster.pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        print(f"  muster RSS after the calls: {rss / 1024:.1f} MB")
        return results
    finally:
        if muster:
            stop(muster)
        stop(echo)
        stop(backend)
        shutil.rmtree(config, ignore_errors=True)


def main():
    for path in (MCP_LOAD, BENCH_BACKEND, MUSTER, PYTHON):
        if not os.access(path, os.X_OK):
            sys.exit(f"discovery_at_scale.py: {path} is missing; see the module text")
    parts = os.environ.get("PARTS", "1,2").split(",")
    results = {}
    if "1" in parts:
        results["start_to_ready"] = part_one()
    if "2" in parts:
        results["meta_tools"] = part_two()
    if os.environ.get("JSON_OUT"):
        with open(os.environ["JSON_OUT"], "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
