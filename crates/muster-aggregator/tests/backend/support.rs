//! Shared helpers: where the test servers are, free ports, waiting, process checks.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use muster_aggregator::backend::{Backend, BackendOptions, BackendSnapshot};
use muster_core::resource::mcp_server::{
    McpServerSpec, RemoteTransport, StdioTransport, Transport,
};
use muster_core::tool::{CallContext, ProgressSink, ProgressUpdate, ToolCall};
use serde_json::Value;

/// The directory with `node_modules/.bin/mcp-server-everything` and `venv/bin/python`.
pub(crate) fn deps() -> PathBuf {
    let dir = std::env::var_os("MUSTER_TEST_DEPS").map_or_else(
        || {
            std::env::var_os("HOME")
                .map_or_else(|| PathBuf::from("."), PathBuf::from)
                .join(".cache/muster-test-deps")
        },
        PathBuf::from,
    );
    let everything = dir.join("node_modules/.bin/mcp-server-everything");
    let python = dir.join("venv/bin/python");
    assert!(
        everything.exists() && python.exists(),
        "test servers missing in {}: run crates/muster-aggregator/tests/fixtures/install-test-deps.sh {} \
         (or set MUSTER_TEST_DEPS to a directory prepared by it)",
        dir.display(),
        dir.display()
    );
    dir
}

pub(crate) fn everything_bin() -> String {
    deps()
        .join("node_modules/.bin/mcp-server-everything")
        .display()
        .to_string()
}

pub(crate) fn python() -> String {
    deps().join("venv/bin/python").display().to_string()
}

pub(crate) fn py_server_script() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/py_server.py").to_owned()
}

/// Options for tests: no health probe unless asked for.
pub(crate) fn options() -> BackendOptions {
    BackendOptions::default().with_health_interval(None)
}

pub(crate) fn stdio_spec(command: &str, args: &[&str]) -> McpServerSpec {
    McpServerSpec::with_transport(Transport::Stdio(StdioTransport {
        command: command.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: BTreeMap::new(),
    }))
}

pub(crate) fn everything_stdio() -> McpServerSpec {
    stdio_spec(&everything_bin(), &["stdio"])
}

pub(crate) fn py_stdio() -> McpServerSpec {
    stdio_spec(&python(), &[&py_server_script()])
}

/// Starts the Python server of `backend`, whose short `timeout` also bounds the start: on a
/// loaded machine the interpreter may need longer to load than the call budget a test
/// checks, so a start that timed out is tried again (twice at most).
pub(crate) async fn start_python(backend: &muster_aggregator::backend::Backend) {
    for attempt in 1..=3 {
        match backend.start().await {
            Ok(_) => return,
            Err(e) if attempt < 3 && e.to_string().contains("timed out") => {
                backend.stop().await;
            }
            Err(e) => panic!("the Python server did not start: {e:?}"),
        }
    }
}

pub(crate) fn remote(url: String) -> RemoteTransport {
    RemoteTransport {
        url,
        ..RemoteTransport::default()
    }
}

pub(crate) fn sse_spec(url: String) -> McpServerSpec {
    McpServerSpec::with_transport(Transport::Sse(remote(url)))
}

pub(crate) fn http_spec(url: String) -> McpServerSpec {
    McpServerSpec::with_transport(Transport::StreamableHttp(remote(url)))
}

pub(crate) fn args(v: Value) -> Option<serde_json::Map<String, Value>> {
    v.as_object().cloned()
}

pub(crate) fn call(name: &str, v: Value) -> ToolCall {
    ToolCall::new(name, args(v))
}

/// A call whose progress lands in the returned list.
pub(crate) fn call_with_progress(
    name: &str,
    v: Value,
) -> (ToolCall, Arc<Mutex<Vec<ProgressUpdate>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let context = CallContext {
        progress: Some(ProgressSink::new(move |u| {
            sink_seen.lock().unwrap().push(u)
        })),
        ..CallContext::anonymous()
    };
    (call(name, v).with_context(context), seen)
}

/// The text of the first content block.
pub(crate) fn first_text(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// A port nobody listens on (right now).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts connections on `port`.
pub(crate) async fn wait_for_port(port: u16) {
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing listens on port {port}");
}

/// Waits until the backend's snapshot satisfies `pred`.
pub(crate) async fn wait_until(
    backend: &Backend,
    what: &str,
    pred: impl Fn(&BackendSnapshot) -> bool,
) -> BackendSnapshot {
    wait_until_for(backend, what, Duration::from_secs(30), pred).await
}

/// Like [`wait_until`] with a deadline of `limit` (tokio time).
pub(crate) async fn wait_until_for(
    backend: &Backend,
    what: &str,
    limit: Duration,
    pred: impl Fn(&BackendSnapshot) -> bool,
) -> BackendSnapshot {
    let mut changes = backend.changes();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let snapshot = backend.snapshot();
        if pred(&snapshot) {
            return snapshot;
        }
        if tokio::time::timeout_at(deadline, changes.changed())
            .await
            .is_err()
        {
            panic!("timed out waiting for {what}; last snapshot: {snapshot:#?}");
        }
    }
}

/// A server-everything in an HTTP mode on a free port, killed on drop.
pub(crate) struct EverythingHttp {
    pub(crate) port: u16,
    _child: tokio::process::Child,
}

impl EverythingHttp {
    pub(crate) async fn start(mode: &str) -> Self {
        Self::start_on(mode, free_port()).await
    }

    pub(crate) async fn start_on(mode: &str, port: u16) -> Self {
        let child = tokio::process::Command::new(everything_bin())
            .arg(mode)
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        wait_for_port(port).await;
        Self {
            port,
            _child: child,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// Whether a process runs (exists and is no zombie).
pub(crate) fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start())
            .is_some_and(|rest| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Whether a process id is gone entirely (reaped).
pub(crate) fn reaped(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits up to 5 s for `pred`.
pub(crate) async fn eventually(what: &str, pred: impl Fn() -> bool) {
    for _ in 0..100 {
        if pred() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

/// A caller that answers roots/list with one root and refuses the rest.
pub(crate) struct RootsCaller;

#[allow(
    deprecated,
    reason = "roots and sampling are still sent by 2025-11-25 servers"
)]
impl muster_core::tool::CallerRequests for RootsCaller {
    fn create_message(
        &self,
        _: rmcp::model::CreateMessageRequestParams,
    ) -> futures::future::BoxFuture<
        'static,
        Result<rmcp::model::CreateMessageResult, rmcp::model::ErrorData>,
    > {
        Box::pin(std::future::ready(Err(
            rmcp::model::ErrorData::internal_error("not asked in this test", None),
        )))
    }

    fn create_elicitation(
        &self,
        _: rmcp::model::ElicitRequestParams,
    ) -> futures::future::BoxFuture<
        'static,
        Result<rmcp::model::ElicitResult, rmcp::model::ErrorData>,
    > {
        Box::pin(std::future::ready(Err(
            rmcp::model::ErrorData::internal_error("not asked in this test", None),
        )))
    }

    fn list_roots(
        &self,
    ) -> futures::future::BoxFuture<
        'static,
        Result<rmcp::model::ListRootsResult, rmcp::model::ErrorData>,
    > {
        let roots = vec![rmcp::model::Root::new("file:///caller-root")];
        Box::pin(std::future::ready(Ok(rmcp::model::ListRootsResult::new(
            roots,
        ))))
    }
}
