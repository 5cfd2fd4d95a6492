//! A custom [`ExecutionStore`]: live records in memory, and every finished run appended to a
//! JSON-lines archive file, one line per run, for whatever reads it later (a log shipper, a
//! data warehouse). It passes muster-core's shared conformance checks (`cargo test -p
//! example-archived-execution-store`) and runs a workflow with muster-workflow.
//!
//! Run with: `cargo run -p example-archived-execution-store -- /tmp/runs.jsonl`

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use muster_core::resource::execution::{
    ExecutionId, ExecutionOutcome, ExecutionRecord, RetentionPolicy, StepRecord,
};
use muster_core::resource::workflow::WorkflowSpec;
use muster_core::store::{
    ExecutionFilter, ExecutionPage, ExecutionStore, MemoryExecutionStore, NewExecution, StoreError,
};
use muster_core::tool::{ToolCall, ToolError};
use muster_workflow::{Engine, Plan, RunWorkflow};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::Mutex;
use tower::util::BoxCloneSyncService;

/// Records in memory; each finished run also goes to the archive, one JSON line each.
#[derive(Debug)]
pub struct ArchivedExecutionStore {
    live: MemoryExecutionStore,
    archive: PathBuf,
    /// One writer at a time, so lines never interleave.
    writer: Mutex<()>,
}

impl ArchivedExecutionStore {
    /// A store archiving to `archive` (created when missing, appended to otherwise).
    pub fn new(archive: impl Into<PathBuf>) -> Self {
        Self {
            live: MemoryExecutionStore::new(),
            archive: archive.into(),
            writer: Mutex::new(()),
        }
    }

    /// The archive file.
    pub fn archive(&self) -> &Path {
        &self.archive
    }

    async fn append(&self, id: &ExecutionId, record: &ExecutionRecord) -> Result<(), StoreError> {
        let mut line = serde_json::to_vec(&json!({"id": id.as_str(), "record": record}))
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        line.push(b'\n');
        let _one_writer = self.writer.lock().await;
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.archive)
            .await
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        // One write call per line, then flushed to disk: a reader sees whole lines.
        file.write_all(&line)
            .await
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        file.sync_data()
            .await
            .map_err(|e| StoreError::Backend(Box::new(e)))
    }
}

#[async_trait]
impl ExecutionStore for ArchivedExecutionStore {
    async fn begin(&self, run: NewExecution) -> Result<ExecutionId, StoreError> {
        self.live.begin(run).await
    }

    async fn record_step(&self, id: &ExecutionId, step: StepRecord) -> Result<(), StoreError> {
        self.live.record_step(id, step).await
    }

    async fn finish(
        &self,
        id: &ExecutionId,
        outcome: ExecutionOutcome,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.live.finish(id, outcome, at).await?;
        if let Some(record) = self.live.get(id).await? {
            self.append(id, &record).await?;
        }
        Ok(())
    }

    async fn get(&self, id: &ExecutionId) -> Result<Option<ExecutionRecord>, StoreError> {
        self.live.get(id).await
    }

    async fn list(&self, filter: &ExecutionFilter) -> Result<ExecutionPage, StoreError> {
        self.live.list(filter).await
    }

    /// Prunes the live records; the archive is the long-term copy and is never pruned.
    async fn prune(
        &self,
        policy: &RetentionPolicy,
        now: DateTime<Utc>,
    ) -> Result<usize, StoreError> {
        self.live.prune(policy, now).await
    }
}

/// The one tool of the demo workflow: `double` doubles `n`.
async fn tools(call: ToolCall) -> Result<CallToolResult, ToolError> {
    let n = call
        .arguments_or_empty()?
        .get("n")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(0.0);
    Ok(CallToolResult::success(vec![ContentBlock::text(
        json!({ "value": n * 2.0 }).to_string(),
    )]))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let archive = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "runs.jsonl".to_owned());
    let store = Arc::new(ArchivedExecutionStore::new(archive));
    let spec: WorkflowSpec = serde_json::from_value(json!({
        "args": {"n": {"type": "number", "required": true}},
        "steps": [
            {"id": "once", "tool": "double", "args": {"n": "{{ .input.n }}"}},
            {"id": "twice", "tool": "double", "args": {"n": "{{ .results.once.value }}"}}
        ],
        "output": {"result": "{{ .results.twice.value }}"}
    }))?;
    let plan = Arc::new(Plan::compile("quadruple", &spec)?);
    let engine = Engine::builder(
        BoxCloneSyncService::new(tower::service_fn(tools)),
        store.clone(),
    )
    .build();
    let response = engine
        .run(RunWorkflow::new(plan, json!({"n": 5}).as_object().cloned()))
        .await?;
    println!("{}", serde_json::to_string_pretty(&response.document)?);
    println!("archived to {}", store.archive().display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use muster_core::store::conformance;

    use super::*;

    #[tokio::test]
    async fn keeps_the_execution_store_contract() {
        let dir = tempfile::tempdir().unwrap();
        let store = ArchivedExecutionStore::new(dir.path().join("runs.jsonl"));
        let ids = conformance::execution_store_lifecycle(&store).await;
        let archive = std::fs::read_to_string(store.archive()).unwrap();
        let archived: Vec<serde_json::Value> = archive
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // The finished run is archived with its final state; the run that never finished
        // is not.
        assert_eq!(archived.len(), 1, "{archive}");
        assert_eq!(archived[0]["id"], ids.kept.as_str(), "{archive}");
        assert_eq!(archived[0]["record"]["status"], "failed", "{archive}");
        assert_ne!(archived[0]["id"], ids.pruned.as_str());
    }
}
