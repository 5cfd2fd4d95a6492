//! The `core_workflow_*` tools through `call_tool` on a real `muster serve` whose workflows
//! call a real server-everything: validate, create, get, list, available, update, delete and
//! the execution tools, with the result shapes and error texts of docs/reference/tools.md.

#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use muster_tests::{McpClient, MusterConfig, deps};
use serde_json::{Value, json};

const RESOURCE: &str = "workflows.muster.giantswarm.io";

fn muster_with_everything() -> MusterConfig {
    MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .expect_tool("x_everything_echo")
}

/// A successful call's inner text.
fn ok(client: &McpClient, tool: &str, args: Value) -> String {
    client.call_ok(tool, args).unwrap()
}

/// A successful call's inner JSON.
fn ok_json(client: &McpClient, tool: &str, args: Value) -> Value {
    client.call_ok_json(tool, args).unwrap()
}

/// A failed call's inner text.
fn failed(client: &McpClient, tool: &str, args: Value) -> String {
    client.call_err(tool, args).unwrap()
}

/// Waits until `list_tools` has (`present`) or lacks `tool`. The aggregated catalog follows a
/// workflow change a moment after the `core_workflow_*` tool answered.
fn wait_for_tool(client: &McpClient, tool: &str, present: bool) {
    let (present, absent): (&[&str], &[&str]) = if present {
        (&[tool], &[])
    } else {
        (&[], &[tool])
    };
    client
        .wait_for_tools(present, absent, Duration::from_secs(10))
        .unwrap();
}

/// The `greet` workflow: one echo of `message` with the `who` argument.
fn greet(message: &str) -> Value {
    json!({
        "name": "greet",
        "description": "Say something to someone",
        "args": {"who": {"type": "string", "required": true}},
        "steps": [{"id": "say", "tool": "x_everything_echo", "output": true, "args": {"message": format!("{message} {{{{ .input.who }}}}")}}],
    })
}

#[test]
fn workflows_are_validated_created_read_updated_and_deleted() {
    let dir = muster_with_everything().write().unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    let file = dir.path().join("workflows/greet.yaml");

    // Validate: accepted, rejected with the rule, unknown arguments named.
    assert_eq!(
        ok(&client, "core_workflow_validate", greet("hello")),
        "Validation successful for workflow greet"
    );
    let no_tool = json!({"name": "greet", "steps": [{"id": "a"}]});
    assert_eq!(
        failed(&client, "core_workflow_validate", no_tool.clone()),
        "Validation failed: validation failed: steps: step 0 (a): one of tool, forEach, or parallel is required"
    );
    let mut extra = greet("hello");
    extra["colour"] = json!("blue");
    let unknown = failed(&client, "core_workflow_validate", extra);
    assert!(
        unknown.starts_with("unknown args: [colour]. Allowed args: ["),
        "{unknown}"
    );
    assert!(!file.exists(), "validate wrote {}", file.display());

    // Create: the tool is there at once, the file is written; a second create and a bad
    // definition fail.
    assert_eq!(
        ok(&client, "core_workflow_create", greet("hello")),
        "Workflow created successfully"
    );
    // Callable at once, without waiting for the catalog to be rebuilt in the background.
    let first = client.call("workflow_greet", json!({"who": "bo"})).unwrap();
    assert!(!first.is_error, "{}", first.raw);
    assert!(first.text().contains("hello bo"), "{}", first.text());
    assert!(file.exists(), "{} not written", file.display());
    assert_eq!(
        failed(&client, "core_workflow_create", greet("hello")),
        format!(
            "Tool execution failed: failed to create workflow: {RESOURCE} \"greet\" already exists"
        )
    );
    assert_eq!(
        failed(&client, "core_workflow_create", no_tool),
        "Tool execution failed: failed to create workflow: validation failed: steps: step 0 (a): one of tool, forEach, or parallel is required"
    );
    assert_eq!(
        failed(&client, "core_workflow_create", json!({"steps": []})),
        "name argument is required"
    );

    // Get: the definition as JSON and as YAML.
    let got = ok_json(&client, "core_workflow_get", json!({"name": "greet"}));
    assert_eq!(got["workflow"]["name"], "greet", "{got}");
    assert_eq!(got["workflow"]["description"], "Say something to someone");
    assert_eq!(got["workflow"]["steps"][0]["id"], "say");
    assert_eq!(got["workflow"]["steps"][0]["tool"], "x_everything_echo");
    assert_eq!(got["workflow"]["available"], true);
    let yaml = got["yaml"].as_str().unwrap();
    assert!(
        yaml.contains("kind: Workflow") && yaml.contains("x_everything_echo"),
        "{yaml}"
    );
    assert_eq!(
        failed(&client, "core_workflow_get", json!({"name": "nope"})),
        "Failed to get workflow: workflow nope not found"
    );

    // Update: a full replacement the next run uses; a missing workflow is named.
    assert_eq!(
        ok(&client, "core_workflow_update", greet("goodbye")),
        "Workflow 'greet' updated successfully"
    );
    let run = client
        .call("workflow_greet", json!({"who": "ann"}))
        .unwrap();
    assert!(!run.is_error, "{}", run.raw);
    assert!(run.text().contains("goodbye ann"), "{}", run.text());
    let mut missing = greet("x");
    missing["name"] = json!("nope");
    assert_eq!(
        failed(&client, "core_workflow_update", missing),
        format!("Failed to update workflow: {RESOURCE} \"nope\" not found")
    );

    // Delete: the tool and the file go; a second delete names the workflow.
    assert_eq!(
        ok(&client, "core_workflow_delete", json!({"name": "greet"})),
        "Workflow 'greet' deleted successfully"
    );
    wait_for_tool(&client, "workflow_greet", false);
    assert!(!file.exists(), "{} left behind", file.display());
    assert_eq!(
        failed(&client, "core_workflow_delete", json!({"name": "greet"})),
        format!(
            "Failed to delete workflow: failed to delete workflow: {RESOURCE} \"greet\" not found"
        )
    );
}

