//! Failing stdio servers and calls: exit at start, crash mid-call, hangs, budgets.

use std::time::Duration;

use muster_aggregator::backend::{Backend, BackendError, ServiceState};
use muster_core::ToolError;
use muster_core::resource::mcp_server::McpServerState;
use muster_core::tool::ToolProvider;
use serde_json::json;
use tower::ServiceExt;

use super::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_exits_at_start_fails_with_its_stderr() {
    let spec = stdio_spec("sh", &["-c", "echo 'boom: missing config' >&2; exit 3"]);
    let backend = Backend::new("broken", spec, options());
    let error = backend.start().await.unwrap_err();
    assert!(matches!(error, BackendError::Connect { .. }), "{error:?}");
    let snapshot = backend.snapshot();
    assert_eq!(snapshot.state, ServiceState::Failed);
    let last_error = snapshot.last_error.unwrap();
    assert!(last_error.contains("boom: missing config"), "{last_error}");
    assert!(last_error.contains("exit status: 3"), "{last_error}");
    assert_eq!(
        snapshot.next_retry_after, None,
        "stdio failures are not retried"
    );
    assert_eq!(snapshot.consecutive_failures, 0);
    assert_eq!(backend.status().state, Some(McpServerState::Failed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_command_fails() {
    let backend = Backend::new(
        "missing",
        stdio_spec("/nonexistent/mcp-server", &[]),
        options(),
    );
    backend.start().await.unwrap_err();
    let snapshot = backend.snapshot();
    assert_eq!(snapshot.state, ServiceState::Failed);
    assert!(
        snapshot
            .last_error
            .unwrap()
            .contains("/nonexistent/mcp-server")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_at_start() {
    let mut spec = stdio_spec("sleep", &["30"]);
    spec.timeout = Some(1);
    let backend = Backend::new("mute", spec, options());
    let started = tokio::time::Instant::now();
    backend.start().await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    let snapshot = backend.snapshot();
    assert_eq!(snapshot.state, ServiceState::Failed);
    assert!(
        snapshot
            .last_error
            .as_deref()
            .unwrap()
            .contains("timed out after 1s"),
        "{snapshot:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_fails_the_call_and_the_backend() {
    let backend = Backend::new("py", py_stdio(), options());
    backend.start().await.unwrap();
    let error = backend
        .service()
        .oneshot(call("crash", json!({})))
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    let snapshot = wait_until(&backend, "failed", |s| s.state == ServiceState::Failed).await;
    let last_error = snapshot.last_error.unwrap();
    assert!(last_error.contains("crashing on purpose"), "{last_error}");
    assert!(!snapshot.client_ready);
    assert!(backend.catalog().tools.is_empty());
    let error = backend
        .service()
        .oneshot(call("add", json!({"a": 1, "b": 2})))
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::Unavailable { .. }), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_call_times_out() {
    // The timeout also bounds the start, so it leaves the interpreter time to load.
    let mut spec = py_stdio();
    spec.timeout = Some(5);
    let backend = Backend::new("py", spec, options());
    start_python(&backend).await;
    let started = tokio::time::Instant::now();
    let error = backend
        .service()
        .oneshot(call("slow", json!({"seconds": 30})))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ToolError::Timeout { after } if after == Duration::from_secs(5)),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    // The connection stays usable.
    let result = backend
        .service()
        .oneshot(call("add", json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(first_text(&result), "3");
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_extends_the_budget_up_to_the_maximum() {
    // Progress every 2 s, 5 times: longer than the 5 s timeout, within a 20 s maximum.
    let mut spec = py_stdio();
    spec.timeout = Some(5);
    spec.progress_max_duration = Some(20);
    let backend = Backend::new("py", spec, options());
    start_python(&backend).await;
    let (progress_call, seen) =
        call_with_progress("progress", json!({"steps": 5, "interval": 2.0}));
    let result = backend.service().oneshot(progress_call).await.unwrap();
    assert_eq!(first_text(&result), "finished 5 steps");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 5);
    assert_eq!(seen[4].message.as_deref(), Some("step 5 of 5"));
    backend.stop().await;

    // The same call with a 7 s maximum stops at 7 s.
    let mut spec = py_stdio();
    spec.timeout = Some(5);
    spec.progress_max_duration = Some(7);
    let backend = Backend::new("py", spec, options());
    start_python(&backend).await;
    let (progress_call, seen) =
        call_with_progress("progress", json!({"steps": 5, "interval": 2.0}));
    let error = backend.service().oneshot(progress_call).await.unwrap_err();
    assert!(
        matches!(error, ToolError::Timeout { after } if after == Duration::from_secs(7)),
        "{error:?}"
    );
    assert!((2..=3).contains(&seen.lock().unwrap().len()));
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_returns_promptly() {
    let backend = Backend::new("py", py_stdio(), options());
    backend.start().await.unwrap();
    let result = cancelled_after_300ms(&backend, call("slow", json!({"seconds": 30}))).await;
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    let result = backend
        .service()
        .oneshot(call("add", json!({"a": 2, "b": 2})))
        .await
        .unwrap();
    assert_eq!(first_text(&result), "4");
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_backend_blocks_no_reader() {
    let mut spec = stdio_spec("sleep", &["30"]);
    spec.timeout = Some(5);
    let slow = Backend::new("slow", spec, options());
    let starting = tokio::spawn({
        let slow = slow.clone();
        async move { slow.start().await }
    });
    wait_until(&slow, "starting", |s| s.state == ServiceState::Starting).await;
    tokio::time::timeout(Duration::from_secs(1), async {
        let _ = slow.snapshot();
        let _ = slow.status();
        let _ = slow.catalog();
        let error = slow
            .service()
            .oneshot(call("anything", json!({})))
            .await
            .unwrap_err();
        assert!(matches!(error, ToolError::Unavailable { .. }), "{error:?}");
    })
    .await
    .expect("reads waited for the connect");
    slow.stop().await;
    assert!(matches!(
        starting.await.unwrap(),
        Err(BackendError::Stopped { .. })
    ));
    assert_eq!(slow.snapshot().state, ServiceState::Stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_size_limit_fails_at_once_with_a_clear_error() {
    let mut spec = py_stdio();
    spec.timeout = Some(60);
    let backend = Backend::new("py", spec, options().with_max_result_bytes(1024 * 1024));
    backend.start().await.unwrap();
    // Far sooner than the 60 s timeout the call would otherwise wait for.
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        backend
            .service()
            .oneshot(call("blob", json!({"size": 3_000_000}))),
    )
    .await
    .expect("fails at once, not at the timeout");
    let text = match outcome {
        Ok(result) => {
            assert_eq!(result.is_error, Some(true), "{result:?}");
            first_text(&result)
        }
        Err(error) => error.to_string(),
    };
    assert!(
        text.contains(
            "exceeds the maximum message size of 1048576 bytes (limits.backends.maxResultBytes)"
        ),
        "{text}"
    );
    // Results within the limit, before and after, pass.
    let result = backend
        .service()
        .oneshot(call("blob", json!({"size": 500_000})))
        .await
        .unwrap();
    assert_eq!(first_text(&result).len(), 500_000);
    backend.stop().await;
}
