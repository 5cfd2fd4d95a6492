//! stdio servers: server-everything and the Python server.

use std::time::Duration;

use muster_aggregator::backend::{Backend, ProtocolMode, ServiceState};
use muster_core::resource::mcp_server::{McpServerState, Transport};
use muster_core::tool::{CallContext, CallerChannel, ToolProvider};
use serde_json::json;
use tower::ServiceExt;

use super::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_stdio_lists_echoes_and_relays_progress() {
    let backend = Backend::new("everything", everything_stdio(), options());
    backend.start().await.unwrap();

    let snapshot = backend.snapshot();
    assert_eq!(snapshot.state, ServiceState::Running);
    assert!(snapshot.client_ready);
    assert!(snapshot.pid.is_some());
    assert_eq!(backend.status().state, Some(McpServerState::Running));

    let catalog = backend.catalog();
    assert!(catalog.tool("echo").is_some(), "tools: {:?}", catalog.tools);
    assert!(catalog.tool("trigger-long-running-operation").is_some());
    assert!(!catalog.prompts.is_empty());
    assert!(!catalog.resources.is_empty());

    let result = backend
        .service()
        .oneshot(call("echo", json!({"message": "hello"})))
        .await
        .unwrap();
    assert_eq!(first_text(&result), "Echo: hello");
    assert_eq!(
        result.result_type.as_ref().map(|t| t.as_str()),
        Some("complete")
    );

    let (progress_call, seen) = call_with_progress(
        "trigger-long-running-operation",
        json!({"duration": 1, "steps": 4}),
    );
    let result = backend.service().oneshot(progress_call).await.unwrap();
    assert!(first_text(&result).contains("Long running operation completed"));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().map(|u| u.progress).collect::<Vec<_>>(),
        [1.0, 2.0, 3.0, 4.0]
    );
    assert!(seen.iter().all(|u| u.total == Some(4.0)));

    backend.stop().await;
    assert_eq!(backend.snapshot().state, ServiceState::Stopped);
    assert!(backend.catalog().tools.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_pass_through_without_loss() {
    let backend = Backend::new("everything", everything_stdio(), options());
    backend.start().await.unwrap();
    let service = backend.service();

    let structured = service
        .clone()
        .oneshot(call(
            "get-structured-content",
            json!({"location": "New York"}),
        ))
        .await
        .unwrap();
    assert!(structured.structured_content.is_some(), "{structured:?}");

    let image = service
        .clone()
        .oneshot(call("get-tiny-image", json!({})))
        .await
        .unwrap();
    assert!(
        image.content.iter().any(|c| c.as_image().is_some()),
        "{image:?}"
    );

    let bad = service
        .clone()
        .oneshot(call("get-sum", json!({"a": "x", "b": 2})))
        .await;
    match bad {
        Ok(r) => assert_eq!(r.is_error, Some(true), "{r:?}"),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_reaches_the_child() {
    let mut spec = everything_stdio();
    if let Transport::Stdio(t) = &mut spec.transport {
        t.env
            .insert("MUSTER_TEST_MARKER".to_owned(), "marker-42".to_owned());
    }
    let backend = Backend::new("everything", spec, options());
    backend.start().await.unwrap();
    let result = backend
        .service()
        .oneshot(call("get-env", json!({})))
        .await
        .unwrap();
    let text = first_text(&result);
    assert!(text.contains("marker-42"), "{text}");
    assert!(
        text.contains("PATH"),
        "inherited environment missing: {text}"
    );
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_from_the_server_re_lists_the_catalog() {
    let backend = Backend::new("everything", everything_stdio(), options());
    backend.start().await.unwrap();
    let before = backend.catalog();
    let mut revisions = backend.revisions();
    revisions.mark_unchanged();
    backend
        .service()
        .oneshot(call(
            "gzip-file-as-resource",
            json!({"name": "hello.txt.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}),
        ))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let catalog = backend.catalog();
        if catalog.resources.iter().any(|r| r.name.contains("hello")) {
            assert!(catalog.revision > before.revision);
            break;
        }
        tokio::time::timeout_at(deadline, revisions.changed())
            .await
            .expect("no re-list after resources/list_changed")
            .unwrap();
    }
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_server_adds_with_structured_content() {
    let backend = Backend::new("py", py_stdio(), options());
    backend.start().await.unwrap();
    let names: Vec<_> = backend
        .catalog()
        .tools
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "add",
            "slow",
            "progress",
            "meta",
            "roots",
            "request_id",
            "wait_for_cancel",
            "cancellations",
            "blob",
            "crash"
        ]
    );
    let result = backend
        .service()
        .oneshot(call("add", json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert_eq!(first_text(&result), "42");
    assert_eq!(result.structured_content, Some(json!({"result": 42})));
    assert_eq!(result.is_error, Some(false));
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_needs_long_to_start_is_waited_for() {
    // The process reads nothing for 12 s, as an interpreter still loading on a busy host
    // does: longer than rmcp's own `server/discover` probe waits before it falls back to
    // `initialize`, which this server (serving 2026-07-28 once discover came first) refuses.
    let script = format!("sleep 12; exec '{}' '{}'", python(), py_server_script());
    let backend = Backend::new("slow-start", stdio_spec("sh", &["-c", &script]), options());
    backend.start().await.unwrap();
    assert!(backend.catalog().tool("add").is_some());
    let result = backend
        .service()
        .oneshot(call("add", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(first_text(&result), "5");
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_and_resources_pass_through() {
    let backend = Backend::new("everything", everything_stdio(), options());
    backend.start().await.unwrap();
    let catalog = backend.catalog();
    let resource = catalog.resources.first().unwrap().uri.clone();
    let read = backend.read_resource(resource.clone()).await.unwrap();
    assert!(!read.contents.is_empty(), "{read:?}");

    let prompt = catalog
        .prompts
        .iter()
        .find(|p| {
            p.arguments
                .as_ref()
                .is_none_or(|a| a.iter().all(|a| a.required != Some(true)))
        })
        .unwrap()
        .name
        .clone();
    let got = backend.get_prompt(prompt, None).await.unwrap();
    assert!(!got.messages.is_empty());
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_and_resources_through_the_provider_contract() {
    // The registry reaches a backend's prompts and resources through `ToolProvider`.
    let backend = Backend::new("everything", everything_stdio(), options());
    backend.start().await.unwrap();
    let provider: &dyn ToolProvider = &backend;
    let catalog = provider.catalog();
    let resource = catalog.resources.first().unwrap().uri.clone();
    let read = provider.read_resource(&resource).await.unwrap();
    assert!(!read.contents.is_empty(), "{read:?}");

    let prompt = catalog
        .prompts
        .iter()
        .find(|p| p.name == "simple-prompt")
        .unwrap()
        .name
        .clone();
    let got = provider.get_prompt(&prompt, None).await.unwrap();
    assert!(!got.messages.is_empty(), "{got:?}");

    assert!(provider.get_prompt("no-such-prompt", None).await.is_err());
    assert!(
        provider
            .read_resource("demo://resource/no/such/thing")
            .await
            .is_err()
    );
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_meta_goes_upstream() {
    let backend = Backend::new("py", py_stdio(), options());
    backend.start().await.unwrap();
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let context = CallContext {
        request_meta: args(json!({"traceparent": traceparent, "example.com/tenant": "acme"})),
        ..CallContext::anonymous()
    };
    let result = backend
        .service()
        .oneshot(call("meta", json!({})).with_context(context))
        .await
        .unwrap();
    let seen: serde_json::Value = serde_json::from_str(&first_text(&result)).unwrap();
    assert_eq!(seen["traceparent"], traceparent, "{seen}");
    assert_eq!(seen["example.com/tenant"], "acme", "{seen}");
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_requests_during_a_call_reach_the_caller() {
    // A session of the initialize handshake: the server may ask its client during a call.
    let options = options().with_protocol(ProtocolMode::Initialize);
    let backend = Backend::new("py", py_stdio(), options);
    backend.start().await.unwrap();
    let context = CallContext {
        caller_requests: Some(CallerChannel::new(RootsCaller)),
        ..CallContext::anonymous()
    };
    let result = backend
        .service()
        .oneshot(call("roots", json!({})).with_context(context))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(first_text(&result), "file:///caller-root");
    backend.stop().await;
}
