//! `list_core_tools`: the `core_*` tools with full descriptions and (by default) schemas,
//! uncapped; the `filter_tools` engine with the legacy full-detail options.

use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde_json::Value;

use super::filter_tools::engine::{self, Options};
use super::index::Index;
use super::schema::{self, Arg};

/// The definition in `tools/list`.
pub(super) fn definition() -> Tool {
    schema::tool(
        "list_core_tools",
        "List core muster tools (built-in functionality separate from external MCP servers)",
        vec![
            Arg::optional(
                "include_schema",
                "boolean",
                "Whether to include full tool specifications with input schemas (default: true)",
            )
            .default(true),
        ],
    )
}

/// Tools matching `core*` (case-insensitive), full detail, no page limit.
pub(super) fn run(index: &Index, args: &JsonObject) -> CallToolResult {
    let include_schema = args
        .get("include_schema")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let options = Options {
        pattern: "core*".to_owned(),
        include_schema,
        summarize: false,
        limit: 0,
        ..Options::default()
    };
    engine::run(index, &options)
}
