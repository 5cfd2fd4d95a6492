//! The workflows of `examples/config` run against a real server-everything, so the example a
//! reader starts with keeps working; the guides show them verbatim.

#![allow(missing_docs, clippy::unwrap_used)]

use muster_tests::markdown::{blocks, read_doc};
use muster_tests::{MusterConfig, deps, workspace_root};
use serde_json::json;

fn example_workflow(name: &str) -> String {
    let path = workspace_root()
        .join("examples/config/workflows")
        .join(format!("{name}.yaml"));
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn example_workflows_run() {
    let dir = MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .expect_tool("x_everything_echo")
        .workflow("greet-all", &example_workflow("greet-all"))
        .workflow("sum-and-check", &example_workflow("sum-and-check"))
        .workflow("weather-report", &example_workflow("weather-report"))
        .workflow("inventory-page", &example_workflow("inventory-page"))
        .workflow("collect-inventory", &example_workflow("collect-inventory"))
        .expect_tool("workflow_collect-inventory")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();

    let greet = client
        .call("workflow_greet-all", json!({"names": ["ada", "bob"]}))
        .unwrap();
    assert!(!greet.is_error, "{}", greet.raw);
    let doc: serde_json::Value = serde_json::from_str(greet.text()).unwrap();
    assert_eq!(doc["greeted"], 2, "{doc}");
    assert_eq!(
        doc["records"][1]["results"]["echo_name"],
        "Echo: Hello, bob (#1)"
    );

    let sum = client
        .call("workflow_sum-and-check", json!({"a": 70, "b": 50}))
        .unwrap();
    assert!(!sum.is_error, "{}", sum.raw);
    let doc: serde_json::Value = serde_json::from_str(sum.text()).unwrap();
    let status = |id: &str| {
        doc["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(status("report_large"), "completed", "{doc}");
    assert_eq!(status("confirm"), "completed", "{doc}");

    // forEach with parallelism, jq over the loop's records, parallel, a jsonPath condition.
    let weather = client.call("workflow_weather-report", json!({})).unwrap();
    assert!(!weather.is_error, "{}", weather.raw);
    let doc: serde_json::Value = serde_json::from_str(weather.text()).unwrap();
    assert_eq!(doc["cities"], 3, "{doc}");
    let readings = doc["readings"].as_array().unwrap();
    let cities: Vec<&str> = readings
        .iter()
        .map(|r| r["city"].as_str().unwrap())
        .collect();
    assert_eq!(cities, ["New York", "Chicago", "Los Angeles"], "{doc}");
    assert!(
        readings.iter().all(|r| r["temperature"].is_number()),
        "{doc}"
    );
    assert!(
        doc["first"]
            .as_str()
            .unwrap()
            .starts_with("Echo: New York is at "),
        "{doc}"
    );
    let debug = client
        .call("workflow_weather-report", json!({"_debug": true}))
        .unwrap();
    let debug: serde_json::Value = serde_json::from_str(debug.text()).unwrap();
    let steps = debug["steps"].as_array().unwrap();
    let status = |id: &str| {
        steps
            .iter()
            .find(|s| s["id"] == id)
            .map(|s| s["status"].clone())
            .unwrap_or_default()
    };
    assert_eq!(status("total"), "completed", "{debug}");
    assert_eq!(status("cloudy_check"), "completed", "{debug}");
    assert_eq!(debug["output"]["cities"], 3, "{debug}");

    // paginate through another workflow's pages, jq on a text result.
    let inventory = client
        .call("workflow_collect-inventory", json!({}))
        .unwrap();
    assert!(!inventory.is_error, "{}", inventory.raw);
    let doc: serde_json::Value = serde_json::from_str(inventory.text()).unwrap();
    assert_eq!(
        doc["items"],
        json!(["apple", "banana", "cherry", "damson", "elder"]),
        "{doc}"
    );
    assert_eq!(doc["pages"], 3, "{doc}");
    assert_eq!(doc["truncated"], false, "{doc}");
    assert_eq!(doc["count"], 5, "{doc}");

    // The run is on record.
    let id = doc["execution_id"].as_str().unwrap();
    let record = client
        .call("core_workflow_execution_get", json!({"execution_id": id}))
        .unwrap();
    let record: serde_json::Value = serde_json::from_str(record.text()).unwrap();
    assert_eq!(record["status"], "completed", "{record}");
    assert_eq!(record["workflow_name"], "collect-inventory", "{record}");
}

/// Every ```` ```yaml file=examples/... ```` block of the guides is that file, verbatim.
#[test]
fn guides_show_the_example_files_verbatim() {
    let mut checked = 0;
    for guide in ["docs/guides/workflows.md", "docs/guides/mcp-servers.md"] {
        let page = read_doc(guide).unwrap();
        for block in blocks(&page) {
            let Some(path) = block.value("file") else {
                continue;
            };
            let file = std::fs::read_to_string(workspace_root().join(path))
                .unwrap_or_else(|e| panic!("{guide}:{}: {path}: {e}", block.line));
            assert_eq!(
                block.body, file,
                "{guide}:{}: the block differs from {path}; copy the file into the guide",
                block.line
            );
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} example blocks found");
}
