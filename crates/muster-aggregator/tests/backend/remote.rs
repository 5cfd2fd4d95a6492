//! Remote servers: server-everything over legacy SSE and streamable HTTP, and HTTP failures
//! from a tiny axum server.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use chrono::Utc;
use muster_aggregator::backend::{
    Backend, BackendError, MemorySecrets, NO_SECRET_READER, ServiceState,
};
use muster_core::resource::ConditionStatus;
use muster_core::resource::mcp_server::{
    HeaderFrom, Health, McpServerSpec, McpServerState, SecretKeySource, Transport,
};
use muster_core::tool::ToolProvider;
use serde_json::json;
use tower::ServiceExt;

use super::support::*;

async fn exercise(backend: &Backend) {
    backend.start().await.unwrap();
    let snapshot = backend.snapshot();
    assert_eq!(snapshot.state, ServiceState::Connected);
    assert_eq!(snapshot.health, Health::Healthy);
    assert!(snapshot.last_connected.is_some());
    assert_eq!(backend.status().state, Some(McpServerState::Connected));
    assert!(backend.catalog().tool("echo").is_some());
    let result = backend
        .service()
        .oneshot(call("echo", json!({"message": "over the wire"})))
        .await
        .unwrap();
    assert_eq!(first_text(&result), "Echo: over the wire");
    let (progress_call, seen) = call_with_progress(
        "trigger-long-running-operation",
        json!({"duration": 1, "steps": 3}),
    );
    backend.service().oneshot(progress_call).await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 3);
    backend.stop().await;
    assert_eq!(backend.snapshot().state, ServiceState::Disconnected);
    assert_eq!(backend.status().state, Some(McpServerState::Disconnected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http() {
    let server = EverythingHttp::start("streamableHttp").await;
    let backend = Backend::new("everything", http_spec(server.url("/mcp")), options());
    exercise(&backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_legacy_sse() {
    let server = EverythingHttp::start("sse").await;
    let backend = Backend::new("everything", sse_spec(server.url("/sse")), options());
    exercise(&backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_server_over_streamable_http() {
    let port = free_port();
    let _child = py_remote("streamable-http", port, false).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let backend = Backend::new("py", http_spec(url), options());
    backend.start().await.unwrap();
    let result = backend
        .service()
        .oneshot(call("add", json!({"a": 20, "b": 22})))
        .await
        .unwrap();
    assert_eq!(first_text(&result), "42");
    let (progress_call, seen) =
        call_with_progress("progress", json!({"steps": 3, "interval": 0.1}));
    backend.service().oneshot(progress_call).await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 3);
    backend.stop().await;
}

/// An HTTP server answering every request with `status`; records request headers.
struct StatusServer {
    port: u16,
    seen: Arc<Mutex<Vec<HeaderMap>>>,
    task: tokio::task::JoinHandle<()>,
}

impl StatusServer {
    async fn start(status: u16, challenge: bool) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let app = axum::Router::new().fallback(move |headers: HeaderMap| {
            let record = record.clone();
            async move {
                record.lock().unwrap().push(headers);
                let mut response =
                    axum::http::Response::builder().status(StatusCode::from_u16(status).unwrap());
                if challenge {
                    response = response.header("www-authenticate", "Bearer realm=\"test\"");
                }
                response.body(axum::body::Body::from("nope")).unwrap()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { port, seen, task }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for StatusServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_401_means_auth_required_not_failure() {
    for (challenge, spec_of) in [
        (true, http_spec as fn(String) -> McpServerSpec),
        (false, http_spec),
        (true, sse_spec),
    ] {
        let server = StatusServer::start(401, challenge).await;
        let backend = Backend::new("secured", spec_of(server.url("/mcp")), options());
        let error = backend.start().await.unwrap_err();
        assert!(
            matches!(error, BackendError::AuthRequired { .. }),
            "{error:?}"
        );
        let snapshot = backend.snapshot();
        assert_eq!(snapshot.state, ServiceState::AuthRequired, "{snapshot:?}");
        assert_eq!(snapshot.consecutive_failures, 0);
        assert_eq!(snapshot.next_retry_after, None);
        assert_eq!(snapshot.last_failure_http_status, None);
        let status = backend.status();
        assert_eq!(status.state, Some(McpServerState::AuthRequired));
        let ready = &status.conditions[0];
        assert_eq!(
            (ready.status, ready.reason.as_str()),
            (ConditionStatus::True, "AuthRequired")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_fail_with_their_status_and_back_off() {
    for (status, spec_of) in [
        (404, http_spec as fn(String) -> McpServerSpec),
        (503, http_spec),
        (504, sse_spec),
        (404, sse_spec),
    ] {
        let server = StatusServer::start(status, false).await;
        let backend = Backend::new("flaky", spec_of(server.url("/mcp")), options());
        let before = Utc::now();
        let error = backend.start().await.unwrap_err();
        assert!(
            matches!(error, BackendError::Connect { http_status: Some(s), retry_scheduled: true, .. } if s == status),
            "{status}: {error:?}"
        );
        let snapshot = backend.snapshot();
        assert_eq!(snapshot.state, ServiceState::Failed, "{status}");
        assert_eq!(snapshot.last_failure_http_status, Some(status));
        assert_eq!(snapshot.consecutive_failures, 1);
        let next = snapshot.next_retry_after.unwrap();
        let wait = (next - before).num_seconds();
        assert!((29..=31).contains(&wait), "{wait}");
        let crd = backend.status();
        assert_eq!(crd.state, Some(McpServerState::Failed));
        assert_eq!(crd.last_failure_http_status, Some(status));
        let message = &crd.conditions[0].message;
        assert!(message.contains("Next attempt at "), "{message}");
        backend.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_third_failure_in_a_row_is_unreachable() {
    let server = StatusServer::start(503, false).await;
    let backend = Backend::new("down", http_spec(server.url("/mcp")), options());
    for _ in 0..3 {
        backend.start().await.unwrap_err();
    }
    let snapshot = backend.snapshot();
    assert_eq!(snapshot.state, ServiceState::Unreachable);
    assert_eq!(snapshot.consecutive_failures, 3);
    assert!(
        snapshot
            .last_error
            .as_deref()
            .unwrap()
            .starts_with("server unreachable after 3 consecutive failures: "),
        "{snapshot:?}"
    );
    let next = snapshot.next_retry_after.unwrap();
    let wait = (next - snapshot.last_attempt.unwrap()).num_seconds();
    assert!((119..=121).contains(&wait), "{wait}");
    assert_eq!(backend.status().state, Some(McpServerState::Failed));
    backend.stop().await;
    assert_eq!(backend.snapshot().next_retry_after, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_port_fails_without_http_status() {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    for spec in [
        http_spec(url.clone()),
        sse_spec(url.replace("/mcp", "/sse")),
    ] {
        let backend = Backend::new("nobody", spec, options());
        backend.start().await.unwrap_err();
        let snapshot = backend.snapshot();
        assert_eq!(snapshot.state, ServiceState::Failed, "{snapshot:?}");
        assert_eq!(snapshot.last_failure_http_status, None);
        assert_eq!(snapshot.consecutive_failures, 1);
        assert!(snapshot.next_retry_after.is_some());
        backend.stop().await;
    }
}

fn with_secret_header(spec: &mut McpServerSpec) {
    if let Transport::StreamableHttp(remote) | Transport::Sse(remote) = &mut spec.transport {
        remote.headers = BTreeMap::from([("X-Tenant".to_owned(), "acme".to_owned())]);
        remote.headers_from = vec![HeaderFrom {
            name: "Authorization".to_owned(),
            value_from: SecretKeySource {
                type_: "Secret".to_owned(),
                name: "upstream-token".to_owned(),
                key: "token".to_owned(),
            },
        }];
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_from_needs_a_secret_reader() {
    let server = StatusServer::start(503, false).await;
    let mut spec = http_spec(server.url("/mcp"));
    with_secret_header(&mut spec);
    let backend = Backend::new("secret", spec.clone(), options());
    backend.start().await.unwrap_err();
    let snapshot = backend.snapshot();
    assert_eq!(snapshot.state, ServiceState::Failed);
    assert_eq!(snapshot.last_error.as_deref(), Some(NO_SECRET_READER));
    assert_eq!(snapshot.next_retry_after, None);
    assert!(
        server.seen.lock().unwrap().is_empty(),
        "nothing may be sent"
    );

    let secrets = MemorySecrets::new().with("team", "upstream-token", "token", "Bearer s3cret\n");
    let options = options()
        .with_namespace("team")
        .with_secrets(Arc::new(secrets));
    let backend = Backend::new("secret", spec, options);
    backend.start().await.unwrap_err();
    let seen = server.seen.lock().unwrap().clone();
    let first = seen.first().expect("a request");
    assert_eq!(first["authorization"], "Bearer s3cret");
    assert_eq!(first["x-tenant"], "acme");
    assert!(
        !backend
            .snapshot()
            .last_error
            .unwrap_or_default()
            .contains("s3cret")
    );
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retry_loop_connects_once_the_server_is_up() {
    let port = free_port();
    let spec = http_spec(format!("http://127.0.0.1:{port}/mcp"));
    let options = options().with_backoff(muster_aggregator::backend::Backoff::new(
        Duration::from_millis(300),
        Duration::from_secs(1),
    ));
    let backend = Backend::new("late", spec, options);
    backend.start().await.unwrap_err();
    assert_eq!(backend.snapshot().state, ServiceState::Failed);
    let _server = EverythingHttp::start_on("streamableHttp", port).await;
    let snapshot = wait_until(&backend, "connected by the retry loop", |s| {
        s.state == ServiceState::Connected
    })
    .await;
    assert_eq!(snapshot.consecutive_failures, 0);
    assert_eq!(snapshot.next_retry_after, None);
    assert!(backend.catalog().tool("echo").is_some());
    backend.stop().await;
}
