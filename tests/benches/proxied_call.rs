//! The latency muster adds to a tool call: one `echo` call to server-everything over
//! streamable HTTP, made directly and through `muster serve`, in one run, with one loopback
//! HTTP round trip as the yardstick.
//!
//! ```text
//! direct      client ──HTTP──▶ server-everything /mcp            tools/call echo
//! proxied     client ──HTTP──▶ muster /mcp ──HTTP──▶ server-everything /mcp
//!                              tools/call call_tool {name: x_everything_echo}
//! loopback    client ──HTTP──▶ muster /health                    GET
//! direct-old  as direct, on a 2025-06-18 session                  (for reference)
//! ```
//!
//! Every route uses the same lean blocking HTTP/1.1 client (one keep-alive TCP connection
//! per route, `TCP_NODELAY`, no runtime or thread hop), so the client's own cost is the same
//! on every route and as small as it gets. A sample is the time from writing the request to
//! having read the whole response body; every reply is checked outside the timed span. The
//! routes take turns in blocks, the first route of a turn rotating, so that drift (CPU
//! frequency, other load) lands on all of them alike.
//!
//! The added latency is proxied − direct, per percentile, with both sessions on the protocol
//! version muster's own backend session uses ([`PROTOCOL`]). The target: the added p50 is at
//! most one loopback round trip (the `/health` p50). The report also gives the CPU time muster
//! and the backend spend per call (all their threads, from `/proc`), which tells muster's own
//! work apart from waiting.
//!
//! Run: `cargo bench -p muster-tests --bench proxied_call`. It needs server-everything from
//! `$MUSTER_TEST_DEPS` (see `muster_tests::deps`) and runs the `muster` binary
//! `muster_tests::muster_bin` picks: for figures worth comparing, build it in release first
//! (`cargo build --release -p muster-bin`), which this bench then finds beside itself in
//! `target/release/` while it is newer than the sources, or name it with `MUSTER_BIN`.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use muster_tests::{
    Envelope, HANDSHAKE_PROTOCOL_VERSION, McpClient, MusterConfig, ProcessId, deps, jsonrpc_result,
    muster_bin,
};
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use tokio::time::Instant;

/// Unmeasured calls per route before the measured ones.
const WARMUP: usize = 200;
/// Measured calls per route.
const CALLS: usize = 2000;
/// Calls per route in one turn; the routes take turns until every route has its calls.
const BLOCK: usize = 100;
/// The message echoed.
const MESSAGE: &str = "hi";
/// The protocol version of the measured sessions: the newest of the `initialize` handshake,
/// the one muster's backend client settles on with server-everything (which does not speak
/// 2026-07-28). server-everything answers sessions of older versions faster (it sends no SSE
/// priming event then), so the direct call must use the version of muster's own session with
/// the backend to be the yardstick of the proxied one.
const PROTOCOL: &str = "2025-11-25";
/// How long the backend may take to accept its first session.
const BACKEND_READY: Duration = Duration::from_secs(30);
/// Read and write timeout of one request.
const IO_TIMEOUT: Duration = Duration::from_secs(30);

fn main() -> anyhow::Result<()> {
    let binary = muster_bin()?;
    let mut backend = Backend::start()?;
    let direct = backend.wait_ready()?;
    let server = direct.server.clone();

    let dir = MusterConfig::new()
        .file("mcpservers/everything.yaml", backend.definition())
        .expect_tool("x_everything_echo")
        .write()?;
    let muster = dir.start()?;
    let muster_addr = SocketAddr::from(([127, 0, 0, 1], dir.port()));

    // The harness's own client first: the setup answers as the end-to-end tests expect.
    let echoed = muster
        .client()?
        .call("x_everything_echo", json!({"message": MESSAGE}))?;
    ensure!(
        !echoed.is_error && echoed.text() == format!("Echo: {MESSAGE}"),
        "muster answered {}",
        echoed.raw
    );
    let answered =
        McpClient::connect(&backend.mcp_url())?.call_tool("echo", json!({"message": MESSAGE}))?;
    ensure!(
        echo_text(&answered) == Some(format!("Echo: {MESSAGE}")),
        "backend answered {answered}"
    );

    let proxied = McpSession::connect(muster_addr, "/mcp", PROTOCOL)?;
    let older = McpSession::connect(backend.addr(), "/mcp", HANDSHAKE_PROTOCOL_VERSION)?;
    let health = Http::new(muster_addr);
    let mut routes = [
        Route::new("direct", "tools/call echo", Probe::Direct(direct)),
        Route::new(
            "proxied",
            "tools/call call_tool x_everything_echo",
            Probe::Proxied(proxied),
        ),
        Route::new("loopback", "GET /health on muster", Probe::Health(health)),
        Route::new(
            "direct-old",
            "tools/call echo, 2025-06-18 session",
            Probe::Direct(older),
        ),
    ];

    let servers = [muster.pid(), backend.child.id()];
    run(&mut routes, servers, WARMUP, false)?;
    run(&mut routes, servers, CALLS, true)?;

    report(&binary, server.as_deref(), &routes);
    drop(muster);
    Ok(())
}

