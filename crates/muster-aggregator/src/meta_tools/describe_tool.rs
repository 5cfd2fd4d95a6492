//! `describe_tool`: one tool's name, full description and input schema.

use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde::Serialize;
use serde_json::Value;

use super::reply;
use super::schema::{self, Arg};
use crate::registry::AggregatedCatalog;

/// The definition in `tools/list`.
pub(super) fn definition() -> Tool {
    schema::tool(
        "describe_tool",
        "Get detailed information about a specific tool including its input schema",
        vec![Arg::required(
            "name",
            "string",
            "Name of the tool to describe",
        )],
    )
}

/// Keys in alphabetical order, as the original prints its map.
#[derive(Serialize)]
struct Response<'a> {
    description: &'a str,
    #[serde(rename = "inputSchema")]
    input_schema: &'a JsonObject,
    name: &'a str,
}

/// `{"description", "inputSchema", "name"}` of the tool `name`.
pub(super) fn run(catalog: &AggregatedCatalog, args: &JsonObject) -> CallToolResult {
    let Some(name) = args
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    else {
        return reply::error("name argument is required");
    };
    let Some(tool) = catalog.tool(name) else {
        return reply::error(format!("Tool not found: {name}"));
    };
    reply::json(&Response {
        description: tool.description(),
        input_schema: tool.input_schema(),
        name: tool.name(),
    })
}
