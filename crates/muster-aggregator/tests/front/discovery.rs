//! Discovery over the wire: list_tools, describe_tool, filter_tools, list_core_tools.

use muster_aggregator::registry::{BackendNaming, Registry};
use serde_json::{Value, json};

use crate::support::{Fixed, RmcpProvider, Served, TestResult, Upstream, json_text, text, tool};

async fn registry() -> Registry {
    let registry = Registry::new();
    registry.upsert_backend(
        "upstream",
        BackendNaming::default(),
        RmcpProvider::connect("upstream", Upstream).await,
    );
    registry.upsert_backend(
        "rank",
        BackendNaming::default(),
        Fixed::new(
            "rank",
            vec![
                tool(
                    "prometheus_query_range",
                    "Query Prometheus metrics over a time range.",
                    json!({}),
                ),
                tool("metrics_overview", "Show a metrics summary.", json!({})),
                tool("service_restart", "Restart a running service.", json!({})),
                tool(
                    "grafana_dashboard",
                    "Fetch a Grafana monitoring dashboard.\nSECONDLINE with more detail.",
                    json!({}),
                ),
            ],
        ),
    );
    registry.set_core(Fixed::new(
        "core",
        vec![
            tool("core_service_list", "List services", json!({})),
            tool("core_workflow_list", "List workflows", json!({})),
        ],
    ));
    registry.set_core(Fixed::new(
        "workflows",
        vec![tool(
            "workflow_deploy",
            "Deploy things",
            json!({"env": {"type": "string"}}),
        )],
    ));
    registry
}

fn names(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tools_and_describe_tool() -> TestResult {
    let served = Served::start(registry().await).await;
    let client = served.client().await;

    let listed = json_text(&client.meta("list_tools", json!({})).await);
    assert_eq!(
        names(&listed),
        [
            "x_rank_prometheus_query_range",
            "x_rank_metrics_overview",
            "x_rank_service_restart",
            "x_rank_grafana_dashboard",
            "x_upstream_echo",
            "x_upstream_add",
            "x_upstream_slow",
            "x_upstream_fail",
            "x_upstream_broken",
            "core_service_list",
            "core_workflow_list",
            "workflow_deploy",
        ]
    );
    assert_eq!(
        listed["tools"][4],
        json!({"name": "x_upstream_echo", "description": "Echo a message back."})
    );

    let described = client
        .meta("describe_tool", json!({"name": "x_upstream_echo"}))
        .await;
    assert_eq!(
        json_text(&described),
        json!({"description": "Echo a message back.",
               "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
               "name": "x_upstream_echo"})
    );
    let missing = client
        .meta("describe_tool", json!({"name": "x_nope"}))
        .await;
    assert_eq!(
        (missing.is_error, text(&missing)),
        (Some(true), "Tool not found: x_nope")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filter_tools_filters_pages_and_ranks() -> TestResult {
    let served = Served::start(registry().await).await;
    let client = served.client().await;

    // Pattern, summaries, no schema.
    let body = json_text(
        &client
            .meta("filter_tools", json!({"pattern": "x_rank_*"}))
            .await,
    );
    assert_eq!(
        (body["total"].clone(), body["filtered_count"].clone()),
        (json!(4), json!(4))
    );
    assert_eq!(body["total_tools"], 12);
    assert_eq!(
        body["tools"][3],
        json!({"name": "x_rank_grafana_dashboard",
                                         "summary": "Fetch a Grafana monitoring dashboard."})
    );

    // Case sensitivity applies to the pattern and the description filter.
    let body = json_text(
        &client
            .meta("filter_tools", json!({"pattern": "X_RANK_*"}))
            .await,
    );
    assert_eq!(body["total"], 4);
    let body = json_text(
        &client
            .meta(
                "filter_tools",
                json!({"pattern": "X_RANK_*", "case_sensitive": true}),
            )
            .await,
    );
    assert_eq!(body["total"], 0);
    let body = json_text(
        &client
            .meta("filter_tools", json!({"description_filter": "GRAFANA"}))
            .await,
    );
    assert_eq!(names(&body), ["x_rank_grafana_dashboard"]);

    // Pages.
    let body = json_text(
        &client
            .meta(
                "filter_tools",
                json!({"pattern": "x_*", "limit": 3, "offset": 6}),
            )
            .await,
    );
    assert_eq!(
        names(&body),
        ["x_upstream_slow", "x_upstream_fail", "x_upstream_broken"]
    );
    assert_eq!(
        (body["total"].clone(), body["truncated"].clone()),
        (json!(9), json!(false))
    );
    let body = json_text(&client.meta("filter_tools", json!({"pattern": "x_*"})).await);
    assert_eq!(
        (body["filtered_count"].clone(), body["truncated"].clone()),
        (json!(5), json!(true))
    );

    // Ranked query with scores; non-matching tools dropped.
    let body = json_text(
        &client
            .meta(
                "filter_tools",
                json!({"query": "prometheus metrics query", "pattern": "x_rank_*"}),
            )
            .await,
    );
    assert_eq!(
        names(&body),
        ["x_rank_prometheus_query_range", "x_rank_metrics_overview"]
    );
    assert!(
        body["tools"][0]["score"].as_f64().unwrap() > body["tools"][1]["score"].as_f64().unwrap()
    );

    // Full detail on request.
    let result = client
        .meta(
            "filter_tools",
            json!({"pattern": "x_rank_grafana*", "include_schema": true}),
        )
        .await;
    assert!(text(&result).contains("SECONDLINE") && text(&result).contains("inputSchema"));

    let bad = client.meta("filter_tools", json!({"limit": "many"})).await;
    assert_eq!(
        (bad.is_error, text(&bad)),
        (Some(true), "limit must be a number")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_core_tools_lists_core_tools_only() -> TestResult {
    let served = Served::start(registry().await).await;
    let client = served.client().await;
    let body = json_text(&client.meta("list_core_tools", json!({})).await);
    assert_eq!(names(&body), ["core_service_list", "core_workflow_list"]);
    assert_eq!(body["truncated"], false);
    assert!(body["tools"][0]["inputSchema"].is_object());
    let result = client
        .meta("list_core_tools", json!({"include_schema": false}))
        .await;
    assert!(!text(&result).contains("inputSchema"));
    Ok(())
}
