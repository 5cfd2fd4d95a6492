#!/usr/bin/env python3
"""How long `muster serve` takes to exit on SIGTERM while a CPU-bound jq step runs, and
how `/health` answers meanwhile.

    MUSTER_BIN=target/release/muster python3 tests/benches/sigterm_with_jq.py [RUNS]

Starts muster with a workflow whose only step stores `core_service_list`'s result through
`jq: 'last(range(700000000))'` (about half a minute of CPU if nothing stopped it), calls
`workflow_spin` from a client thread, probes `GET /health` ten times while the step runs,
sends SIGTERM and measures the time until the process has exited. Prints one line per run
and the median. Standard library only.
"""

import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, body, session=None, timeout=60.0):
    conn = http.client.HTTPConnection("localhost", port, timeout=timeout)
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if session:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = "2025-06-18"
    conn.request("POST", "/mcp", json.dumps(body), headers)
    resp = conn.getresponse()
    sid = resp.getheader("Mcp-Session-Id")
    data = resp.read()
    conn.close()
    return sid, data


def health_ms(port):
    start = time.monotonic()
    conn = http.client.HTTPConnection("localhost", port, timeout=30)
    conn.request("GET", "/health")
    conn.getresponse().read()
    conn.close()
    return (time.monotonic() - start) * 1000


def cpu_seconds(pid):
    """User + system CPU time of `pid` so far (shows the jq step was spinning)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(muster):
    with tempfile.TemporaryDirectory() as work:
        port = free_port()
        os.makedirs(os.path.join(work, "workflows"))
        with open(os.path.join(work, "config.yaml"), "w") as f:
            f.write(f"aggregator:\n  port: {port}\n  host: localhost\n")
        with open(os.path.join(work, "workflows", "spin.yaml"), "w") as f:
            f.write(
                "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\n"
                "metadata:\n  name: spin\nspec:\n  steps:\n"
                "    - id: spin\n      tool: core_service_list\n"
                "      jq: 'last(range(700000000))'\n"
            )
        proc = subprocess.Popen(
            [muster, "serve", "--config-path", work],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(200):
                try:
                    health_ms(port)
                    break
                except OSError:
                    time.sleep(0.05)
            sid, _ = post(port, {
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "sigterm-bench", "version": "1"}},
            })
            post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "call_tool",
                               "arguments": {"name": "workflow_spin", "arguments": {}}}}

            def caller():
                try:
                    post(port, call, sid)
                except OSError:
                    pass

            threading.Thread(target=caller, daemon=True).start()
            time.sleep(1.0)
            probes = [health_ms(port) for _ in range(10)]
            cpu = cpu_seconds(proc.pid)
            start = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            exit_ms = (time.monotonic() - start) * 1000
            return exit_ms, max(probes), proc.returncode, cpu
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def main():
    muster = os.environ.get("MUSTER_BIN", "target/release/muster")
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    exits = []
    for i in range(runs):
        exit_ms, worst_health, code, cpu = one_run(muster)
        exits.append(exit_ms)
        print(f"run {i + 1}: exit after SIGTERM {exit_ms:.0f} ms (exit code {code}); "
              f"slowest /health during the jq step {worst_health:.1f} ms; "
              f"muster's CPU before SIGTERM {cpu:.2f} s")
    print(f"median exit after SIGTERM: {statistics.median(exits):.0f} ms over {runs} runs")


if __name__ == "__main__":
    main()
