//! The lean hop of `tools/call` to a legacy SSE server (the Python server on the official
//! SDK): calls posted to the message endpoint with muster's own ids and answered on the
//! event stream, progress in order before the result, concurrent calls each getting their
//! own answer, the caller's `_meta`, cancellation reaching the server, a stream that ends
//! under a waiting call, and calls whose caller can be asked taking the client's path.

use std::time::Duration;

use muster_aggregator::backend::Backend;
use muster_core::tool::{CallContext, ToolError, ToolProvider};
use serde_json::json;
use tower::ServiceExt;

use super::support::*;

/// The Python server over legacy SSE on `port`, killed on drop.
async fn py_sse(port: u16) -> tokio::process::Child {
    py_remote("sse", port, false).await
}

/// A backend of the server on `port`; `initialize` asks for a 2025 session instead of the
/// server's 2026-07-28 era.
async fn started_with(port: u16, initialize: bool) -> Backend {
    started_py(sse_spec(format!("http://127.0.0.1:{port}/sse")), initialize).await
}

async fn started(port: u16) -> Backend {
    started_with(port, false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_posted_and_answered_on_the_event_stream() {
    // In the server's 2026-07-28 era (each request stamped) and in a 2025 session.
    for initialize in [false, true] {
        posted_and_answered(initialize).await;
    }
}

async fn posted_and_answered(initialize: bool) {
    let port = free_port();
    let _server = py_sse(port).await;
    let backend = started_with(port, initialize).await;
    let era = backend.snapshot().protocol_version;
    assert_eq!(era.as_deref() == Some("2026-07-28"), !initialize, "{era:?}");
    lean_calls_answer(&backend).await;
    let (progress, seen) = call_with_progress("progress", json!({"steps": 3, "interval": 0.05}));
    let result = backend.service().oneshot(progress).await.unwrap();
    assert_eq!(first_text(&result), "finished 3 steps");
    let seen = seen.lock().unwrap().clone();
    let steps: Vec<f64> = seen.iter().map(|u| u.progress).collect();
    assert_eq!(steps, [1.0, 2.0, 3.0]);
    assert_eq!(seen[2].message.as_deref(), Some("step 3 of 3"));

    // Concurrent calls share the stream; each gets its own answer.
    let calls = (0..20).map(|n| {
        let service = backend.service();
        async move {
            let result = service
                .oneshot(call("add", json!({"a": n, "b": 1000})))
                .await
                .unwrap();
            (n, first_text(&result))
        }
    });
    for (n, text) in futures::future::join_all(calls).await {
        assert_eq!(text, (n + 1000).to_string());
    }
    // The caller's `_meta` goes upstream.
    let meta = json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"});
    let context = CallContext {
        request_meta: meta.as_object().cloned(),
        ..CallContext::anonymous()
    };
    let seen = text_of(&backend, call("meta", json!({})).with_context(context)).await;
    let seen: serde_json::Value = serde_json::from_str(&seen).unwrap();
    assert_eq!(seen["traceparent"], meta["traceparent"], "{seen}");
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_cancelled_on_the_server() {
    let port = free_port();
    let _server = py_sse(port).await;
    let backend = started(port).await;
    cancellation_reaches_the_server(&backend).await;
    // A later call is answered as usual: the late replies of the given-up calls went nowhere.
    assert_eq!(
        text_of(&backend, call("add", json!({"a": 2, "b": 2}))).await,
        "4"
    );
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_when_the_stream_ends_fails_instead_of_hanging() {
    let port = free_port();
    let server = py_sse(port).await;
    let backend = started(port).await;
    let pending = backend
        .service()
        .oneshot(call("slow", json!({"seconds": 30})));
    let killer = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(server);
    };
    let (result, ()) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(pending, killer)
    })
    .await
    .expect("the call still waits after the server's stream ended");
    let error = result.expect_err("the call has no answer");
    assert!(
        matches!(
            error,
            ToolError::Backend { .. } | ToolError::Unavailable { .. }
        ),
        "{error:?}"
    );
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_caller_can_be_asked_takes_the_clients_path() {
    let port = free_port();
    let _server = py_sse(port).await;
    // The server asks for roots only in a 2025 session.
    let backend = started_with(port, true).await;
    askable_callers_take_the_clients_path(&backend).await;
    backend.stop().await;
}