#[test]
fn list_and_available_say_whether_every_tool_a_workflow_calls_is_reachable() {
    let dir = muster_with_everything().write().unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    ok(&client, "core_workflow_create", greet("hello"));
    let orphan = json!({
        "name": "orphan",
        "steps": [{"id": "call", "tool": "x_nowhere_missing"}],
    });
    ok(&client, "core_workflow_create", orphan);

    let listed = ok_json(&client, "core_workflow_list", json!({}));
    assert_eq!(
        listed,
        json!({"workflows": [
            {"name": "greet", "available": true, "description": "Say something to someone"},
            {"name": "orphan", "available": false},
        ]})
    );
    assert_eq!(
        ok_json(&client, "core_workflow_available", json!({"name": "greet"})),
        json!({"name": "greet", "available": true})
    );
    assert_eq!(
        ok_json(
            &client,
            "core_workflow_available",
            json!({"name": "orphan"})
        ),
        json!({"name": "orphan", "available": false})
    );
    assert_eq!(
        failed(&client, "core_workflow_available", json!({"name": "nope"})),
        "workflow nope not found"
    );
    assert_eq!(
        failed(&client, "core_workflow_available", json!({})),
        "name argument is required"
    );
}

#[test]
fn executions_are_listed_and_read_whole_without_steps_or_by_step() {
    let dir = muster_with_everything().write().unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    ok(&client, "core_workflow_create", greet("hello"));
    wait_for_tool(&client, "workflow_greet", true);
    let run = client
        .call("workflow_greet", json!({"who": "bob"}))
        .unwrap();
    assert!(!run.is_error, "{}", run.raw);
    let id = run.json().unwrap()["execution_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // The list, filtered by workflow and status, paged.
    let page = ok_json(
        &client,
        "core_workflow_execution_list",
        json!({"workflow_name": "greet"}),
    );
    assert_eq!(page["total"], 1, "{page}");
    assert_eq!(
        (page["limit"].clone(), page["offset"].clone()),
        (json!(50), json!(0))
    );
    assert_eq!(page["has_more"], false);
    let entry = &page["executions"][0];
    assert_eq!(entry["execution_id"], id.as_str());
    assert_eq!(entry["workflow_name"], "greet");
    assert_eq!(entry["status"], "completed");
    assert_eq!(entry["step_count"], 1);
    assert!(
        entry["started_at"].is_string() && entry["duration_ms"].is_number(),
        "{entry}"
    );
    let none = ok_json(
        &client,
        "core_workflow_execution_list",
        json!({"workflow_name": "greet", "status": "failed"}),
    );
    assert_eq!(none["total"], 0, "{none}");
    assert_eq!(none["executions"], json!([]));
    assert_eq!(
        failed(&client, "core_workflow_execution_list", json!({"limit": 0})),
        "limit must be at least 1 (minimum value)"
    );
    assert_eq!(
        failed(
            &client,
            "core_workflow_execution_list",
            json!({"status": "done"})
        ),
        "status must be one of the enum values: inprogress, completed, failed"
    );

    // The whole record, the record without steps, one step.
    let record = ok_json(
        &client,
        "core_workflow_execution_get",
        json!({"execution_id": id}),
    );
    assert_eq!(record["workflow_name"], "greet", "{record}");
    assert_eq!(record["status"], "completed");
    assert_eq!(record["input"], json!({"who": "bob"}));
    let step = &record["steps"][0];
    assert_eq!(step["step_id"], "say", "{record}");
    assert_eq!(step["tool"], "x_everything_echo");
    assert_eq!(step["status"], "completed");
    assert_eq!(step["input"], json!({"message": "hello bob"}));
    let bare = ok_json(
        &client,
        "core_workflow_execution_get",
        json!({"execution_id": id, "include_steps": false}),
    );
    assert!(bare.get("steps").is_none(), "{bare}");
    assert_eq!(bare["status"], "completed");
    let one = ok_json(
        &client,
        "core_workflow_execution_get",
        json!({"execution_id": id, "step_id": "say"}),
    );
    assert_eq!(one["steps"].as_array().map(Vec::len), Some(1), "{one}");
    assert_eq!(one["steps"][0]["step_id"], "say");

    assert_eq!(
        failed(
            &client,
            "core_workflow_execution_get",
            json!({"execution_id": id, "step_id": "nope"})
        ),
        format!("Failed to get execution: step nope not found in execution {id}")
    );
    assert_eq!(
        failed(
            &client,
            "core_workflow_execution_get",
            json!({"execution_id": "00000000-0000-0000-0000-000000000000"})
        ),
        "Failed to get execution: execution 00000000-0000-0000-0000-000000000000 not found"
    );
    assert_eq!(
        failed(&client, "core_workflow_execution_get", json!({})),
        "execution_id is required"
    );

    // Deleting the workflow keeps its records.
    ok(&client, "core_workflow_delete", json!({"name": "greet"}));
    let kept = ok_json(
        &client,
        "core_workflow_execution_get",
        json!({"execution_id": id}),
    );
    assert_eq!(kept["workflow_name"], "greet", "{kept}");
}
