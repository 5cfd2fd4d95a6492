//! The filter, rank, paginate and project engine shared by `filter_tools` (discovery) and
//! `list_core_tools` (legacy full-detail listing).

use std::collections::BTreeMap;

use rmcp::model::{CallToolResult, JsonObject};
use serde::Serialize;
use serde_json::Value;

use super::bm25::{self, Doc};
use super::glob;
use crate::meta_tools::reply;
use crate::naming::go_quote;
use crate::registry::{AggregatedCatalog, ExposedTool};

/// The page size `filter_tools` uses when the caller gives none.
pub(in crate::meta_tools) const DEFAULT_LIMIT: i64 = 5;

/// Summaries are cut to this many characters (then `...` is appended).
const SUMMARY_MAX_CHARS: usize = 120;

/// One discovery query.
#[derive(Debug, Clone, Default)]
pub(in crate::meta_tools) struct Options {
    /// Glob over tool names; empty matches all.
    pub(in crate::meta_tools) pattern: String,
    /// Substring of the description; empty matches all.
    pub(in crate::meta_tools) description_filter: String,
    /// Natural-language query; when set, results are ranked and non-matches dropped.
    pub(in crate::meta_tools) query: String,
    /// Labels every result must carry with equal values.
    pub(in crate::meta_tools) labels: BTreeMap<String, String>,
    /// Match pattern and description case-sensitively.
    pub(in crate::meta_tools) case_sensitive: bool,
    /// Include input schemas.
    pub(in crate::meta_tools) include_schema: bool,
    /// One-line summaries instead of full descriptions.
    pub(in crate::meta_tools) summarize: bool,
    /// Page size; 0 means no limit.
    pub(in crate::meta_tools) limit: usize,
    /// Matches skipped before the page.
    pub(in crate::meta_tools) offset: usize,
}

#[derive(Serialize)]
struct Response<'a> {
    filters: Filters<'a>,
    total_tools: usize,
    filtered_count: usize,
    total: usize,
    truncated: bool,
    tools: Vec<Entry<'a>>,
}

#[derive(Serialize)]
struct Filters<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    pattern: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description_filter: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    query: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: &'a BTreeMap<String, String>,
    case_sensitive: bool,
    include_schema: bool,
    limit: usize,
    offset: usize,
}

#[derive(Serialize)]
struct Entry<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    #[serde(skip_serializing_if = "String::is_empty")]
    summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: &'a BTreeMap<String, String>,
    #[serde(rename = "inputSchema", skip_serializing_if = "Option::is_none")]
    input_schema: Option<&'a JsonObject>,
}

/// Runs the query against `catalog`.
pub(in crate::meta_tools) fn run(catalog: &AggregatedCatalog, options: &Options) -> CallToolResult {
    let tools = catalog.tools();
    if tools.is_empty() {
        return reply::text("No tools available to filter");
    }
    if let Err(e) = glob::validate(&options.pattern) {
        return reply::error(format!(
            "Invalid pattern {}: {e}",
            go_quote(&options.pattern)
        ));
    }

    let pattern = fold(&options.pattern, options.case_sensitive);
    let needle = fold(&options.description_filter, options.case_sensitive);
    let matched: Vec<&ExposedTool> = tools
        .iter()
        .filter(|t| {
            pattern.is_empty() || glob::matches(&pattern, &fold(t.name(), options.case_sensitive))
        })
        .filter(|t| {
            needle.is_empty() || fold(t.description(), options.case_sensitive).contains(&needle)
        })
        .filter(|t| {
            options
                .labels
                .iter()
                .all(|(k, v)| t.labels().get(k) == Some(v))
        })
        .collect();

    let ordered: Vec<(&ExposedTool, Option<f64>)> = if options.query.is_empty() {
        matched.into_iter().map(|t| (t, None)).collect()
    } else {
        let firsts: Vec<String> = matched
            .iter()
            .map(|t| first_line(t.description()))
            .collect();
        let docs: Vec<Doc<'_>> = matched
            .iter()
            .zip(&firsts)
            .map(|(t, first)| Doc {
                name: t.name(),
                description: first,
            })
            .collect();
        bm25::rank(&options.query, &docs)
            .into_iter()
            .map(|(i, score)| (matched[i], Some(score)))
            .collect()
    };

    let total = ordered.len();
    let start = options.offset.min(total);
    let end = if options.limit > 0 {
        start.saturating_add(options.limit).min(total)
    } else {
        total
    };
    let page: Vec<Entry<'_>> = ordered[start..end]
        .iter()
        .map(|&(tool, score)| Entry {
            name: tool.name(),
            description: if options.summarize {
                ""
            } else {
                tool.description()
            },
            summary: if options.summarize {
                summary(tool.description())
            } else {
                String::new()
            },
            score: score.map(|s| reply::number(bm25::round_score(s))),
            labels: tool.labels(),
            input_schema: options.include_schema.then(|| &**tool.input_schema()),
        })
        .collect();

    reply::json(&Response {
        filters: Filters {
            pattern: &options.pattern,
            description_filter: &options.description_filter,
            query: &options.query,
            labels: &options.labels,
            case_sensitive: options.case_sensitive,
            include_schema: options.include_schema,
            limit: options.limit,
            offset: options.offset,
        },
        total_tools: tools.len(),
        filtered_count: page.len(),
        total,
        truncated: end < total,
        tools: page,
    })
}

fn fold(text: &str, case_sensitive: bool) -> String {
    if case_sensitive {
        text.to_owned()
    } else {
        text.to_lowercase()
    }
}

/// The first line of `description`, trimmed.
fn first_line(description: &str) -> String {
    description
        .split('\n')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The first line, trimmed, cut to 120 characters (trimmed again) plus `...` when longer.
pub(in crate::meta_tools) fn summary(description: &str) -> String {
    let line = first_line(description);
    if line.chars().count() <= SUMMARY_MAX_CHARS {
        return line;
    }
    let cut: String = line.chars().take(SUMMARY_MAX_CHARS).collect();
    format!("{}...", cut.trim())
}

#[cfg(test)]
mod tests {
    use super::summary;

    #[test]
    fn summaries() {
        let long = "x".repeat(130);
        let table = [
            ("One line.", "One line.".to_owned()),
            ("  First.  \nSecond line", "First.".to_owned()),
            ("", String::new()),
            (long.as_str(), format!("{}...", "x".repeat(120))),
            (
                &*format!("{} tail", "y".repeat(119)),
                format!("{}...", "y".repeat(119)),
            ),
        ];
        for (input, expected) in table {
            assert_eq!(summary(input), expected, "{input}");
        }
    }
}
