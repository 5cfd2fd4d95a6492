//! Progress end to end: a real backend (server-everything's long-running operation) reports
//! progress for a call a client makes through `muster serve`'s `call_tool` with a
//! `progressToken`; the client receives every `notifications/progress` under its own token,
//! in order, before the result.

#![allow(missing_docs, clippy::unwrap_used)]

use muster_tests::{ConfigDir, Envelope, McpClient, MusterConfig, MusterInstance, deps};
use serde_json::{Value, json};

const LONG_RUNNING: &str = "x_everything_trigger-long-running-operation";

/// A `muster serve` with server-everything, and a client session.
fn muster_with_everything() -> (ConfigDir, MusterInstance, McpClient) {
    let dir = MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .expect_tool(LONG_RUNNING)
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    (dir, muster, client)
}

#[test]
fn backend_progress_reaches_the_client_before_the_result() {
    let (_dir, _muster, client) = muster_with_everything();

    let messages = client
        .request_with_meta(
            "tools/call",
            json!({"name": "call_tool", "arguments": {
                "name": LONG_RUNNING, "arguments": {"duration": 1, "steps": 4},
            }}),
            json!({"progressToken": "from-the-client"}),
        )
        .unwrap();

    let last = messages.last().unwrap();
    assert!(
        last.get("result").is_some(),
        "the result comes last: {messages:#?}"
    );
    let envelope = Envelope::from_call_tool_result(&last["result"]).unwrap();
    assert!(!envelope.is_error, "{}", envelope.raw);
    assert_eq!(
        envelope.text(),
        "Long running operation completed. Duration: 1 seconds, Steps: 4."
    );

    let progress: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(
        progress.len() + 1,
        messages.len(),
        "only progress before the result: {messages:#?}"
    );
    let steps: Vec<f64> = progress
        .iter()
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "from-the-client", "{m}");
            assert_eq!(m["params"]["total"].as_f64(), Some(4.0), "{m}");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    // Every step the backend reported, in order (muster may coalesce a burst, never reorder
    // or invent one; the backend spaces its four steps 250 ms apart).
    assert!(!steps.is_empty(), "no progress reached the client");
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    assert!(
        steps.iter().all(|s| [1.0, 2.0, 3.0, 4.0].contains(s)),
        "{steps:?}"
    );
    assert_eq!(
        steps.last(),
        Some(&4.0),
        "the final step arrives: {steps:?}"
    );
}

#[test]
fn without_a_progress_token_the_reply_carries_only_the_result() {
    let (_dir, _muster, client) = muster_with_everything();
    let messages = client
        .request_with_meta(
            "tools/call",
            json!({"name": "call_tool", "arguments": {
                "name": LONG_RUNNING, "arguments": {"duration": 0.4, "steps": 2},
            }}),
            json!({}),
        )
        .unwrap();
    assert_eq!(messages.len(), 1, "{messages:#?}");
    assert!(messages[0].get("result").is_some(), "{messages:#?}");
}
