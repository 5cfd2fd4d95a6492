//! Editing the config directory while `muster serve` runs: an MCPServer file and a Workflow
//! file are added, changed and removed, and a client sees the server's tools and the
//! `workflow_<name>` tool appear, change and disappear, told by
//! `notifications/tools/list_changed` on its standalone stream. Broken files are skipped
//! without taking the others down.

#![allow(missing_docs, clippy::unwrap_used)]

use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use muster_tests::{McpClient, MusterConfig, deps, eventually};
use serde_json::{Value, json};

/// How long a change on disk may take to show. The watch reacts within about a second (its
/// debounce) and a new server-everything takes a few seconds to start on a loaded machine;
/// the bound stays below the stores' 30 s full resync, so only the watch can meet it.
const SHOWS_WITHIN: Duration = Duration::from_secs(25);

fn server_file(name: &str, tool_prefix: Option<&str>) -> String {
    let mut spec = json!({
        "type": "stdio",
        "autoStart": true,
        "command": deps::server_everything().unwrap().display().to_string(),
        "args": ["stdio"],
    });
    if let Some(prefix) = tool_prefix {
        spec["toolPrefix"] = json!(prefix);
    }
    muster_tests::mcp_server_document(name, spec)
}

fn workflow_file(name: &str, description: &str, message: &str) -> String {
    format!(
        "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: {name}\n\
         spec:\n  description: \"{description}\"\n  steps:\n    - id: say\n      \
         tool: x_steady_echo\n      output: true\n      args:\n        message: \"{message}\"\n"
    )
}

/// Writes `contents` to `path` the way editors do: a temporary file renamed over it.
fn write(path: &Path, contents: &str) {
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, contents).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Forgets the notifications received so far.
fn drain(notifications: &Receiver<Value>) {
    while notifications.try_recv().is_ok() {}
}

/// Waits for a `notifications/tools/list_changed`.
fn list_changed(notifications: &Receiver<Value>, after: &str) {
    let deadline = tokio::time::Instant::now() + SHOWS_WITHIN;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match notifications.recv_timeout(left) {
            Ok(m) if m["method"] == "notifications/tools/list_changed" => return,
            Ok(_) => {}
            Err(e) => panic!("no tools/list_changed after {after}: {e}"),
        }
    }
}

/// Waits until `list_tools` has every tool of `present` and none of `absent`.
fn tools_until(client: &McpClient, present: &[&str], absent: &[&str]) -> Vec<String> {
    client
        .wait_for_tools(present, absent, SHOWS_WITHIN)
        .unwrap()
}

fn has(tools: &[String], name: &str) -> bool {
    tools.iter().any(|t| t == name)
}

/// What the `describe_tool` meta-tool says of `tool`.
fn description_of(client: &McpClient, tool: &str) -> String {
    let result = client
        .call_tool("describe_tool", json!({"name": tool}))
        .unwrap();
    assert_ne!(result["isError"], true, "{result}");
    result.to_string()
}

#[test]
fn servers_and_workflows_follow_their_files() {
    let dir = MusterConfig::new()
        .file("mcpservers/steady.yaml", server_file("steady", None))
        .expect_tool("x_steady_echo")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    let notifications = client.listen().unwrap();
    let servers = dir.path().join("mcpservers");
    let workflows = dir.path().join("workflows");
    std::fs::create_dir_all(&workflows).unwrap();

    // A server file appears: its tools follow.
    drain(&notifications);
    write(&servers.join("added.yaml"), &server_file("added", None));
    list_changed(&notifications, "adding added.yaml");
    tools_until(&client, &["x_added_echo"], &[]);
    let echoed = client
        .call("x_added_echo", json!({"message": "new"}))
        .unwrap();
    assert_eq!(echoed.text(), "Echo: new", "{}", echoed.raw);

    // It changes: the tools are renamed.
    drain(&notifications);
    write(
        &servers.join("added.yaml"),
        &server_file("added", Some("renamed")),
    );
    list_changed(&notifications, "changing added.yaml");
    tools_until(&client, &["x_renamed_echo"], &["x_added_echo"]);

    // A workflow file appears, changes, and its tool follows.
    drain(&notifications);
    write(
        &workflows.join("hello.yaml"),
        &workflow_file("hello", "first version", "one"),
    );
    list_changed(&notifications, "adding hello.yaml");
    tools_until(&client, &["workflow_hello"], &[]);
    let run = client.call("workflow_hello", json!({})).unwrap();
    assert!(!run.is_error, "{}", run.raw);
    assert!(run.text().contains("Echo: one"), "{}", run.text());

    drain(&notifications);
    write(
        &workflows.join("hello.yaml"),
        &workflow_file("hello", "second version", "two"),
    );
    list_changed(&notifications, "changing hello.yaml");
    eventually("the new description", SHOWS_WITHIN, || {
        description_of(&client, "workflow_hello")
            .contains("second version")
            .then_some(())
    })
    .unwrap();
    let run = client.call("workflow_hello", json!({})).unwrap();
    assert!(run.text().contains("Echo: two"), "{}", run.text());

    // Broken files are skipped; everything else keeps working, and later edits still count.
    write(
        &servers.join("broken.yaml"),
        "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nspec: [not, a, mapping\n",
    );
    write(
        &workflows.join("broken.yaml"),
        "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: broken\n\
         spec:\n  steps:\n    - id: nothing-to-do\n",
    );
    write(
        &workflows.join("later.yaml"),
        &workflow_file("later", "added after the broken files", "late"),
    );
    let tools = tools_until(&client, &["workflow_later"], &[]);
    assert!(!has(&tools, "workflow_broken"), "{tools:?}");
    for tool in ["x_steady_echo", "x_renamed_echo", "workflow_hello"] {
        assert!(has(&tools, tool), "{tool} went away: {tools:?}");
    }
    let run = client.call("workflow_hello", json!({})).unwrap();
    assert!(run.text().contains("Echo: two"), "{}", run.text());
    let echoed = client
        .call("x_steady_echo", json!({"message": "still"}))
        .unwrap();
    assert_eq!(echoed.text(), "Echo: still", "{}", echoed.raw);
    eventually("warnings naming both broken files", SHOWS_WITHIN, || {
        let log = muster.log();
        (log.contains("mcpservers/broken.yaml") && log.contains("workflows/broken.yaml"))
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", muster.log()));

    // The files go: so do the server's tools and the workflow tool.
    drain(&notifications);
    std::fs::remove_file(servers.join("added.yaml")).unwrap();
    list_changed(&notifications, "removing added.yaml");
    tools_until(&client, &[], &["x_renamed_echo"]);
    drain(&notifications);
    std::fs::remove_file(workflows.join("hello.yaml")).unwrap();
    list_changed(&notifications, "removing hello.yaml");
    let tools = tools_until(&client, &[], &["workflow_hello"]);
    assert!(has(&tools, "x_steady_echo"), "{tools:?}");
    assert!(has(&tools, "workflow_later"), "{tools:?}");
}