/// `n` calls per route, the routes taking turns in blocks of [`BLOCK`], the first route of a
/// turn rotating. The CPU time the `servers` (muster, the backend) spend during a block is
/// charged to its route.
fn run(routes: &mut [Route], servers: [u32; 2], n: usize, measured: bool) -> anyhow::Result<()> {
    let mut done = 0;
    let mut turn = 0;
    while done < n {
        let block = BLOCK.min(n - done);
        for k in 0..routes.len() {
            let i = (turn + k) % routes.len();
            let route = &mut routes[i];
            let before = servers.map(thread_cpu);
            for _ in 0..block {
                let elapsed = route
                    .probe
                    .once()
                    .with_context(|| format!("{} call failed", route.name))?;
                if measured {
                    route.samples.push(elapsed);
                }
            }
            if measured {
                let after = servers.map(thread_cpu);
                for (k, (before, after)) in before.iter().zip(&after).enumerate() {
                    route.cpu[k] += cpu_spent(before, after);
                }
            }
        }
        done += block;
        turn += 1;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The routes.

/// One measured route.
struct Route {
    name: &'static str,
    what: &'static str,
    probe: Probe,
    samples: Vec<Duration>,
    /// CPU time muster and the backend spent during this route's measured blocks.
    cpu: [Duration; 2],
}

impl Route {
    fn new(name: &'static str, what: &'static str, probe: Probe) -> Self {
        Self {
            name,
            what,
            probe,
            samples: Vec::with_capacity(CALLS),
            cpu: [Duration::ZERO; 2],
        }
    }

    fn stats(&self) -> Stats {
        Stats::of(&self.samples)
    }

    /// CPU time per measured call of muster and of the backend.
    fn cpu_per_call(&self) -> [Duration; 2] {
        let calls = u32::try_from(self.samples.len().max(1)).unwrap_or(u32::MAX);
        self.cpu.map(|c| c / calls)
    }

    fn connections(&self) -> usize {
        match &self.probe {
            Probe::Direct(s) => s.http.connections,
            Probe::Proxied(s) => s.http.connections,
            Probe::Health(h) => h.connections,
        }
    }
}

enum Probe {
    Direct(McpSession),
    Proxied(McpSession),
    Health(Http),
}

impl Probe {
    /// One timed round trip, its reply checked after the clock stopped.
    fn once(&mut self) -> anyhow::Result<Duration> {
        match self {
            Self::Direct(session) => {
                let (id, request) = session.request(
                    "tools/call",
                    &json!({"name": "echo", "arguments": {"message": MESSAGE}}),
                );
                let (elapsed, reply) = session.http.timed(&request)?;
                let result = session.result(reply, id)?;
                ensure!(
                    echo_text(&result) == Some(format!("Echo: {MESSAGE}")),
                    "echo answered {result}"
                );
                Ok(elapsed)
            }
            Self::Proxied(session) => {
                let params = json!({
                    "name": "call_tool",
                    "arguments": {"name": "x_everything_echo", "arguments": {"message": MESSAGE}},
                });
                let (id, request) = session.request("tools/call", &params);
                let (elapsed, reply) = session.http.timed(&request)?;
                let result = session.result(reply, id)?;
                let envelope = Envelope::from_call_tool_result(&result)?;
                ensure!(
                    !envelope.is_error && envelope.text() == format!("Echo: {MESSAGE}"),
                    "call_tool answered {}",
                    envelope.raw
                );
                Ok(elapsed)
            }
            Self::Health(http) => {
                let request = http.get("/health");
                let (elapsed, reply) = http.timed(&request)?;
                ensure!(reply.status == 200, "/health answered {}", reply.status);
                Ok(elapsed)
            }
        }
    }
}

fn echo_text(result: &Value) -> Option<String> {
    result["content"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "text")?["text"]
        .as_str()
        .map(str::to_owned)
}

// ---------------------------------------------------------------------------------------
// The backend: server-everything over streamable HTTP.

/// `mcp-server-everything streamableHttp` on a free loopback port, killed when dropped.
struct Backend {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Backend {
    fn start() -> anyhow::Result<Self> {
        let program = deps::server_everything()?;
        let port = free_port()?;
        let dir = tempfile::Builder::new()
            .prefix("muster-bench-")
            .tempdir()
            .context("cannot create a temporary directory")?;
        let log = dir.path().join("everything.log");
        let out = File::create(&log).context("cannot create the backend log")?;
        let err = out.try_clone().context("cannot share the backend log")?;
        let child = Command::new(&program)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {}", program.display()))?;
        Ok(Self {
            child,
            port,
            log,
            _dir: dir,
        })
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn mcp_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Its MCPServer definition (JSON is YAML).
    fn definition(&self) -> String {
        json!({
            "apiVersion": "muster.giantswarm.io/v1alpha1",
            "kind": "MCPServer",
            "metadata": {"name": "everything"},
            "spec": {"type": "streamable-http", "url": self.mcp_url(), "autoStart": true},
        })
        .to_string()
    }

    /// Waits until it accepts a session, and returns that session.
    fn wait_ready(&mut self) -> anyhow::Result<McpSession> {
        let deadline = Instant::now() + BACKEND_READY;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "server-everything exited ({status}); its log:\n{}",
                    self.log()
                );
            }
            match McpSession::connect(self.addr(), "/mcp", PROTOCOL) {
                Ok(session) => return Ok(session),
                Err(e) if Instant::now() >= deadline => {
                    bail!(
                        "server-everything not ready: {e:#}; its log:\n{}",
                        self.log()
                    )
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        // It leads its own process group: whatever it started goes with it.
        if let Some(process) = ProcessId::of(self.child.id()) {
            process.signal_group(Signal::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// A port that was free a moment ago.
fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("no free port")?;
    Ok(listener.local_addr().context("no local address")?.port())
}

// ---------------------------------------------------------------------------------------
// A lean blocking HTTP/1.1 client and an MCP session on it.

/// One response.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One keep-alive HTTP/1.1 connection to `addr`, opened again when the server closes it.
struct Http {
    addr: SocketAddr,
    conn: Option<BufReader<TcpStream>>,
    /// Connections opened so far: 1 when keep-alive held throughout.
    connections: usize,
}

impl Http {
    fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            conn: None,
            connections: 0,
        }
    }

    fn get(&self, path: &str) -> Vec<u8> {
        format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", self.addr).into_bytes()
    }

    fn post(&self, path: &str, headers: &str, body: &[u8]) -> Vec<u8> {
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        request
    }

    /// Sends `request` and reads the whole response, timed.
    fn timed(&mut self, request: &[u8]) -> anyhow::Result<(Duration, Reply)> {
        let started = Instant::now();
        let reply = self.send(request)?;
        Ok((started.elapsed(), reply))
    }

    fn send(&mut self, request: &[u8]) -> anyhow::Result<Reply> {
        let reused = self.conn.is_some();
        match self.try_send(request) {
            Ok(reply) => Ok(reply),
            // The server closed an idle connection: once more on a new one.
            Err(e) if reused && e.downcast_ref::<Closed>().is_some() => {
                self.conn = None;
                self.try_send(request)
            }
            Err(e) => {
                self.conn = None;
                Err(e)
            }
        }
    }

    fn try_send(&mut self, request: &[u8]) -> anyhow::Result<Reply> {
        if self.conn.is_none() {
            let stream = TcpStream::connect(self.addr)
                .with_context(|| format!("cannot connect to {}", self.addr))?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(IO_TIMEOUT))?;
            stream.set_write_timeout(Some(IO_TIMEOUT))?;
            self.conn = Some(BufReader::with_capacity(64 * 1024, stream));
            self.connections += 1;
        }
        let conn = self.conn.as_mut().context("no connection")?;
        if conn.get_mut().write_all(request).is_err() {
            return Err(Closed.into());
        }
        let (reply, keep) = read_response(conn)?;
        if !keep {
            self.conn = None;
        }
        Ok(reply)
    }
}

/// The connection was closed before a response began.
#[derive(Debug)]
struct Closed;

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("connection closed before the response")
    }
}

impl std::error::Error for Closed {}

/// Reads one response; the flag tells whether the connection can carry another.
fn read_response(conn: &mut BufReader<TcpStream>) -> anyhow::Result<(Reply, bool)> {
    let mut line = String::new();
    if conn.read_line(&mut line).unwrap_or(0) == 0 {
        return Err(Closed.into());
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("not an HTTP status line: {line:?}"))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        conn.read_line(&mut line)?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header
            .split_once(':')
            .with_context(|| format!("not a header: {header:?}"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut reply = Reply {
        status,
        headers,
        body: Vec::new(),
    };
    let mut keep = !reply
        .header("connection")
        .is_some_and(|v| v.eq_ignore_ascii_case("close"));
    if status == 204 || status == 304 || (100..200).contains(&status) {
        // No body.
    } else if reply
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        reply.body = read_chunked(conn)?;
    } else if let Some(length) = reply.header("content-length") {
        let length: usize = length.parse().context("bad content-length")?;
        reply.body.resize(length, 0);
        conn.read_exact(&mut reply.body)?;
    } else {
        conn.read_to_end(&mut reply.body)?;
        keep = false;
    }
    Ok((reply, keep))
}

fn read_chunked(conn: &mut BufReader<TcpStream>) -> anyhow::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        conn.read_line(&mut line)?;
        let size = line.trim_end().split(';').next().unwrap_or_default().trim();
        let size =
            usize::from_str_radix(size, 16).with_context(|| format!("bad chunk size {line:?}"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                line.clear();
                conn.read_line(&mut line)?;
                if line.trim_end().is_empty() {
                    return Ok(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        conn.read_exact(&mut body[start..])?;
        let mut crlf = [0_u8; 2];
        conn.read_exact(&mut crlf)?;
    }
}

/// An initialized MCP session over [`Http`].
struct McpSession {
    http: Http,
    path: &'static str,
    /// The protocol version asked for, and agreed to.
    protocol: &'static str,
    session: Option<String>,
    next_id: u64,
    /// `name version` from the server's `initialize` answer.
    server: Option<String>,
}

impl McpSession {
    /// `initialize`, then `notifications/initialized`.
    fn connect(
        addr: SocketAddr,
        path: &'static str,
        protocol: &'static str,
    ) -> anyhow::Result<Self> {
        let mut session = Self {
            http: Http::new(addr),
            path,
            protocol,
            session: None,
            next_id: 0,
            server: None,
        };
        let params = json!({
            "protocolVersion": protocol,
            "capabilities": {},
            "clientInfo": {"name": "muster-bench", "version": "0"},
        });
        let (id, request) = session.request("initialize", &params);
        let reply = session.http.send(&request)?;
        session.session = reply.header("mcp-session-id").map(str::to_owned);
        let init = session.result(reply, id)?;
        ensure!(
            init["protocolVersion"] == protocol,
            "initialize answered another protocol version than {protocol}: {init}"
        );
        let info = &init["serverInfo"];
        session.server = info["name"]
            .as_str()
            .map(|name| format!("{name} {}", info["version"].as_str().unwrap_or("?")));
        let note =
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        let request = session.http.post(path, &session.headers(), &note);
        let reply = session.http.send(&request)?;
        ensure!(
            (200..300).contains(&reply.status),
            "notifications/initialized answered {}",
            reply.status
        );
        Ok(session)
    }

    fn headers(&self) -> String {
        self.session.as_ref().map_or_else(String::new, |s| {
            format!(
                "Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: {}\r\n",
                self.protocol
            )
        })
    }

    /// The bytes of the request `method`, and its id.
    fn request(&mut self, method: &str, params: &Value) -> (u64, Vec<u8>) {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let body = serde_json::to_vec(&body).unwrap_or_default();
        (id, self.http.post(self.path, &self.headers(), &body))
    }

    /// The JSON-RPC result for request `id` in `reply`, a JSON body or an SSE stream.
    fn result(&self, reply: Reply, id: u64) -> anyhow::Result<Value> {
        let body = String::from_utf8(reply.body).context("response is not UTF-8")?;
        ensure!(
            (200..300).contains(&reply.status),
            "HTTP {}: {body}",
            reply.status
        );
        let is_sse = reply
            .headers
            .iter()
            .any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream"));
        jsonrpc_result(&body, is_sse, id)
    }
}

// ---------------------------------------------------------------------------------------
// CPU time of the servers.

/// Nanoseconds on CPU of each thread of `pid`, from `/proc/<pid>/task/*/schedstat`.
fn thread_cpu(pid: u32) -> HashMap<u32, u64> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return HashMap::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let tid = task.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            Some((tid, stat.split_whitespace().next()?.parse().ok()?))
        })
        .collect()
}

/// The CPU time spent between two [`thread_cpu`] readings, by the threads alive at the second
/// (a thread that ended in between is not counted; one that started is counted whole).
fn cpu_spent(before: &HashMap<u32, u64>, after: &HashMap<u32, u64>) -> Duration {
    let ns = after
        .iter()
        .map(|(tid, &ns)| ns.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum();
    Duration::from_nanos(ns)
}

// ---------------------------------------------------------------------------------------
// Statistics and the report.

#[derive(Debug, Clone, Copy)]
struct Stats {
    p50: Duration,
    p90: Duration,
    p99: Duration,
    mean: Duration,
    min: Duration,
    max: Duration,
}

impl Stats {
    fn of(samples: &[Duration]) -> Self {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        // Nearest rank.
        let rank = |p: f64| {
            let n = sorted.len() as f64;
            let i = ((p * n).ceil() as usize).clamp(1, sorted.len()) - 1;
            sorted[i]
        };
        let total: Duration = sorted.iter().sum();
        Self {
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            mean: total / u32::try_from(sorted.len().max(1)).unwrap_or(u32::MAX),
            min: sorted.first().copied().unwrap_or_default(),
            max: sorted.last().copied().unwrap_or_default(),
        }
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn diff(a: Duration, b: Duration) -> f64 {
    us(a) - us(b)
}

fn report(binary: &Path, backend: Option<&str>, routes: &[Route; 4]) {
    let [direct, proxied, loopback, older] = routes.each_ref().map(Route::stats);
    let profile = binary
        .parent()
        .and_then(Path::file_name)
        .and_then(|p| p.to_str())
        .unwrap_or("?");
    println!();
    println!(
        "proxied_call: {CALLS} measured calls per route after {WARMUP} warm-up calls, \
         the routes taking turns in blocks of {BLOCK}"
    );
    println!("muster:   {} ({profile})", binary.display());
    println!(
        "backend:  {} over streamable HTTP",
        backend.unwrap_or("server-everything")
    );
    println!("sessions: protocol {PROTOCOL} unless noted");
    println!();
    println!(
        "{:<11} {:<37} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "route", "request", "p50 µs", "p90 µs", "p99 µs", "mean µs", "min µs", "max µs"
    );
    for (route, s) in routes.iter().zip([&direct, &proxied, &loopback, &older]) {
        println!(
            "{:<11} {:<37} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
            route.name,
            route.what,
            us(s.p50),
            us(s.p90),
            us(s.p99),
            us(s.mean),
            us(s.min),
            us(s.max)
        );
    }
    println!();
    println!(
        "added by muster (proxied − direct, per percentile): p50 {:+.1} µs  p90 {:+.1} µs  \
         p99 {:+.1} µs  mean {:+.1} µs",
        diff(proxied.p50, direct.p50),
        diff(proxied.p90, direct.p90),
        diff(proxied.p99, direct.p99),
        diff(proxied.mean, direct.mean)
    );
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!(
        "proxied / direct: p50 {:.2}×  p90 {:.2}×  p99 {:.2}×",
        ratio(proxied.p50, direct.p50),
        ratio(proxied.p90, direct.p90),
        ratio(proxied.p99, direct.p99)
    );
    let added = diff(proxied.p50, direct.p50);
    let round_trip = us(loopback.p50);
    println!(
        "added p50 in loopback round trips: {:.2} ({added:.1} µs / {round_trip:.1} µs); \
         target ≤ 1: {}",
        added / round_trip,
        if added <= round_trip {
            "met"
        } else {
            "not met"
        }
    );
    println!(
        "backend, {PROTOCOL} session vs {HANDSHAKE_PROTOCOL_VERSION} session: p50 {:+.1} µs",
        diff(direct.p50, older.p50)
    );
    println!();
    println!("server CPU time per call (all threads, during each route's blocks):");
    for route in routes {
        let [muster, backend] = route.cpu_per_call();
        println!(
            "  {:<11} muster {:>7.1} µs   backend {:>7.1} µs",
            route.name,
            us(muster),
            us(backend)
        );
    }
    let connections: Vec<String> = routes
        .iter()
        .map(|r| format!("{} {}", r.name, r.connections()))
        .collect();
    println!("TCP connections opened: {}", connections.join(", "));
}
