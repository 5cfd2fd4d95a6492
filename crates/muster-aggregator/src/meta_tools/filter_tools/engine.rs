//! The filter, rank, paginate and project engine shared by `filter_tools` (discovery) and
//! `list_core_tools` (legacy full-detail listing).

use std::collections::BTreeMap;

use rmcp::model::{CallToolResult, JsonObject};
use serde::Serialize;
use serde_json::Value;

use super::bm25::{self, Candidates};
use super::glob::{self, Pattern};
use crate::meta_tools::index::Index;
use crate::meta_tools::reply;
use muster_gotmpl::strconv::quote as go_quote;

/// The page size `filter_tools` uses when the caller gives none.
pub(in crate::meta_tools) const DEFAULT_LIMIT: i64 = 5;

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
    #[serde(skip_serializing_if = "str::is_empty")]
    summary: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: &'a BTreeMap<String, String>,
    #[serde(rename = "inputSchema", skip_serializing_if = "Option::is_none")]
    input_schema: Option<&'a JsonObject>,
}

/// Runs the query against the snapshot of `index`.
pub(in crate::meta_tools) fn run(index: &Index, options: &Options) -> CallToolResult {
    let tools = index.catalog().tools();
    if tools.is_empty() {
        return reply::text("No tools available to filter");
    }
    let pattern = match compile(options) {
        Ok(pattern) => pattern,
        Err(e) => {
            return reply::error(format!(
                "Invalid pattern {}: {e}",
                go_quote(&options.pattern)
            ));
        }
    };

    let case_sensitive = options.case_sensitive;
    let needle = fold(&options.description_filter, case_sensitive);
    let mut buffer = Vec::new();
    let matched: Vec<usize> = tools
        .iter()
        .zip(index.tools())
        .enumerate()
        .filter(|(_, (tool, text))| {
            pattern.as_ref().is_none_or(|p| {
                let name = if case_sensitive {
                    tool.name()
                } else {
                    &text.name_lower
                };
                p.matches(name, &mut buffer)
            })
        })
        .filter(|(_, (tool, text))| {
            needle.is_empty() || {
                let description = if case_sensitive {
                    tool.description()
                } else {
                    &text.description_lower
                };
                description.contains(&needle)
            }
        })
        .filter(|(_, (tool, _))| {
            options
                .labels
                .iter()
                .all(|(k, v)| tool.labels().get(k) == Some(v))
        })
        .map(|(i, _)| i)
        .collect();

    let ordered: Vec<(usize, Option<f64>)> = if options.query.is_empty() {
        matched.into_iter().map(|i| (i, None)).collect()
    } else {
        // IDF and average lengths are taken over what the filters kept.
        let kept = (matched.len() < tools.len()).then(|| {
            let mut kept = vec![false; tools.len()];
            for &i in &matched {
                kept[i] = true;
            }
            kept
        });
        let candidates = kept.as_deref().map_or(Candidates::All, Candidates::Only);
        // Only the requested page and what it skips need their order.
        let ordered = if options.limit > 0 {
            options.offset.saturating_add(options.limit)
        } else {
            usize::MAX
        };
        bm25::rank(&options.query, index.corpus(), candidates, ordered)
            .into_iter()
            .map(|(i, score)| (i, Some(score)))
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
        .map(|&(i, score)| (&tools[i], &index.tools()[i], score))
        .map(|(tool, text, score)| Entry {
            name: tool.name(),
            description: if options.summarize {
                ""
            } else {
                tool.description()
            },
            summary: if options.summarize {
                text.summary.as_str()
            } else {
                ""
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

/// The compiled pattern (lowercase unless case-sensitive), `None` when empty. The error
/// reports the pattern as given.
fn compile(options: &Options) -> Result<Option<Pattern>, glob::BadPattern> {
    if options.pattern.is_empty() {
        return Ok(None);
    }
    Pattern::new(&options.pattern)?;
    Pattern::new(&fold(&options.pattern, options.case_sensitive)).map(Some)
}

fn fold(text: &str, case_sensitive: bool) -> String {
    if case_sensitive {
        text.to_owned()
    } else {
        text.to_lowercase()
    }
}
