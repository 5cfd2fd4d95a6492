//! `call_tool` over the wire: the envelope for success, tool errors, unknown tools and bad
//! arguments; structured content; progress relayed from the upstream server.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Served, TestResult, registry_with_upstream, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_envelope_wraps_every_outcome() -> TestResult {
    let served = Served::start(registry_with_upstream().await).await;
    let client = served.client().await;

    // (tool, arguments, outer isError, envelope)
    let table = [
        (
            "x_upstream_echo",
            json!({"message": "hi"}),
            false,
            json!({"isError": false, "content": [{"type": "text", "text": "Echo: hi"}]}),
        ),
        (
            "x_upstream_echo",
            Value::Null,
            false,
            json!({"isError": false, "content": [{"type": "text", "text": "Echo: "}]}),
        ),
        (
            "x_upstream_fail",
            json!({}),
            true,
            json!({"isError": true, "content": [{"type": "text", "text": "upstream says no"}]}),
        ),
        (
            "x_upstream_nope",
            json!({}),
            true,
            json!({"isError": true,
                   "content": [{"type": "text",
                                "text": "Tool execution failed: tool not found: x_upstream_nope"}]}),
        ),
        (
            "list_tools",
            json!({}),
            true,
            json!({"isError": true,
                   "content": [{"type": "text",
                                "text": "Tool execution failed: tool not found: list_tools"}]}),
        ),
    ];
    for (name, arguments, is_error, envelope) in table {
        let (outer, got) = client.call(name, arguments).await;
        assert_eq!(outer.is_error, Some(is_error), "{name}");
        assert_eq!(got, envelope, "{name}");
    }

    // An upstream protocol error is an inner failure, never a JSON-RPC error.
    let (is_error, message) = client.call_text("x_upstream_broken", json!({})).await;
    assert!(is_error);
    assert!(
        message.starts_with("Tool execution failed: upstream: "),
        "{message}"
    );
    assert!(message.contains("kaput"), "{message}");

    // The envelope text is compact JSON with isError first.
    let outer = client
        .meta(
            "call_tool",
            json!({"name": "x_upstream_echo", "arguments": {"message": "a"}}),
        )
        .await;
    assert_eq!(
        text(&outer),
        r#"{"isError":false,"content":[{"text":"Echo: a","type":"text"}]}"#
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_content_is_mirrored() -> TestResult {
    let served = Served::start(registry_with_upstream().await).await;
    let client = served.client().await;
    let (outer, envelope) = client.call("x_upstream_add", json!({"a": 2, "b": 3})).await;
    assert_eq!(envelope["structuredContent"], json!({"sum": 5.0}));
    assert_eq!(outer.structured_content, Some(json!({"sum": 5.0})));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argument_errors_are_plain_meta_tool_errors() -> TestResult {
    let served = Served::start(registry_with_upstream().await).await;
    let client = served.client().await;
    let table = [
        (json!({}), "name argument is required"),
        (json!({"name": ""}), "name argument is required"),
        (
            json!({"name": "x_upstream_echo", "arguments": "x"}),
            "arguments must be a JSON object",
        ),
    ];
    for (arguments, expected) in table {
        let result = client.meta("call_tool", arguments).await;
        assert_eq!(result.is_error, Some(true));
        assert_eq!(text(&result), expected);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_relayed_through_call_tool() -> TestResult {
    let served = Served::start(registry_with_upstream().await).await;
    let mut client = served.client().await;
    let (is_error, text) = client
        .call_text("x_upstream_slow", json!({"steps": 3}))
        .await;
    assert!(!is_error);
    assert_eq!(text, "counted to 3");

    // Every notification reaches the client. rmcp hands each incoming notification to its
    // own task, so the upstream client and the test client may see them in any order.
    // A loaded machine may hold a notification's task back for a while: wait for all three
    // (and a moment for any extra one), up to a generous bound.
    let mut seen = Vec::new();
    let mut wait = Duration::from_secs(10);
    while let Ok(Some(p)) = tokio::time::timeout(wait, client.progress.recv()).await {
        seen.push((p.progress, p.total, p.message));
        if seen.len() >= 3 {
            wait = Duration::from_millis(500);
        }
    }
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(
        seen,
        [
            (1.0, Some(3.0), Some("step 1".to_owned())),
            (2.0, Some(3.0), Some("step 2".to_owned())),
            (3.0, Some(3.0), Some("step 3".to_owned())),
        ]
    );
    Ok(())
}
