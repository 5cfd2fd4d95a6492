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
        let mut command = tokio::process::Command::new(everything_bin());
        command.arg(mode);
        let child = serve_on(command, port).await;
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

/// `command` started as a server on `port` (its `PORT`), silent and killed on drop, once
/// the port accepts connections.
pub(crate) async fn serve_on(
    mut command: tokio::process::Command,
    port: u16,
) -> tokio::process::Child {
    let child = command
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_for_port(port).await;
    child
}

/// The Python server of the fixtures over `transport` (`sse` or `streamable-http`) on
/// `port`, its streamable-HTTP replies JSON when `json_response`; killed on drop.
pub(crate) async fn py_remote(
    transport: &str,
    port: u16,
    json_response: bool,
) -> tokio::process::Child {
    let mut command = tokio::process::Command::new(python());
    command
        .arg(py_server_script())
        .arg(transport)
        .env("JSON_RESPONSE", if json_response { "1" } else { "0" });
    serve_on(command, port).await
}

/// What `call` on `backend` returns when its caller cancels it after 300 ms (within 5 s).
pub(crate) async fn cancelled_after_300ms(
    backend: &Backend,
    call: muster_core::tool::ToolCall,
) -> Result<rmcp::model::CallToolResult, muster_core::tool::ToolError> {
    use muster_core::tool::ToolProvider;
    use tower::ServiceExt;

    let cancellation = tokio_util::sync::CancellationToken::new();
    let context = CallContext {
        cancellation: cancellation.clone(),
        ..CallContext::anonymous()
    };
    let pending = backend.service().oneshot(call.with_context(context));
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancellation.cancel();
    };
    let (result, ()) = tokio::time::timeout(Duration::from_secs(5), async {
        tokio::join!(pending, canceller)
    })
    .await
    .unwrap();
    result
}

/// Checks that a call cancelled by its caller, and one its caller drops, are cancelled on
/// the server of `backend` (the fixture's `wait_for_cancel` and `cancellations` tools).
pub(crate) async fn cancellation_reaches_the_server(backend: &Backend) {
    use muster_core::tool::{ToolError, ToolProvider};
    use tower::ServiceExt;

    let result = cancelled_after_300ms(
        backend,
        call("wait_for_cancel", serde_json::json!({"seconds": 30})),
    )
    .await;
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    // A caller that drops the call (a budget ran out, the client hung up) cancels it too.
    let dropped = backend
        .service()
        .oneshot(call("wait_for_cancel", serde_json::json!({"seconds": 30})));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), dropped)
            .await
            .is_err()
    );
    let mut count = String::new();
    for _ in 0..100 {
        let result = backend
            .service()
            .oneshot(call("cancellations", serde_json::json!({})))
            .await
            .unwrap();
        count = first_text(&result);
        if count == "2" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count, "2");
}

/// A started backend named `py` of `spec`, in the server's 2026-07-28 era or, with
/// `initialize`, in a 2025 session.
pub(crate) async fn started_py(spec: McpServerSpec, initialize: bool) -> Backend {
    use muster_aggregator::backend::ProtocolMode;
    let protocol = if initialize {
        ProtocolMode::Initialize
    } else {
        ProtocolMode::Discover
    };
    let backend = Backend::new("py", spec, options().with_protocol(protocol));
    backend.start().await.unwrap();
    backend
}

/// The first text of what `backend` answers `call` with.
pub(crate) async fn text_of(backend: &Backend, call: ToolCall) -> String {
    use muster_core::tool::ToolProvider;
    use tower::ServiceExt;

    first_text(&backend.service().oneshot(call).await.unwrap())
}

/// Checks the plain calls of a backend of the fixture's Python server on the lean hop: the
/// server sees muster's own request ids, answers, and refuses bad arguments.
pub(crate) async fn lean_calls_answer(backend: &Backend) {
    use muster_core::tool::{ToolError, ToolProvider};
    use tower::ServiceExt;

    let id = text_of(backend, call("request_id", serde_json::json!({}))).await;
    assert!(
        id.starts_with("muster-"),
        "{id} {:?}",
        backend.snapshot().protocol_version
    );
    assert_eq!(
        text_of(backend, call("add", serde_json::json!({"a": 20, "b": 22}))).await,
        "42"
    );
    let result = backend
        .service()
        .oneshot(call("add", serde_json::json!({"a": "x", "b": 1})))
        .await;
    assert!(
        matches!(&result, Ok(r) if r.is_error == Some(true))
            || matches!(&result, Err(ToolError::InvalidArguments { .. })),
        "{result:?}"
    );
}

/// Checks, on a backend of the fixture's Python server in a 2025 session (where it asks for
/// roots), that a call whose caller can be asked takes rmcp's path and has the server's
/// `roots/list` relayed to the caller, and that without such a caller the request is
/// answered with no roots.
#[allow(
    deprecated,
    reason = "roots are deprecated by SEP-2577 but still sent by servers"
)]
pub(crate) async fn askable_callers_take_the_clients_path(backend: &Backend) {
    use muster_core::tool::CallerChannel;

    let asked = || CallContext {
        caller_requests: Some(CallerChannel::new(RootsCaller)),
        ..CallContext::anonymous()
    };
    let id = text_of(
        backend,
        call("request_id", serde_json::json!({})).with_context(asked()),
    )
    .await;
    assert!(!id.starts_with("muster-"), "{id}");
    let roots = text_of(
        backend,
        call("roots", serde_json::json!({})).with_context(asked()),
    )
    .await;
    assert_eq!(roots, "file:///caller-root");
    assert_eq!(
        text_of(backend, call("roots", serde_json::json!({}))).await,
        ""
    );
}
