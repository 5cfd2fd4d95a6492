#!/usr/bin/env python3
"""Latency and throughput of muster over the transport variants the side-by-side harness
(`../shared/perf/run.sh`) does not cover, each next to the baseline it is compared with.

    MUSTER_BIN=target/release/muster python3 tests/benches/transport_variants.py
    SYSTEMS=muster-stdio,mcp-proxy-py DURATION=20 python3 tests/benches/transport_variants.py

Systems (rows; SYSTEMS picks some, comma list; a row's baseline is added when missing):

  direct                   bench-backend --port B (streamable HTTP, sessions); mcp-load calls
                           `echo` with one session. Baseline of the next four rows.
  muster-http              muster -> bench-backend over streamable HTTP (MCPServer `type:
                           streamable-http`, `url: http://localhost:B/mcp`, `autoStart: true`,
                           exactly as the harness); mcp-load calls `call_tool {name:
                           x_bench_echo, arguments: {message}}` and expects the message.
  muster-stdio             muster -> bench-backend over stdio (`type: stdio`, `command:
                           <bench-backend>`, `args: ["--stdio"]`, `autoStart: true`).
  mcp-proxy-py             PyPI mcp-proxy, `mcp-proxy --port P -- bench-backend --stdio`, and
  mcp-proxy-npm            npm mcp-proxy, `mcp-proxy --server stream --port P -- bench-backend
                           --stdio`, launched as the harness's bench.py does (from PERF_CACHE;
                           `run.sh --setup-only` installs them): the two peers that also reach
                           the backend over stdio.
  direct-stateless         bench-backend --stateless --json-response; mcp-load with
                           --protocol-version 2026-07-28 (stateless client, per-request _meta).
                           Baseline of the next row.
  muster-stateless-client  muster as in muster-http, mcp-load with --protocol-version
                           2026-07-28: a stateless client in front, a session behind.
  direct-py                a Python MCP server (the official SDK: MCPServer, called FastMCP
                           before mcp 2.x) with the same `echo` tool, its streamable HTTP
                           endpoint /mcp (stateless, JSON replies) hit directly. Baseline of
                           the next two rows.
  muster-py-http           muster -> that Python server over streamable HTTP (/mcp).
  muster-sse               muster -> that Python server over legacy SSE (`type: sse`, /sse).
                           Both transports come from ONE Python process: the SDK's sse_app()
                           and streamable_http_app() routes in one Starlette app under uvicorn,
                           so muster-py-http and muster-sse differ only in muster's backend hop.
                           Its baseline is the Python server's streamable HTTP (mcp-load speaks
                           no SSE); the next two rows set an SSE hop against SSE itself.
  direct-sse               `sse-bench serve --port B` (tests/src/sse_bench: a fast legacy
                           HTTP+SSE server on axum, GET /sse + POST /messages?sessionId=...,
                           the same `echo` tool) called by `sse-bench load`, which takes
                           mcp-load's options and writes its report, speaking legacy SSE: one
                           session shared by all workers, each call a POST on a keep-alive
                           HTTP/1 pool answered 202, its reply read off the session's stream.
                           Baseline of the next row.
  muster-sse-rust          muster -> that sse-bench server over legacy SSE (`type: sse`, `url:
                           http://localhost:B/sse`, `autoStart: true`); mcp-load calls muster
                           as in muster-http.
  muster-sse-client        muster as in muster-http, called by `sse-bench load` over muster's
                           own legacy SSE front door (GET /sse, POST /message?sessionId=...):
                           a legacy SSE client in front, bench-backend behind. Baseline
                           `direct`; its pair is muster-http (the client transport differs).
  relay                    `tcp-relay` (tests/src/bin/tcp-relay.rs) -> bench-backend: each
                           connection's bytes relayed to the backend and back, unread, on
                           tokio's current-thread runtime (muster's on one CPU). mcp-load
                           calls `echo` through it. The floor of any proxy in muster's place:
                           the same two loopback sockets and wake-ups per call, no parsing.
                           Baseline `direct`; its pair is muster-http.
  relay-sse                `tcp-relay` -> the sse-bench server, called by `sse-bench load`
                           through it. Baseline `direct-sse`; its pair is muster-sse-rust.

Method (that of ../shared/perf/bench.py, see its README): mcp-load (for direct-sse, `sse-bench
load`) runs pinned with taskset on the first CPU, the system under test and its backend on the
others (PIN=auto|on|off).
Every system gets a freshly started backend (or spawns its own over stdio) and is stopped,
with everything it started, before the next. A system is ready once one call through it
succeeds (polled up to READY_TIMEOUT s, default 30). Then a heat-up run at the highest
concurrency (WARMUP s), and for each concurrency a warm-up run (WARMUP s) and the measured
run (DURATION s). Each baseline row that is measured is measured again at the end
(REPEAT_DIRECT=1, default); the ratios of a row use the better of its baseline's two runs
(lowest p50 for the latency columns, highest calls/s for `thr x`), and a `!!` line warns
when the two runs of a baseline differ by more than 25 %. `cpu us/call` is the CPU time
(utime + stime from /proc/PID/stat) of the system's own processes during the measured run
per successful call: for muster its process tree minus the backend (a stdio bench-backend
child is excluded by name, an HTTP backend is a separate process); for a direct row, the
backend itself (for direct-sse, the sse-bench server process). `RSS MB` is read from
/proc after the system's runs, backend excluded. Below the tables, the ratios of the pairs
that differ in one thing (muster's stdio hop against the two mcp-proxy peers and against its
HTTP hop, SSE against HTTP on the Python backend, muster's SSE hop against a client calling
the same SSE server directly, the stateless client against the session client) are printed.

Knobs: MUSTER_BIN (target/release/muster), SYSTEMS (all), DURATION (10), WARMUP (2),
CONCURRENCY (1,32), MESSAGE_BYTES (32), PIN (auto), REPEAT_DIRECT (1), READY_TIMEOUT (30),
CALL_TIMEOUT (30), JSON_OUT (write every number there as JSON), KEEP_LOGS (1: keep the log
folder even when everything went well), PERF_CACHE (~/.cache/muster-perf: mcp-load,
bench-backend and the peers; MCP_LOAD / BENCH_BACKEND name the binaries directly),
SSE_BENCH (target/release/sse-bench, the server and load generator of direct-sse and
muster-sse-rust; `cargo build --release -p muster-tests --bin sse-bench`; without it the rows
that need it are skipped), TCP_RELAY (target/release/tcp-relay, the relay rows; `cargo build
--release -p muster-tests --bin tcp-relay`; without it those rows are skipped), MUSTER_TEST_DEPS (~/.cache/muster-test-deps) and PYTHON
($MUSTER_TEST_DEPS/venv/bin/python, with the `mcp` package). Each process's stdout + stderr
goes to a file in a temporary log folder (muster's as `<system>-muster.log`); the folder is
removed at the end unless a row failed, had failed calls or KEEP_LOGS=1, in which case its
path is printed. WARN / ERROR
lines in muster's logs are counted and the first few shown under the tables.
Linux only; the script itself uses the Python standard library only.
"""

