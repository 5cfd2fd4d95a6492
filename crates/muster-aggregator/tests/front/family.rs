//! Family routing over the wire: one exposed tool, the instance argument required, checked
//! and stripped; a member whose schema diverges keeps its per-server name.

use muster_aggregator::registry::{BackendNaming, Registry};
use serde_json::{Value, json};

use crate::support::{Fixed, Served, TestResult, json_text, tool};

fn member() -> BackendNaming {
    BackendNaming::default().with_family("kubernetes", "management_cluster")
}

fn registry() -> Registry {
    let registry = Registry::new();
    let namespace = json!({"namespace": {"type": "string"}});
    for server in ["k8s-graveler", "k8s-gazelle"] {
        registry.upsert_backend(
            server,
            member(),
            Fixed::new(
                server,
                vec![tool("list_pods", "List pods", namespace.clone())],
            ),
        );
    }
    // A third member whose list_pods accepts different arguments.
    registry.upsert_backend(
        "k8s-zebra",
        member(),
        Fixed::new(
            "k8s-zebra",
            vec![tool(
                "list_pods",
                "List pods",
                json!({"namespace": {"type": "string"},
                                                      "label_selector": {"type": "string"}}),
            )],
        ),
    );
    registry.upsert_backend(
        "slack",
        BackendNaming::default(),
        Fixed::new(
            "slack",
            vec![tool("send_message", "Send a Slack message", json!({}))],
        ),
    );
    registry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn family_tools_route_by_instance_argument() -> TestResult {
    let served = Served::start(registry()).await;
    let client = served.client().await;

    let listed = json_text(&client.meta("list_tools", json!({})).await);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "x_k8s-zebra_list_pods",
            "x_slack_send_message",
            "x_kubernetes_list_pods"
        ]
    );

    let described = json_text(
        &client
            .meta("describe_tool", json!({"name": "x_kubernetes_list_pods"}))
            .await,
    );
    assert_eq!(
        described["description"],
        "List pods (available on servers: k8s-gazelle, k8s-graveler)"
    );
    assert_eq!(
        described["inputSchema"]["properties"]["management_cluster"],
        json!({"type": "string",
               "description": "Target instance to execute this tool on. Available: k8s-gazelle, k8s-graveler",
               "enum": ["k8s-gazelle", "k8s-graveler"]})
    );
    assert_eq!(
        described["inputSchema"]["required"],
        json!(["management_cluster"])
    );

    // Routed to the named member, with the instance argument stripped.
    let (is_error, text) = client
        .call_text(
            "x_kubernetes_list_pods",
            json!({"management_cluster": "k8s-graveler", "namespace": "kube-system"}),
        )
        .await;
    assert!(!is_error, "{text}");
    let body: Value = serde_json::from_str(&text)?;
    assert_eq!(body["source"], "k8s-graveler");
    assert_eq!(body["tool"], "list_pods");
    assert_eq!(body["arguments"], json!({"namespace": "kube-system"}));

    let (_, text) = client
        .call_text(
            "x_kubernetes_list_pods",
            json!({"management_cluster": "k8s-gazelle"}),
        )
        .await;
    assert_eq!(
        serde_json::from_str::<Value>(&text)?["source"],
        "k8s-gazelle"
    );

    // The diverging member is reached under its own name, with its native schema.
    let (_, text) = client
        .call_text("x_k8s-zebra_list_pods", json!({"label_selector": "app=x"}))
        .await;
    let body: Value = serde_json::from_str(&text)?;
    assert_eq!(body["source"], "k8s-zebra");
    assert_eq!(body["arguments"], json!({"label_selector": "app=x"}));

    // Clear errors naming the allowed members.
    let table = [
        (
            json!({"namespace": "default"}),
            r#"Tool execution failed: tool x_kubernetes_list_pods is provided by a family on servers k8s-gazelle, k8s-graveler; the "management_cluster" parameter is required"#,
        ),
        (
            json!({"management_cluster": "k8s-typo"}),
            r#"Tool execution failed: tool x_kubernetes_list_pods is not available on server "k8s-typo" (available: k8s-gazelle, k8s-graveler)"#,
        ),
        (
            json!({"management_cluster": "k8s-zebra"}),
            r#"Tool execution failed: tool x_kubernetes_list_pods is not available on server "k8s-zebra" (available: k8s-gazelle, k8s-graveler)"#,
        ),
    ];
    for (arguments, expected) in table {
        let (is_error, text) = client.call_text("x_kubernetes_list_pods", arguments).await;
        assert!(is_error);
        assert_eq!(text, expected);
    }

    // A stopped member leaves the routing set.
    served.registry.remove_backend("k8s-graveler");
    let (is_error, text) = client
        .call_text(
            "x_kubernetes_list_pods",
            json!({"management_cluster": "k8s-graveler"}),
        )
        .await;
    assert!(is_error);
    assert!(
        text.contains("not available on server \"k8s-graveler\" (available: k8s-gazelle)"),
        "{text}"
    );
    Ok(())
}
