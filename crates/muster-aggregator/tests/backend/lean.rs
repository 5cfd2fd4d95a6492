//! The lean hop of `tools/call` to streamable-HTTP servers, against the Python server on the
//! official SDK: SSE replies with progress, JSON replies, a session that expires mid-run,
//! cancellation reaching the server, the caller's `_meta`, and calls whose caller can be
//! asked things taking the client's path.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use muster_aggregator::backend::Backend;
use muster_core::tool::{CallContext, ToolProvider};
use serde_json::json;
use tower::ServiceExt;

use super::support::*;

/// The Python server over streamable HTTP on `port`, killed on drop.
async fn py_http(port: u16, json_response: bool) -> tokio::process::Child {
    py_remote("streamable-http", port, json_response).await
}

/// A backend of the server on `port`; `initialize` asks for a 2025 session instead of the
/// server's 2026-07-28 era.
async fn started_with(port: u16, initialize: bool) -> Backend {
    started_py(
        http_spec(format!("http://127.0.0.1:{port}/mcp")),
        initialize,
    )
    .await
}

async fn started(port: u16) -> Backend {
    started_with(port, false).await
}

/// The id the server saw for a call: lean calls carry muster's own ids.
async fn request_id(backend: &Backend) -> String {
    text_of(backend, call("request_id", json!({}))).await
}

async fn sse_or_json_reply(json_response: bool, initialize: bool) {
    let port = free_port();
    let _server = py_http(port, json_response).await;
    let backend = started_with(port, initialize).await;
    let era = backend.snapshot().protocol_version;
    assert_eq!(era.as_deref() == Some("2026-07-28"), !initialize, "{era:?}");
    lean_calls_answer(&backend).await;
    let (progress, seen) = call_with_progress("progress", json!({"steps": 3, "interval": 0.05}));
    let result = backend.service().oneshot(progress).await.unwrap();
    assert_eq!(first_text(&result), "finished 3 steps");
    let seen = seen.lock().unwrap().clone();
    if json_response {
        // A JSON reply has no room for progress: the server drops it.
        assert!(seen.is_empty(), "{seen:?}");
    } else {
        let steps: Vec<f64> = seen.iter().map(|u| u.progress).collect();
        assert_eq!(steps, [1.0, 2.0, 3.0]);
        assert_eq!(seen[2].total, Some(3.0));
        assert_eq!(seen[2].message.as_deref(), Some("step 3 of 3"));
    }
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_reply_carries_progress_then_the_result() {
    sse_or_json_reply(false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_reply_is_read_whole() {
    sse_or_json_reply(true, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_2025_session_too() {
    sse_or_json_reply(false, true).await;
    sse_or_json_reply(true, true).await;
}

/// A TCP relay on a free port to the server on `target`, counting the connections made
/// through it.
async fn counting_relay(target: u16) -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let Ok(mut outbound) = tokio::net::TcpStream::connect(("127.0.0.1", target)).await
                else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    });
    (port, accepted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn back_to_back_calls_keep_their_connection() {
    // The server ends each SSE reply after the response: the rest of the reply is read so
    // that the connection carries later calls instead of being closed and opened anew. A
    // call that starts while the last reply's end is still on its way takes a second
    // connection; from then on the two take turns.
    for json_response in [false, true] {
        let port = free_port();
        let _server = py_http(port, json_response).await;
        let (relay, connections) = counting_relay(port).await;
        let backend = started(relay).await;
        assert_eq!(
            text_of(&backend, call("add", json!({"a": 1, "b": 2}))).await,
            "3"
        );
        let before = connections.load(Ordering::SeqCst);
        for n in 0..30 {
            assert_eq!(
                text_of(&backend, call("add", json!({"a": n, "b": 1}))).await,
                (n + 1).to_string()
            );
        }
        let opened = connections.load(Ordering::SeqCst) - before;
        assert!(
            opened <= 1,
            "30 calls opened {opened} connections (JSON replies: {json_response})"
        );
        backend.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_meta_goes_upstream() {
    let port = free_port();
    let _server = py_http(port, false).await;
    let backend = started(port).await;
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
    let _server = py_http(port, false).await;
    let backend = started(port).await;
    cancellation_reaches_the_server(&backend).await;
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_expires_mid_run_is_renewed() {
    let port = free_port();
    let server = py_http(port, false).await;
    let backend = started_with(port, true).await;
    let id = request_id(&backend).await;
    assert!(
        id.starts_with("muster-"),
        "{id} {:?}",
        backend.snapshot().protocol_version
    );
    // A new server process on the same port knows nothing of muster's session: 404.
    drop(server);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _server = py_http(port, false).await;
    let mut answered = None;
    for _ in 0..100 {
        match backend
            .service()
            .oneshot(call("add", json!({"a": 1, "b": 2})))
            .await
        {
            Ok(result) => {
                answered = Some(first_text(&result));
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert_eq!(answered.as_deref(), Some("3"));
    // Once the client has the new session, calls take the lean hop again.
    let mut lean = false;
    for _ in 0..100 {
        if let Ok(result) = backend
            .service()
            .oneshot(call("request_id", json!({})))
            .await
            && first_text(&result).starts_with("muster-")
        {
            lean = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(lean, "calls did not return to the lean hop");
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_caller_can_be_asked_takes_the_clients_path() {
    let port = free_port();
    let _server = py_http(port, false).await;
    // The server asks for roots only in a 2025 session.
    let backend = started_with(port, true).await;
    askable_callers_take_the_clients_path(&backend).await;
    backend.stop().await;
}