import datetime as dt
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PERF_CACHE = os.environ.get("PERF_CACHE", os.path.expanduser("~/.cache/muster-perf"))
MCP_LOAD = os.environ.get("MCP_LOAD", f"{PERF_CACHE}/target/release/mcp-load")
BENCH_BACKEND = os.environ.get("BENCH_BACKEND", f"{PERF_CACHE}/target/release/bench-backend")
TEST_DEPS = os.environ.get("MUSTER_TEST_DEPS", os.path.expanduser("~/.cache/muster-test-deps"))
PYTHON = os.environ.get("PYTHON", f"{TEST_DEPS}/venv/bin/python")
MUSTER = os.path.abspath(os.environ.get("MUSTER_BIN", "target/release/muster"))
SSE_BENCH = os.path.abspath(os.environ.get("SSE_BENCH", "target/release/sse-bench"))
SSE_BENCH_BUILD = "cargo build --release -p muster-tests --bin sse-bench"
TCP_RELAY = os.path.abspath(os.environ.get("TCP_RELAY", "target/release/tcp-relay"))
TCP_RELAY_BUILD = "cargo build --release -p muster-tests --bin tcp-relay"
PY_PROXY = os.path.join(PERF_CACHE, "venv-mcp-proxy", "bin", "mcp-proxy")
NPM_PROXY = os.path.join(PERF_CACHE, "npm", "node_modules", ".bin", "mcp-proxy")

DURATION = float(os.environ.get("DURATION", "10"))
WARMUP = float(os.environ.get("WARMUP", "2"))
CONCURRENCY = [int(c) for c in os.environ.get("CONCURRENCY", "1,32").split(",") if c.strip()]
MESSAGE_BYTES = int(os.environ.get("MESSAGE_BYTES", "32"))
PIN = os.environ.get("PIN", "auto")
REPEAT_DIRECT = os.environ.get("REPEAT_DIRECT", "1") != "0"
READY_TIMEOUT = float(os.environ.get("READY_TIMEOUT", "30"))
CALL_TIMEOUT = float(os.environ.get("CALL_TIMEOUT", "30"))
KEEP_LOGS = os.environ.get("KEEP_LOGS", "0") == "1"

BACKEND_COMM = "bench-backend"  # a stdio backend a proxy spawns is excluded by this name
CLK_TCK = os.sysconf("SC_CLK_TCK")
NOISY = 0.25
STATELESS_VERSION = "2026-07-28"

# The Python backend of direct-py / muster-py-http / muster-sse: one process, one uvicorn,
# streamable HTTP at /mcp (stateless, JSON replies) and legacy SSE at /sse + /messages/.
PY_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "py_bench_server.py")

