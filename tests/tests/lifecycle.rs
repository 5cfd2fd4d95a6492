//! Process lifecycle of `muster serve`: a SIGTERM stops every stdio MCP server it started,
//! a SIGKILL in the middle of a workflow leaves records that the next start reads and marks
//! as interrupted, and on one CPU (the single-threaded runtime) a slow call holds up no
//! other.

#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use muster_tests::{ConfigDir, McpClient, MusterConfig, ProcessId, deps, fixture};
use serde_json::{Value, json};
use tokio::time::Instant;

/// Waits up to `timeout` for `done`, polling.
fn eventually(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// server-everything (Node) and the Python sleeper, both over stdio.
fn two_stdio_servers() -> MusterConfig {
    let sleeper = fixture("py_sleeper.py").display().to_string();
    MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .stdio_server("sleeper", deps::python().unwrap(), [sleeper])
        .expect_tool("x_everything_echo")
        .expect_tool("x_sleeper_sleep")
}

#[test]
fn sigterm_stops_every_stdio_child() {
    let dir = two_stdio_servers().write().unwrap();
    let mut muster = dir.start().unwrap();
    let children = muster.children();
    assert!(
        children.len() >= 2,
        "one child per stdio server expected, found {children:?}"
    );
    let mut started: Vec<ProcessId> = children;
    started.extend(
        started
            .iter()
            .flat_map(ProcessId::descendants)
            .collect::<Vec<_>>(),
    );

    let status = muster.terminate(Duration::from_secs(10)).unwrap();
    assert!(status.success(), "muster exited with {status}");
    let gone = eventually(Duration::from_secs(2), || {
        started.iter().all(|p| !p.is_alive())
    });
    let alive: Vec<&ProcessId> = started.iter().filter(|p| p.is_alive()).collect();
    assert!(
        gone,
        "still running after muster stopped: {alive:?}\n{}",
        muster.log()
    );
}

#[test]
fn on_one_cpu_a_slow_call_holds_up_no_other_and_sigterm_stops_cleanly() {
    let dir = two_stdio_servers().write().unwrap();
    let mut muster = dir.start_on_one_cpu().unwrap();
    let url = muster.mcp_url();
    let slow = std::thread::spawn(move || {
        let client = McpClient::connect(&url).unwrap();
        client.call_ok("x_sleeper_sleep", json!({"seconds": 2}))
    });
    let client = McpClient::connect(&muster.mcp_url()).unwrap();
    // The sleep is under way once the sleeper has been asked; the echo answers before it.
    std::thread::sleep(Duration::from_millis(300));
    let echoed = client
        .call_ok("x_everything_echo", json!({"message": "one cpu"}))
        .unwrap();
    assert!(echoed.contains("one cpu"), "echo answered {echoed}");
    assert!(
        !slow.is_finished(),
        "the echo waited for the sleep: {}",
        muster.log()
    );
    let slept = slow.join().unwrap().unwrap();
    assert_eq!(slept, "slept 2.0s");
    let status = muster.terminate(Duration::from_secs(10)).unwrap();
    assert!(
        status.success(),
        "muster exited with {status}\n{}",
        muster.log()
    );
}

const NAP_WORKFLOW: &str = r#"
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: nap
spec:
  description: "Echo, then sleep long enough to be interrupted"
  steps:
    - id: hello
      tool: x_everything_echo
      args:
        message: "before the nap"
    - id: nap
      tool: x_sleeper_sleep
      args:
        seconds: 60
"#;

/// The execution list of `core_workflow_execution_list` with `args`.
fn executions(client: &McpClient, args: Value) -> Vec<Value> {
    let envelope = client.call("core_workflow_execution_list", args).unwrap();
    assert!(!envelope.is_error, "{}", envelope.raw);
    envelope.json().unwrap()["executions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn assert_every_record_is_json(dir: &ConfigDir) -> usize {
    let records = dir.path().join("workflow_executions");
    let mut count = 0;
    for entry in std::fs::read_dir(&records).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        if let Err(e) = serde_json::from_str::<Value>(&text) {
            panic!("{} is not JSON ({e}):\n{text}", path.display());
        }
        count += 1;
    }
    count
}

#[test]
fn sigkill_during_a_workflow_leaves_a_failed_interrupted_record() {
    let dir = two_stdio_servers()
        .workflow("nap", NAP_WORKFLOW)
        .expect_tool("workflow_nap")
        .write()
        .unwrap();
    let mut muster = dir.start().unwrap();

    // Start the run on its own session; the call never returns, muster dies under it.
    let url = muster.mcp_url();
    let run = std::thread::spawn(move || {
        let client = McpClient::connect(&url).unwrap();
        let _ = client.call("workflow_nap", json!({}));
    });

    // Wait until the run is recorded as in progress and its first step is done.
    let observer = muster.client().unwrap();
    let mut in_progress = Vec::new();
    let started = eventually(Duration::from_secs(20), || {
        in_progress = executions(&observer, json!({"status": "inprogress"}));
        !in_progress.is_empty()
    });
    assert!(
        started,
        "the run never showed as in progress\n{}",
        muster.log()
    );
    let id = in_progress[0]["execution_id"].as_str().unwrap().to_owned();
    assert_eq!(in_progress[0]["workflow_name"], "nap");
    std::thread::sleep(Duration::from_millis(500));

    let status = muster.kill().unwrap();
    assert!(!status.success(), "SIGKILL should end muster: {status}");
    run.join().unwrap();
    assert!(assert_every_record_is_json(&dir) >= 1);

    // The next start on the same directory marks the run failed as interrupted.
    drop(muster);
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    let all = executions(&client, json!({"workflow_name": "nap"}));
    let record = all
        .iter()
        .find(|e| e["execution_id"] == id.as_str())
        .unwrap_or_else(|| panic!("execution {id} not listed: {all:?}"));
    assert_eq!(record["status"], "failed", "{record}");
    let error = record["error"].as_str().unwrap_or_default();
    assert!(error.contains("interrupted"), "error: {error:?}");

    let full = client
        .call("core_workflow_execution_get", json!({"execution_id": id}))
        .unwrap();
    assert!(!full.is_error, "{}", full.raw);
    let full = full.json().unwrap();
    assert_eq!(full["status"], "failed", "{full}");
    assert!(full["completed_at"].is_string(), "{full}");

    assert!(assert_every_record_is_json(&dir) >= 1);
}
