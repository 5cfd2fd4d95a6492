//! Discovery data derived from one catalog snapshot: every tool's lowercase texts and summary,
//! the search corpus, and the rendered `list_tools` answer. Built once per snapshot on first
//! use and shared by every call on that snapshot, so discovery calls do no per-tool text
//! work beyond matching.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::filter_tools::bm25::Corpus;
use super::summary::{first_line, summary};
use crate::registry::AggregatedCatalog;

/// Derived data of one snapshot; `tools()[i]` belongs to `catalog().tools()[i]`.
#[derive(Debug)]
pub(super) struct Index {
    catalog: Arc<AggregatedCatalog>,
    tools: Vec<ToolText>,
    corpus: Corpus,
    list_tools: OnceLock<String>,
    /// The `list_tools` result as JSON.
    list_tools_encoded: OnceLock<Arc<str>>,
}

/// The texts discovery reads for one tool.
#[derive(Debug)]
pub(super) struct ToolText {
    /// The exposed name, lowercase.
    pub(super) name_lower: String,
    /// The full description, lowercase.
    pub(super) description_lower: String,
    /// The one-line summary.
    pub(super) summary: String,
}

impl Index {
    fn build(catalog: Arc<AggregatedCatalog>) -> Self {
        let tools = catalog
            .tools()
            .iter()
            .map(|tool| ToolText {
                name_lower: tool.name().to_lowercase(),
                description_lower: tool.description().to_lowercase(),
                summary: summary(tool.description()),
            })
            .collect();
        let corpus = Corpus::build(
            catalog
                .tools()
                .iter()
                .map(|tool| (tool.name(), first_line(tool.description()))),
        );
        Self {
            catalog,
            tools,
            corpus,
            list_tools: OnceLock::new(),
            list_tools_encoded: OnceLock::new(),
        }
    }

    /// The snapshot.
    pub(super) fn catalog(&self) -> &AggregatedCatalog {
        &self.catalog
    }

    /// Per-tool texts, aligned with the snapshot's tools.
    pub(super) fn tools(&self) -> &[ToolText] {
        &self.tools
    }

    /// The search corpus of the snapshot's tools, for ranking by query.
    pub(super) fn corpus(&self) -> &Corpus {
        &self.corpus
    }

    /// The `list_tools` text of this snapshot, rendered by `render` on first use.
    pub(super) fn list_tools(&self, render: impl FnOnce(&AggregatedCatalog) -> String) -> &str {
        self.list_tools.get_or_init(|| render(&self.catalog))
    }

    /// The `list_tools` result of this snapshot as JSON: `encode` applied to the text
    /// `render` makes, on first use.
    pub(super) fn list_tools_encoded(
        &self,
        encode: impl FnOnce(&str) -> Arc<str>,
        render: impl FnOnce(&AggregatedCatalog) -> String,
    ) -> Arc<str> {
        let encoded = self
            .list_tools_encoded
            .get_or_init(|| encode(self.list_tools(render)));
        Arc::clone(encoded)
    }
}

/// The index of the latest snapshot seen.
#[derive(Debug, Default)]
pub(super) struct IndexCache {
    latest: Mutex<Option<Arc<Index>>>,
}

impl IndexCache {
    /// The index of `catalog`, built now if the cached one belongs to another snapshot.
    pub(super) fn get(&self, catalog: &Arc<AggregatedCatalog>) -> Arc<Index> {
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = latest.as_ref()
            && Arc::ptr_eq(&index.catalog, catalog)
        {
            return Arc::clone(index);
        }
        let index = Arc::new(Index::build(Arc::clone(catalog)));
        *latest = Some(Arc::clone(&index));
        index
    }
}