# ----------------------------------------------------------------- systems

# name -> (baseline, backend, front, description)
#   backend: "http" bench-backend, "stateless" bench-backend --stateless --json-response,
#            "py" the Python server, "sse-bench" `sse-bench serve` (legacy SSE), None (the
#            front spawns bench-backend over stdio)
#   front:   None (the load generator hits the backend: mcp-load, or `sse-bench load` for an
#            sse-bench backend), or how the system is started
SYSTEMS = {
    "direct": ("direct", "http", None, "mcp-load -> bench-backend (streamable HTTP, session)"),
    "muster-http": ("direct", "http", "muster-http",
                    "muster -> bench-backend, MCPServer type streamable-http"),
    "muster-stdio": ("direct", None, "muster-stdio",
                     "muster -> bench-backend --stdio, MCPServer type stdio"),
    "mcp-proxy-py": ("direct", None, "mcp-proxy-py",
                     "PyPI mcp-proxy: streamable HTTP front, bench-backend over stdio"),
    "mcp-proxy-npm": ("direct", None, "mcp-proxy-npm",
                      "npm mcp-proxy --server stream: bench-backend over stdio"),
    "direct-stateless": ("direct-stateless", "stateless", None,
                         f"mcp-load {STATELESS_VERSION} -> bench-backend --stateless "
                         "--json-response"),
    "muster-stateless-client": ("direct-stateless", "http", "muster-http",
                                f"mcp-load {STATELESS_VERSION} -> muster -> bench-backend "
                                "(streamable HTTP)"),
    "direct-py": ("direct-py", "py", None,
                  "mcp-load -> Python MCP server (SDK, stateless, JSON replies) /mcp"),
    "muster-py-http": ("direct-py", "py", "muster-py-http",
                       "muster -> Python server, MCPServer type streamable-http (/mcp)"),
    "muster-sse": ("direct-py", "py", "muster-sse",
                   "muster -> Python server, MCPServer type sse (/sse)"),
    "direct-sse": ("direct-sse", "sse-bench", None,
                   "sse-bench load -> sse-bench serve (legacy SSE, session)"),
    "muster-sse-rust": ("direct-sse", "sse-bench", "muster-sse-rust",
                        "muster -> sse-bench serve, MCPServer type sse (/sse)"),
    "muster-sse-client": ("direct", "http", "muster-sse-client",
                          "sse-bench load -> muster's legacy SSE front door (/sse) -> "
                          "bench-backend (streamable HTTP)"),
    "relay": ("direct", "http", "relay",
              "mcp-load -> tcp-relay -> bench-backend (bytes relayed unread)"),
    "relay-sse": ("direct-sse", "sse-bench", "relay-sse",
                  "sse-bench load -> tcp-relay -> sse-bench serve (bytes relayed unread)"),
}

# Pairs differing in one thing: (row, compared with, what differs).
PAIRS = [
    ("muster-stdio", "mcp-proxy-py", "stdio backend: muster vs PyPI mcp-proxy"),
    ("muster-stdio", "mcp-proxy-npm", "stdio backend: muster vs npm mcp-proxy"),
    ("muster-stdio", "muster-http", "muster's backend hop: stdio vs streamable HTTP"),
    ("muster-sse", "muster-py-http", "muster's backend hop (Python server): SSE vs HTTP"),
    ("muster-sse-rust", "direct-sse", "legacy SSE server: through muster vs called directly"),
    ("muster-stateless-client", "muster-http", f"client: {STATELESS_VERSION} stateless vs session"),
    ("muster-sse-client", "muster-http", "client: legacy SSE vs streamable HTTP"),
    ("muster-http", "relay", "streamable HTTP backend: muster vs the floor (a TCP relay)"),
    ("muster-sse-rust", "relay-sse", "legacy SSE backend: muster vs the floor (a TCP relay)"),
]

# ----------------------------------------------------------------- /proc


