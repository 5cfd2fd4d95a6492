#!/usr/bin/env python3
"""Memory of MCP sessions in `muster serve`: RSS at rest, with N sessions open (live, then
parked after their idle period), and after all of them are deleted.

    MUSTER_BIN=target/release/muster python3 tests/benches/session_memory.py [N]

Starts muster on a free loopback port with an empty config directory, opens N streamable
HTTP sessions (initialize + notifications/initialized, protocol 2025-06-18) over a few
keep-alive connections, reads muster's RSS from /proc, waits until the sessions are parked
(30 s without traffic), reads it again, deletes every session and reads it again (2 s
after, and once more when RSS has not fallen for QUIET seconds, default 10, or after SETTLE
seconds, default 90: the allocator hands freed memory back to the system over some 10 to
30 s); then opens and deletes N sessions a second time, which tells memory the allocator
keeps for reuse from memory that leaks. Settled readings are split into heap and other
anonymous memory (RssAnon) and pages of the binary and libraries (RssFile): the first
session touches code no request at rest had run, and those pages stay resident.
Python standard library only; Linux only (RSS from /proc/PID/status).

A session runs no worker until a request needs one. LIST_TOOLS=1 makes every session also
send `tools/list`, as most clients do after the handshake; STREAMS=1 makes it open its
`GET` stream on a connection of its own and hold it open until the session is deleted, as
the Python and TypeScript SDKs do (use an N within the open-file limit). ASKS=1 makes the
clients declare the sampling capability: muster serves their sessions through rmcp's
worker from the handshake on, stream included, which gives the figures of sessions with a
worker in the same run conditions.
"""

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
# Seconds to wait for parking: the default park period is 30 s, the reaper runs every 7.5 s.
PARK_WAIT = float(os.environ.get("PARK_WAIT", "40"))
# Each session also sends `tools/list`.
LIST_TOOLS = os.environ.get("LIST_TOOLS", "0") == "1"
# Each session also holds its GET stream open.
STREAMS = os.environ.get("STREAMS", "0") == "1"
# The clients declare the sampling capability.
ASKS = os.environ.get("ASKS", "0") == "1"
# Most seconds to wait after the deletions for RSS to settle.
SETTLE = float(os.environ.get("SETTLE", "90"))
# Seconds without a fall in RSS that count as settled.
QUIET = float(os.environ.get("QUIET", "10"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kb(pid):
    return status_kb(pid, "VmRSS")


def split_kb(pid):
    """(anonymous, file-backed) resident KB."""
    return status_kb(pid, "RssAnon"), status_kb(pid, "RssFile")


def settle(pid):
    """Waits until RSS has not fallen for QUIET seconds (at most SETTLE); returns the
    seconds waited and the (anonymous, file-backed) split then."""
    t0 = time.time()
    lowest = rss_kb(pid)
    since = t0
    while time.time() - t0 < SETTLE and time.time() - since < QUIET:
        time.sleep(1)
        now = rss_kb(pid)
        if now < lowest:
            lowest, since = now, time.time()
    return time.time() - t0, split_kb(pid)


def against(split, rest):
    anon, file = split
    return (f"{(anon + file) / 1024:.1f} MB  ({(anon + file - sum(rest)) / 1024:+.1f} MB against "
            f"rest: anonymous {(anon - rest[0]) / 1024:+.1f}, binary pages "
            f"{(file - rest[1]) / 1024:+.1f})")


def post(conn, body, session=None):
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Host": "localhost",
    }
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
    response = conn.getresponse()
    response.read()
    return response


def open_stream(port, session):
    """A socket holding the GET stream of `session` open, its response head read."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall((f"GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n"
                  f"Mcp-Session-Id: {session}\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit(f"stream of {session}: closed before its head")
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"stream of {session}: {head[:80]!r}")
    return sock


def main():
    binary = os.environ.get("MUSTER_BIN", "target/release/muster")
    port = free_port()
    config = tempfile.mkdtemp(prefix="muster-sessions-")
    with open(os.path.join(config, "config.yaml"), "w") as f:
        f.write(f"aggregator:\n  port: {port}\n  host: localhost\n"
                f"  limits:\n    maxSessions: {max(N, 1) + 10}\n"
                f"    maxConnections: {max(N, 1) + 64}\n")
    muster = subprocess.Popen([binary, "serve", "--config-path", config],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                raise SystemExit("muster did not start")
            time.sleep(0.1)
        time.sleep(1)
        rest = split_kb(muster.pid)
        start = sum(rest)
        conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(4)]
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"sampling": {}} if ASKS else {},
            "clientInfo": {"name": "session-memory", "version": "1"}}}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        list_tools = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        sessions = []
        streams = []
        t0 = time.time()
        for i in range(N):
            conn = conns[i % len(conns)]
            response = post(conn, init)
            if response.status != 200:
                raise SystemExit(f"initialize {i}: HTTP {response.status}")
            session = response.getheader("Mcp-Session-Id")
            post(conn, initialized, session)
            if LIST_TOOLS:
                post(conn, list_tools, session)
            if STREAMS:
                streams.append(open_stream(port, session))
            sessions.append(session)
        opened_in = time.time() - t0
        live = rss_kb(muster.pid)
        time.sleep(PARK_WAIT)
        parked = rss_kb(muster.pid)
        t0 = time.time()
        for i, session in enumerate(sessions):
            conn = conns[i % len(conns)]
            conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session,
                                                    "Host": "localhost"})
            conn.getresponse().read()
        closed_in = time.time() - t0
        for sock in streams:
            sock.close()
        streams.clear()
        time.sleep(2)
        after = rss_kb(muster.pid)
        settled_in, settled_split = settle(muster.pid)
        settled = sum(settled_split)
        # A second round in the same process: if RSS stays where the first left it, the
        # freed memory is reused (kept by the allocator), not leaked.
        again = []
        for i in range(N):
            conn = conns[i % len(conns)]
            response = post(conn, init)
            if response.status != 200:
                raise SystemExit(f"initialize {i} (second round): HTTP {response.status}")
            again.append(response.getheader("Mcp-Session-Id"))
            post(conn, initialized, again[-1])
            if LIST_TOOLS:
                post(conn, list_tools, again[-1])
            if STREAMS:
                streams.append(open_stream(port, again[-1]))
        second_live = rss_kb(muster.pid)
        for i, session in enumerate(again):
            conn = conns[i % len(conns)]
            conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session,
                                                    "Host": "localhost"})
            conn.getresponse().read()
        for sock in streams:
            sock.close()
        time.sleep(2)
        second_after = rss_kb(muster.pid)
        second_settled_in, second_split = settle(muster.pid)
        per = lambda kb: (kb - start) / max(N, 1)
        print(f"sessions:                {N} (opened in {opened_in:.1f} s, "
              f"deleted in {closed_in:.1f} s)")
        print(f"RSS at rest:             {start / 1024:.1f} MB  (anonymous {rest[0] / 1024:.1f}, "
              f"binary pages {rest[1] / 1024:.1f})")
        print(f"RSS, {N} live sessions: {live / 1024:.1f} MB  ({per(live):.2f} KB per session)")
        print(f"RSS, {N} parked:        {parked / 1024:.1f} MB  ({per(parked):.2f} KB per session)")
        print(f"RSS after all deleted:   {after / 1024:.1f} MB  "
              f"({(after - start) / 1024:+.1f} MB against rest)")
        print(f"  settled ({settled_in:.0f} s): {against(settled_split, rest)}")
        print(f"RSS, {N} live again:     {second_live / 1024:.1f} MB  "
              f"({(second_live - settled) / 1024:+.1f} MB against the first round's end)")
        print(f"RSS after those deleted: {second_after / 1024:.1f} MB  "
              f"({(second_after - start) / 1024:+.1f} MB against rest)")
        print(f"  settled ({second_settled_in:.0f} s): {against(second_split, rest)}")
    finally:
        muster.terminate()
        try:
            muster.wait(10)
        except subprocess.TimeoutExpired:
            muster.kill()
        shutil.rmtree(config, ignore_errors=True)


if __name__ == "__main__":
    main()
