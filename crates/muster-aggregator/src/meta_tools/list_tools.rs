//! `list_tools`: every tool the caller can reach through `call_tool`, name and description.

use std::sync::Arc;

use rmcp::model::{CallToolResult, Tool};
use serde::Serialize;

use super::index::Index;
use super::{reply, schema};
use crate::registry::AggregatedCatalog;

/// The definition in `tools/list`.
pub(super) fn definition() -> Tool {
    schema::tool(
        "list_tools",
        "List all available tools from connected MCP servers",
        vec![],
    )
}

#[derive(Serialize)]
struct Response<'a> {
    tools: Vec<Entry<'a>>,
}

#[derive(Serialize)]
struct Entry<'a> {
    name: &'a str,
    description: &'a str,
}

/// `{"tools": [{"name", "description"}, ...]}` in catalogue order; rendered once per
/// snapshot.
pub(super) fn run(index: &Index) -> CallToolResult {
    reply::text(index.list_tools(render))
}

/// [`run`]'s result encoded as JSON (without `resultType`), once per snapshot.
pub(super) fn encoded(index: &Index) -> Arc<str> {
    let encode = |text: &str| {
        let mut result = reply::text(text);
        result.result_type = None;
        serde_json::to_string(&result).unwrap_or_default().into()
    };
    index.list_tools_encoded(encode, render)
}

fn render(catalog: &AggregatedCatalog) -> String {
    let tools = catalog
        .tools()
        .iter()
        .map(|t| Entry {
            name: t.name(),
            description: t.description(),
        })
        .collect();
    serde_json::to_string_pretty(&Response { tools }).unwrap_or_default()
}