def proc_table():
    """pid -> (ppid, comm, utime + stime ticks) for every visible process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", encoding="utf-8", errors="replace") as f:
                s = f.read()
        except OSError:
            continue
        lp, rp = s.find("("), s.rfind(")")
        rest = s[rp + 2:].split()
        try:
            out[int(d)] = (int(rest[1]), s[lp + 1:rp], int(rest[11]) + int(rest[12]))
        except (IndexError, ValueError):
            continue
    return out


def descendants(root, table=None):
    table = table if table is not None else proc_table()
    kids = {}
    for pid, (ppid, _, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        if p in table and p not in out:
            out.append(p)
        todo.extend(kids.get(p, []))
    return out


def status_kb(pid, key):
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def alive_pid(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def usage(own_roots, backend_roots):
    """CPU ticks and memory of the system's process trees, split into its own and the backend's.

    The backend is every process of backend_roots' trees plus any process named
    bench-backend below own_roots (the stdio backend a proxy spawns)."""
    table = proc_table()
    backend = set()
    for root in backend_roots:
        backend.update(descendants(root, table))
    own = set()
    for root in own_roots:
        for pid in descendants(root, table):
            if table[pid][1] == BACKEND_COMM:
                backend.add(pid)
            elif pid not in backend:
                own.add(pid)
    return {
        "own_ticks": sum(table[p][2] for p in own),
        "backend_ticks": sum(table[p][2] for p in backend if p in table),
        "own_rss_kb": sum(status_kb(p, "VmRSS") for p in own),
        "own_hwm_kb": sum(status_kb(p, "VmHWM") for p in own),
        "backend_rss_kb": sum(status_kb(p, "VmRSS") for p in backend),
        "own_processes": len(own),
    }


# ----------------------------------------------------------------- processes

LIVE = []  # every started Proc not yet stopped, for the last-resort cleanup


class Proc:
    """A process started in its own process group; stopped with its group and every
    descendant (each by PID: muster puts stdio servers in process groups of their own)."""

    def __init__(self, name, argv, log, cpus, cwd=None):
        self.name, self.log_path = name, log
        self.log = open(log, "wb")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        full = (["taskset", "-c", cpus] if cpus else []) + argv  # taskset execs: same PID
        self.p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=self.log,
                                  stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                  start_new_session=True)
        self.pid = self.p.pid
        LIVE.append(self)

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        if self in LIVE:
            LIVE.remove(self)
        family = descendants(self.pid)  # collected while the parent still holds them
        for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
            if self.p.returncode is None:  # not reaped yet: the group id is still ours
                try:
                    os.killpg(self.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            live = [p for p in family if alive_pid(p)]
            for pid in live:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            deadline = time.time() + grace
            while time.time() < deadline:
                self.p.poll()
                if not any(alive_pid(p) for p in live):
                    break
                time.sleep(0.05)
            else:
                continue
            break
        try:
            self.p.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
        self.log.close()

    def tail(self, n=12):
        try:
            with open(self.log_path, errors="replace") as f:
                return "\n".join(f.read().splitlines()[-n:])
        except OSError:
            return ""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not proc.alive():
            return False
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


# ----------------------------------------------------------------- load runs


def load_argv(target, concurrency, duration, extra):
    """argv of the target's load generator (mcp-load, or `sse-bench load`: same options)."""
    argv = target["load"] + ["--url", target["url"], "--tool", target["tool"],
                             "--args", json.dumps(target["args"]), "--expect", target["expect"],
                             "-c", str(concurrency), "--warmup", "0",
                             "--timeout", str(CALL_TIMEOUT)]
    if duration > 0:
        argv += ["-d", str(duration)]
    return argv + target["extra"] + extra


def run_load(cpus, argv, timeout):
    full = (["taskset", "-c", cpus] if cpus else []) + argv
    try:
        r = subprocess.run(full, capture_output=True, text=True, timeout=timeout)
        return r.returncode, (r.stdout + r.stderr).strip()
    except subprocess.TimeoutExpired:
        return 124, f"{os.path.basename(argv[0])} did not finish in time"


def wait_ready(cpus, target, procs, timeout):
    deadline = time.time() + timeout
    last = ""
    while time.time() < deadline:
        for p in procs:
            if not p.alive():
                return (f"{p.name} exited during start-up (exit code {p.p.returncode})\n"
                        f"log {p.log_path}:\n{p.tail()}")
        rc, out = run_load(cpus, load_argv(target, 1, 0, ["-n", "1", "-q", "--timeout", "5"]), 15)
        if rc == 0:
            return ""
        last = out
        time.sleep(0.25)
    return (f"no successful call within {timeout:.0f}s; last attempt: {last[-400:]}\n"
            f"log {procs[-1].log_path}:\n{procs[-1].tail()}")


# ----------------------------------------------------------------- one system


def muster_config(directory, port, spec):
    os.makedirs(os.path.join(directory, "mcpservers"))
    with open(os.path.join(directory, "config.yaml"), "w") as f:
        f.write(f"aggregator:\n  port: {port}\n  host: localhost\n")
    with open(os.path.join(directory, "mcpservers", "bench.yaml"), "w") as f:
        f.write("apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\n"
                "metadata:\n  name: bench\nspec:\n" + spec + "  autoStart: true\n")


