//! The workflows of `examples/config` run against a real server-everything, so the example a
//! reader starts with keeps working.

#![allow(missing_docs, clippy::unwrap_used)]

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
}
