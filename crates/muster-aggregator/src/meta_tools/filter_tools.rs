//! `filter_tools`: the cheap discovery tier. Filters by name glob, description substring and
//! labels, optionally ranks by a natural-language query (BM25F), and returns a bounded page
//! of one-line summaries; `include_schema` restores full descriptions and schemas.

pub(super) mod bm25;
pub(super) mod engine;
pub(super) mod glob;

use std::collections::BTreeMap;

use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde_json::Value;

use self::engine::{DEFAULT_LIMIT, Options};
use super::index::Index;
use super::reply;
use super::schema::{self, Arg};

/// The definition in `tools/list`.
pub(super) fn definition() -> Tool {
    schema::tool(
        "filter_tools",
        "Discover tools cheaply: filter by name pattern, description, or labels, optionally rank by a natural-language query, and get a bounded, summarised page. Full descriptions and schemas are omitted by default — use describe_tool for the authoritative detail of a chosen tool.",
        vec![
            Arg::optional(
                "pattern",
                "string",
                "Pattern to match against tool names (supports wildcards like *)",
            ),
            Arg::optional(
                "description_filter",
                "string",
                "Filter by description content (case-insensitive substring match)",
            ),
            Arg::optional(
                "query",
                "string",
                "Natural-language query. When set, matching tools are relevance-ranked (lexical BM25 over name + summary) and returned best-first with a score; non-matching tools are dropped.",
            ),
            Arg::optional(
                "labels",
                "object",
                "Label facets to scope discovery, as key=value pairs. A tool must carry every given label to match (e.g. {\"category\": \"observability\"}).",
            ),
            Arg::optional(
                "case_sensitive",
                "boolean",
                "Whether pattern matching should be case-sensitive (default: false)",
            )
            .default(false),
            Arg::optional(
                "include_schema",
                "boolean",
                "Whether to include full input schemas and full descriptions instead of one-line summaries (default: false for cheap discovery)",
            )
            .default(false),
            Arg::optional(
                "limit",
                "number",
                "Maximum number of tools to return in this page (default: 5). Increase to page through more matches.",
            )
            .default(DEFAULT_LIMIT),
            Arg::optional(
                "offset",
                "number",
                "Number of matching tools to skip before this page (default: 0)",
            )
            .default(0),
        ],
    )
}

/// Runs `filter_tools` with `args`.
pub(super) fn run(index: &Index, args: &JsonObject) -> CallToolResult {
    match parse(args) {
        Ok(options) => engine::run(index, &options),
        Err(message) => reply::error(message),
    }
}

/// The options `args` ask for; wrongly typed optional strings and booleans are ignored, a
/// bad `limit` or `offset` is an error.
fn parse(args: &JsonObject) -> Result<Options, &'static str> {
    let text = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let flag = |key: &str| args.get(key).and_then(Value::as_bool).unwrap_or(false);
    let include_schema = flag("include_schema");
    let labels: BTreeMap<String, String> = match args.get("labels") {
        Some(Value::Object(labels)) => labels
            .iter()
            .map(|(k, v)| (k.clone(), reply::go_text(v)))
            .collect(),
        _ => BTreeMap::new(),
    };
    let limit = match args.get("limit") {
        None => DEFAULT_LIMIT,
        Some(value) => {
            let limit = integer(value).ok_or("limit must be a number")?;
            if limit < 1 {
                return Err("limit must be at least 1");
            }
            limit
        }
    };
    let offset = match args.get("offset") {
        None => 0,
        Some(value) => {
            let offset = integer(value).ok_or("offset must be a number")?;
            if offset < 0 {
                return Err("offset must be at least 0");
            }
            offset
        }
    };
    Ok(Options {
        pattern: text("pattern"),
        description_filter: text("description_filter"),
        query: text("query"),
        labels,
        case_sensitive: flag("case_sensitive"),
        include_schema,
        // Asking for schemas asks for full detail: full descriptions instead of summaries.
        summarize: !include_schema,
        limit: usize::try_from(limit).unwrap_or(usize::MAX),
        offset: usize::try_from(offset).unwrap_or(usize::MAX),
    })
}

/// A JSON number truncated to an integer (the original's `int(float64)`).
fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64().map(|f| {
                // Saturating, like a float-to-int conversion that cannot overflow.
                #[allow(clippy::cast_possible_truncation)]
                let i = f.trunc() as i64;
                i
            })
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    /// `(limit, offset)` or the error message.
    type Paging = Result<(usize, usize), &'static str>;

    #[test]
    fn argument_rules() {
        let table: [(Value, Paging); 9] = [
            (json!({}), Ok((5, 0))),
            (json!({"limit": 2, "offset": 4}), Ok((2, 4))),
            (json!({"limit": 2.9, "offset": 1.5}), Ok((2, 1))),
            (json!({"limit": "2"}), Err("limit must be a number")),
            (json!({"limit": null}), Err("limit must be a number")),
            (json!({"limit": 0}), Err("limit must be at least 1")),
            (json!({"limit": 0.5}), Err("limit must be at least 1")),
            (json!({"offset": "x"}), Err("offset must be a number")),
            (json!({"offset": -1}), Err("offset must be at least 0")),
        ];
        for (input, expected) in table {
            let got = parse(&args(input.clone())).map(|o| (o.limit, o.offset));
            assert_eq!(got, expected, "{input}");
        }
    }

    #[test]
    fn include_schema_switches_to_full_descriptions_and_labels_are_text() {
        let o = parse(&args(
            json!({"include_schema": true, "labels": {"tier": 1, "a": "b"},
                                   "pattern": 7, "case_sensitive": "yes"}),
        ))
        .unwrap();
        assert!(o.include_schema && !o.summarize);
        assert_eq!(o.labels.get("tier").map(String::as_str), Some("1"));
        assert_eq!(o.pattern, "");
        assert!(!o.case_sensitive);
    }
}
