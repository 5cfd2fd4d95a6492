//! Every state and status the code can report is documented where users look it up: the
//! MCPServer states in the MCP servers guide's lifecycle table, the service states in the
//! tool reference, the execution and step statuses in the workflows guide.

use std::path::PathBuf;

use muster_aggregator::backend::ServiceState;
use muster_core::resource::execution::{ExecutionStatus, StepStatus};
use muster_core::resource::mcp_server::McpServerState;

fn page(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("docs")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The states named in backticks in the first column of `page`'s table rows.
fn table_states(page: &str) -> Vec<String> {
    page.lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// The names `page` never mentions in backticks.
fn missing_in(page: &str, names: impl IntoIterator<Item = String>) -> Vec<String> {
    names
        .into_iter()
        .filter(|name| !page.contains(&format!("`{name}`")))
        .collect()
}

#[test]
fn every_mcpserver_state_has_a_row_in_the_lifecycle_table() {
    let guide = page("guides/mcp-servers.md");
    let lifecycle = guide
        .split_once("## Lifecycle")
        .map(|(_, rest)| rest)
        .expect("the MCP servers guide has a Lifecycle section");
    let documented = table_states(lifecycle);
    let states: Vec<String> = McpServerState::ALL
        .iter()
        .map(|s| s.as_str().to_owned())
        .collect();
    let missing: Vec<&String> = states.iter().filter(|s| !documented.contains(s)).collect();
    assert!(missing.is_empty(), "states without a row: {missing:?}");
    let serialized: Vec<String> = McpServerState::ALL
        .iter()
        .map(|s| serde_json::to_value(s).map(|v| v.as_str().unwrap_or_default().to_owned()))
        .collect::<Result<_, _>>()
        .expect("states serialize");
    assert_eq!(
        serialized, states,
        "status.state is written as the guide spells it"
    );
}

#[test]
fn every_service_state_is_in_the_tool_reference() {
    let reference = page("reference/tools.md");
    let missing = missing_in(
        &reference,
        ServiceState::ALL.iter().map(|s| s.as_str().to_owned()),
    );
    assert!(
        missing.is_empty(),
        "service states not documented: {missing:?}"
    );
}

#[test]
fn every_execution_and_step_status_is_in_the_workflows_guide() {
    let guide = page("guides/workflows.md");
    let statuses = ExecutionStatus::ALL
        .iter()
        .map(|s| s.as_str().to_owned())
        .chain(StepStatus::ALL.iter().map(|s| s.as_str().to_owned()));
    let missing = missing_in(&guide, statuses);
    assert!(missing.is_empty(), "statuses not documented: {missing:?}");
}