def front_argv(front, port, backend_port, workdir):
    """argv of the system under test (and its config written into workdir)."""
    if front == "mcp-proxy-py":
        return [PY_PROXY, "--host", "127.0.0.1", "--port", str(port), "--log-level", "WARNING",
                "--", BENCH_BACKEND, "--stdio"]
    if front in ("relay", "relay-sse"):
        return [TCP_RELAY, "--listen", f"127.0.0.1:{port}", "--to", f"127.0.0.1:{backend_port}"]
    if front == "mcp-proxy-npm":
        return [NPM_PROXY, "--host", "127.0.0.1", "--port", str(port), "--server", "stream",
                "--", BENCH_BACKEND, "--stdio"]
    http = f"  type: streamable-http\n  url: http://localhost:{backend_port}/mcp\n"
    sse = f"  type: sse\n  url: http://localhost:{backend_port}/sse\n"
    spec = {
        "muster-http": http,
        "muster-sse-client": http,
        "muster-py-http": http,
        "muster-sse": sse,
        "muster-sse-rust": sse,
        "muster-stdio": f"  type: stdio\n  command: {json.dumps(BENCH_BACKEND)}\n"
                        "  args: [\"--stdio\"]\n",
    }[front]
    config = os.path.join(workdir, "muster-config")
    muster_config(config, port, spec)
    return [MUSTER, "serve", "--config-path", config]


def measure(name, cpus, logdir, message):
    """Starts the system, waits until ready, runs the loads; returns its result dict."""
    base, backend_kind, front, description = SYSTEMS[name]
    res = {"name": name, "baseline": base, "description": description, "runs": []}
    workdir = tempfile.mkdtemp(prefix=f"transport-{name}-")
    procs, backend = [], None
    try:
        backend_port = None
        if backend_kind:
            backend_port = free_port()
            if backend_kind == "py":
                argv = [PYTHON, PY_SERVER, str(backend_port)]
            elif backend_kind == "sse-bench":
                argv = [SSE_BENCH, "serve", "--host", "127.0.0.1", "--port", str(backend_port)]
            else:
                argv = [BENCH_BACKEND, "--host", "127.0.0.1", "--port", str(backend_port)]
                if backend_kind == "stateless":
                    argv += ["--stateless", "--json-response"]
            backend = Proc("backend", argv, os.path.join(logdir, f"{name}-backend.log"), cpus)
            procs.append(backend)
            if not wait_port(backend_port, backend, 30):
                res["error"] = f"backend did not start\nlog {backend.log_path}:\n{backend.tail()}"
                return res
        extra = ["--protocol-version", STATELESS_VERSION] if base == "direct-stateless" else []
        if front is None and backend_kind == "sse-bench":
            system = backend
            target = {"url": f"http://127.0.0.1:{backend_port}/sse", "tool": "echo",
                      "args": {"message": message}, "expect": message, "extra": extra,
                      "load": [SSE_BENCH, "load"]}
        elif front is None:
            system = backend
            target = {"url": f"http://127.0.0.1:{backend_port}/mcp", "tool": "echo",
                      "args": {"message": message}, "expect": message, "extra": extra}
        else:
            port = free_port()
            is_muster = front.startswith("muster")
            log = os.path.join(logdir, f"{name}-muster.log" if is_muster else f"{name}.log")
            system = Proc(name, front_argv(front, port, backend_port, workdir), log, cpus,
                          cwd=workdir)
            procs.append(system)
            if is_muster:
                res["muster_log"] = log
                target = {"url": f"http://localhost:{port}/mcp", "tool": "call_tool",
                          "args": {"name": "x_bench_echo", "arguments": {"message": message}},
                          "expect": message, "extra": extra}
                if front == "muster-sse-client":
                    target["url"] = f"http://localhost:{port}/sse"
                    target["load"] = [SSE_BENCH, "load"]
            elif front == "relay-sse":
                target = {"url": f"http://127.0.0.1:{port}/sse", "tool": "echo",
                          "args": {"message": message}, "expect": message, "extra": extra,
                          "load": [SSE_BENCH, "load"]}
            else:
                target = {"url": f"http://127.0.0.1:{port}/mcp", "tool": "echo",
                          "args": {"message": message}, "expect": message, "extra": extra}
        target.setdefault("load", [MCP_LOAD])
        load_name = " ".join(os.path.basename(a) for a in target["load"])
        res["url"], res["tool"], res["load"] = target["url"], target["tool"], load_name
        t0 = time.time()
        why = wait_ready(LOAD_CPUS, target, procs, READY_TIMEOUT)
        res["ready_s"] = round(time.time() - t0, 2)
        if why:
            res["error"] = why
            return res

        direct = system is backend  # a direct row: the backend is the whole system
        own_roots = [] if direct else [system.pid]
        backend_roots = [backend.pid] if backend else []
        if WARMUP > 0:
            # freshly started processes run slow for their first seconds: heat up first
            run_load(LOAD_CPUS, load_argv(target, max(CONCURRENCY), WARMUP, ["-q"]),
                     WARMUP + CALL_TIMEOUT + 30)
        for c in CONCURRENCY:
            run = {"concurrency": c}
            if WARMUP > 0:
                run_load(LOAD_CPUS, load_argv(target, c, WARMUP, ["-q"]), WARMUP + CALL_TIMEOUT + 30)
            jpath = os.path.join(workdir, f"c{c}.json")
            u0 = usage(own_roots, backend_roots)
            rc, out = run_load(LOAD_CPUS, load_argv(target, c, DURATION,
                                                    ["-q", "--json", jpath, "--label", name]),
                               DURATION + CALL_TIMEOUT + 30)
            u1 = usage(own_roots, backend_roots)
            try:
                with open(jpath) as f:
                    run.update(json.load(f))
            except (OSError, ValueError):
                run["error"] = f"{load_name} exit {rc}: {out[-400:]}"
                res["runs"].append(run)
                continue
            if rc not in (0, 1):
                run["error"] = f"{load_name} exit {rc}: {out[-400:]}"
            calls = max(run.get("ok", 0), 1)
            elapsed = max(run.get("elapsed_s", 0.0), 1e-9)
            own = (u1["own_ticks"] - u0["own_ticks"]) / CLK_TCK
            be = (u1["backend_ticks"] - u0["backend_ticks"]) / CLK_TCK
            if direct:
                own = be
            run["cpu"] = {"system_s": round(own, 3), "backend_s": round(be, 3),
                          "system_us_per_call": round(own / calls * 1e6, 1),
                          "backend_us_per_call": round(be / calls * 1e6, 1),
                          "system_cores": round(own / elapsed, 2)}
            res["runs"].append(run)
        u = usage(own_roots, backend_roots)
        if direct:
            res["rss_mb"] = round(u["backend_rss_kb"] / 1024, 1)
            res["rss_peak_mb"] = round(status_kb(backend.pid, "VmHWM") / 1024, 1)
            res["processes"] = 1
        else:
            res["rss_mb"] = round(u["own_rss_kb"] / 1024, 1)
            res["rss_peak_mb"] = round(u["own_hwm_kb"] / 1024, 1)
            res["processes"] = u["own_processes"]
        res["backend_rss_mb"] = round(u["backend_rss_kb"] / 1024, 1)
        return res
    finally:
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        if res.get("muster_log"):
            res["muster_log_issues"] = log_issues(res["muster_log"])


