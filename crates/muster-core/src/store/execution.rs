//! The [`ExecutionStore`] trait: durable records of workflow runs.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::StoreError;
use crate::resource::execution::{
    ExecutionId, ExecutionOutcome, ExecutionRecord, ExecutionStatus, ExecutionSummary,
    RetentionPolicy, StepRecord,
};

/// A run that is about to start.
#[derive(Debug, Clone, PartialEq)]
pub struct NewExecution {
    /// The id the record is stored under; [`ExecutionId::new_v4`] unless the caller has one.
    pub id: ExecutionId,
    /// The workflow.
    pub workflow_name: String,
    /// Its arguments.
    pub input: Value,
    /// When it started.
    pub started_at: DateTime<Utc>,
}

impl NewExecution {
    /// A run of `workflow_name` with `input`, starting now under a fresh id.
    pub fn now(workflow_name: impl Into<String>, input: Value) -> Self {
        Self {
            id: ExecutionId::new_v4(),
            workflow_name: workflow_name.into(),
            input,
            started_at: Utc::now(),
        }
    }
}

/// Which records to list, and which page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionFilter {
    /// Only runs of this workflow.
    pub workflow_name: Option<String>,
    /// Only runs in this status.
    pub status: Option<ExecutionStatus>,
    /// Page size, default 50.
    pub limit: usize,
    /// Records to skip, default 0.
    pub offset: usize,
}

impl Default for ExecutionFilter {
    fn default() -> Self {
        Self {
            workflow_name: None,
            status: None,
            limit: 50,
            offset: 0,
        }
    }
}

impl ExecutionFilter {
    /// Whether a record passes the filter (ignoring paging).
    pub fn matches(&self, record: &ExecutionRecord) -> bool {
        self.workflow_name
            .as_deref()
            .is_none_or(|w| w == record.workflow_name)
            && self.status.is_none_or(|s| s == record.status)
    }

    /// Sorts summaries newest first (then by id) and cuts the requested page.
    pub fn page(&self, mut all: Vec<ExecutionSummary>) -> ExecutionPage {
        all.sort_by(|a, b| {
            b.started_at
                .cmp(&a.started_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        let total = all.len();
        let items: Vec<_> = all.into_iter().skip(self.offset).take(self.limit).collect();
        let has_more = self.offset + items.len() < total;
        ExecutionPage {
            items,
            total,
            limit: self.limit,
            offset: self.offset,
            has_more,
        }
    }
}

/// One page of an execution listing, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionPage {
    /// The records of this page.
    pub items: Vec<ExecutionSummary>,
    /// Records matching the filter in all.
    pub total: usize,
    /// The page size asked for.
    pub limit: usize,
    /// The offset asked for.
    pub offset: usize,
    /// Whether records follow this page.
    pub has_more: bool,
}

/// Durable storage of execution records.
///
/// The engine writes every step transition through it before moving on. Every implementation
/// guarantees that a record is never half-written: a reader sees the state before or after a
/// write, never a mix.
#[async_trait]
pub trait ExecutionStore: Send + Sync + std::fmt::Debug {
    /// Stores the record of a run that is starting, with status `inprogress`.
    async fn begin(&self, run: NewExecution) -> Result<ExecutionId, StoreError>;

    /// Records a step transition (see [`ExecutionRecord::upsert_step`]).
    async fn record_step(&self, id: &ExecutionId, step: StepRecord) -> Result<(), StoreError>;

    /// Marks a run finished.
    async fn finish(
        &self,
        id: &ExecutionId,
        outcome: ExecutionOutcome,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError>;

    /// The record of one run.
    async fn get(&self, id: &ExecutionId) -> Result<Option<ExecutionRecord>, StoreError>;

    /// A page of summaries, newest first.
    async fn list(&self, filter: &ExecutionFilter) -> Result<ExecutionPage, StoreError>;

    /// Deletes what `policy` says is expired at `now`; returns how many records went.
    async fn prune(
        &self,
        policy: &RetentionPolicy,
        now: DateTime<Utc>,
    ) -> Result<usize, StoreError>;
}