def log_issues(path):
    """WARN / ERROR lines of a muster log (count, first few)."""
    lines = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if " WARN " in line or " ERROR " in line or '"level":"WARN' in line \
                        or '"level":"ERROR' in line:
                    lines.append(line.rstrip())
    except OSError:
        pass
    return {"count": len(lines), "first": lines[:5]}


# ----------------------------------------------------------------- report


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def run_of(res, c):
    return next((r for r in res.get("runs", []) if r["concurrency"] == c), None)


def good(run):
    return run and run.get("latency_ms", {}).get("p50") and run.get("throughput_rps")


def baselines(results, c):
    """Per baseline name: best p50 and best calls/s over its runs at concurrency c."""
    out = {}
    for name in {r["baseline"] for r in results}:
        runs = [run_of(r, c) for r in results if r["name"] == name]
        runs = [r for r in runs if good(r)]
        if not runs:
            continue
        p50s = [r["latency_ms"]["p50"] for r in runs]
        thrs = [r["throughput_rps"] for r in runs]
        out[name] = {"runs": len(runs), "p50_ms": min(p50s), "throughput_rps": max(thrs),
                     "p50_spread": round(max(p50s) / min(p50s) - 1, 3),
                     "throughput_spread": round(max(thrs) / min(thrs) - 1, 3)}
    return out


def table(results, bases, c, skipped):
    cols = ["system", "calls/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "+p50 ms", "p50 x",
            "thr x", "fail", "cpu us/call", "cores", "RSS MB", "vs"]
    rows = []
    for res in results:
        run = run_of(res, c)
        if res.get("error") or not run or "latency_ms" not in run:
            why = (res.get("error") or (run or {}).get("error") or "not run").splitlines()[0]
            rows.append([res["label"], "n/a: " + why[:90]])
            continue
        lat, base = run["latency_ms"], bases.get(res["baseline"])
        add = ratio = thr = None
        if base:
            add, ratio = lat["p50"] - base["p50_ms"], lat["p50"] / base["p50_ms"]
            thr = run["throughput_rps"] / base["throughput_rps"]
        cpu = run.get("cpu", {})
        rows.append([res["label"], fmt(run["throughput_rps"], ".1f"), fmt(lat.get("p50"), ".3f"),
                     fmt(lat.get("p90"), ".3f"), fmt(lat.get("p99"), ".3f"),
                     fmt(lat.get("max"), ".3f"), fmt(add, "+.3f"), fmt(ratio, ".2f"),
                     fmt(thr, ".3f"), str(run.get("failed", 0)),
                     fmt(cpu.get("system_us_per_call"), ".0f"), fmt(cpu.get("system_cores"), ".2f"),
                     fmt(res.get("rss_mb"), ".1f"), res["baseline"]])
    full = [r for r in rows if len(r) == len(cols)]
    widths = [max([len(cols[i])] + [len(r[i]) for r in full]) for i in range(len(cols))]
    widths[0] = max([widths[0]] + [len(r[0]) for r in rows])

    def line(r):
        return "  ".join(v.ljust(w) if i in (0, len(cols) - 1) else v.rjust(w)
                         for i, (v, w) in enumerate(zip(r, widths))).rstrip()

    out = [line(cols), "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append(line(r) if len(r) == len(cols) else r[0].ljust(widths[0]) + "  " + r[1])
    for name, why in skipped.items():
        out.append(name.ljust(widths[0]) + "  skipped: " + why)
    return "\n".join(out)


def summary(report):
    m = report["meta"]
    out = [f"muster transport variants  {m['date']}  host {m['host']}  {m['cpus']} CPUs  "
           f"duration {m['duration_s']}s  warm-up {m['warmup_s']}s  message {m['message_bytes']} B  "
           f"pinning: load on CPU {m['load_cpus'] or 'any'}, systems on CPU {m['sut_cpus'] or 'any'}"]
    results = report["systems"]
    for c in m["concurrency"]:
        bases = report["baselines"][str(c)]
        kind = "latency" if c == 1 else "throughput"
        out += ["", f"== concurrency {c} ({kind}); ratios against the best run of the row's "
                    "baseline (column vs) =="]
        for name, b in sorted(bases.items()):
            out.append(f"   {name}: p50 {b['p50_ms']:.3f} ms, {b['throughput_rps']:.1f} calls/s "
                       f"(best of {b['runs']} run(s))")
        out.append(table(results, bases, c, report["skipped"]))
        for name, b in sorted(bases.items()):
            if max(b["p50_spread"], b["throughput_spread"]) > NOISY:
                out.append(f"!! the {name} runs differ by {100 * b['p50_spread']:.0f}% in p50 and "
                           f"{100 * b['throughput_spread']:.0f}% in calls/s: the machine was noisy "
                           "during this run; treat this table with care or run again")
        pair_lines = []
        for a, b, what in PAIRS:
            ra = next((run_of(r, c) for r in results if r["name"] == a and not r.get("error")), None)
            rb = next((run_of(r, c) for r in results if r["name"] == b and not r.get("error")), None)
            if good(ra) and good(rb):
                pair_lines.append(
                    f"   {a} / {b}: p50 x {ra['latency_ms']['p50'] / rb['latency_ms']['p50']:.2f}, "
                    f"thr x {ra['throughput_rps'] / rb['throughput_rps']:.3f}, cpu/call x "
                    f"{ra['cpu']['system_us_per_call'] / max(rb['cpu']['system_us_per_call'], 1e-9):.2f}"
                    f"   ({what})")
        if pair_lines:
            out += ["pairs (first row / second row):"] + pair_lines
    out += ["", "systems:"]
    for r in results:
        extra = []
        if "ready_s" in r and not r.get("error"):
            extra.append(f"ready in {r['ready_s']}s")
        if "rss_peak_mb" in r:
            extra.append(f"RSS {r['rss_mb']} MB (peak {r['rss_peak_mb']} MB, {r['processes']} proc)")
        if r.get("backend_rss_mb") and not r["name"].startswith("direct"):
            extra.append(f"backend RSS {r['backend_rss_mb']} MB")
        out.append(f"  {r['label']:<24} {r['description']}" + (f"  [{'; '.join(extra)}]" if extra else ""))
        if r.get("error"):
            out.extend("      " + line for line in r["error"].splitlines()[:15])
        for run in r.get("runs", []):
            if run.get("error"):
                out.append(f"      c={run['concurrency']}: {run['error']}")
            for e, n in (run.get("errors") or {}).items():
                out.append(f"      c={run['concurrency']}: {n} x {e}")
        issues = r.get("muster_log_issues")
        if issues and issues["count"]:
            out.append(f"      muster log: {issues['count']} WARN/ERROR line(s), first:")
            out.extend("        " + line[:200] for line in issues["first"])
    for name, why in report["skipped"].items():
        out.append(f"  {name:<24} skipped: {why}")
    return "\n".join(out)


# ----------------------------------------------------------------- main


def unavailable():
    """name -> why, for systems that cannot run here."""
    why = {}
    if not os.access(MUSTER, os.X_OK):
        for n, (_, _, front, _) in SYSTEMS.items():
            if front and front.startswith("muster"):
                why[n] = f"muster binary {MUSTER} missing (MUSTER_BIN)"
    if not os.access(PY_PROXY, os.X_OK):
        why["mcp-proxy-py"] = f"{PY_PROXY} not installed (../shared/perf/run.sh --setup-only)"
    if not os.access(NPM_PROXY, os.X_OK) or not shutil.which("node"):
        why["mcp-proxy-npm"] = f"{NPM_PROXY} or node not installed (../shared/perf/run.sh --setup-only)"
    probe = None
    try:
        probe = subprocess.run([PYTHON, "-c", "import mcp, starlette, uvicorn"],
                               capture_output=True, text=True, timeout=60)
    except OSError as e:
        err = str(e)
    else:
        err = "" if probe.returncode == 0 else (probe.stderr.strip().splitlines() or ["?"])[-1]
    if err:
        for n, (_, kind, _, _) in SYSTEMS.items():
            if kind == "py":
                why[n] = f"Python server unavailable ({PYTHON}: {err})"
    if not os.access(SSE_BENCH, os.X_OK):
        for n, (_, kind, front, _) in SYSTEMS.items():
            if kind == "sse-bench" or front == "muster-sse-client":
                why[n] = f"{SSE_BENCH} missing (SSE_BENCH); build it with {SSE_BENCH_BUILD}"
    if not os.access(TCP_RELAY, os.X_OK):
        for n, (_, _, front, _) in SYSTEMS.items():
            if front in ("relay", "relay-sse"):
                why[n] = f"{TCP_RELAY} missing (TCP_RELAY); build it with {TCP_RELAY_BUILD}"
    return why


LOAD_CPUS = SUT_CPUS = ""


def main():
    global LOAD_CPUS, SUT_CPUS
    for path in (MCP_LOAD, BENCH_BACKEND):
        if not os.access(path, os.X_OK):
            sys.exit(f"transport_variants.py: {path} is missing; build it with "
                     "../shared/perf/run.sh --setup-only (or set PERF_CACHE)")
    cpus = sorted(os.sched_getaffinity(0))
    if PIN == "on" or (PIN == "auto" and len(cpus) >= 2):
        if len(cpus) < 2 or not shutil.which("taskset"):
            print("pinning needs taskset and at least 2 CPUs; running unpinned", file=sys.stderr)
        else:
            LOAD_CPUS, SUT_CPUS = str(cpus[0]), ",".join(str(c) for c in cpus[1:])

    wanted = [s.strip() for s in os.environ.get("SYSTEMS", ",".join(SYSTEMS)).split(",") if s.strip()]
    skipped = {n: "unknown system (known: " + ", ".join(SYSTEMS) + ")" for n in wanted
               if n not in SYSTEMS}
    wanted = [n for n in wanted if n in SYSTEMS]
    for n in list(wanted):  # every row needs its baseline in the same run
        if SYSTEMS[n][0] not in wanted:
            wanted.append(SYSTEMS[n][0])
    cannot = unavailable()
    order = []
    for n in SYSTEMS:  # catalogue order: each baseline before its rows
        if n in wanted:
            if n in cannot:
                skipped[n] = cannot[n]
            else:
                order.append(n)
    repeats = [n for n in order if SYSTEMS[n][0] == n] if REPEAT_DIRECT else []
    for n, why in skipped.items():
        print(f"skipping {n}: {why}", file=sys.stderr)

    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    message = "bench-" + "".join(alphabet[i % len(alphabet)] for i in range(max(MESSAGE_BYTES - 6, 1)))
    logdir = tempfile.mkdtemp(prefix="transport-variants-logs-")
    results = []
    started = time.time()
    keep = KEEP_LOGS
    old_term = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        for i, name in enumerate(order + repeats):
            label = name if i < len(order) else f"{name} (repeat)"
            print(f"[{time.time() - started:6.1f}s] measuring {label} ...", file=sys.stderr, flush=True)
            r = measure(name, SUT_CPUS, logdir, message)
            r["label"] = label
            if r.get("error"):
                print(f"    failed: {r['error'].splitlines()[0]}", file=sys.stderr, flush=True)
            results.append(r)
        report = {
            "meta": {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                     "host": platform.node(), "kernel": platform.release(), "cpus": len(cpus),
                     "load_cpus": LOAD_CPUS, "sut_cpus": SUT_CPUS, "duration_s": DURATION,
                     "warmup_s": WARMUP, "concurrency": CONCURRENCY,
                     "message_bytes": len(message), "muster": MUSTER,
                     "total_s": round(time.time() - started, 1)},
            "baselines": {str(c): baselines(results, c) for c in CONCURRENCY},
            "systems": results,
            "skipped": skipped,
        }
        failed = any(r.get("error") or any(run.get("failed") or run.get("error")
                                           for run in r.get("runs", [])) for r in results)
        keep = keep or failed
        report["meta"]["logs"] = logdir if keep else None
        print(summary(report))
        if os.environ.get("JSON_OUT"):
            with open(os.environ["JSON_OUT"], "w") as f:
                json.dump(report, f, indent=2)
            print(f"\nwrote {os.environ['JSON_OUT']}")
        print(f"\ntotal {report['meta']['total_s']}s" +
              (f"; logs kept in {logdir}" if keep else ""))
        return 1 if failed else 0
    except BaseException:
        keep = True
        print(f"\naborted; logs kept in {logdir}", file=sys.stderr)
        raise
    finally:
        for p in list(LIVE):
            p.stop()
        signal.signal(signal.SIGTERM, old_term)
        if not keep:
            shutil.rmtree(logdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
