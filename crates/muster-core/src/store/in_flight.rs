//! [`InFlightExecutions`]: an [`ExecutionStore`] wrapper that knows which runs this process
//! began and has not finished, so a stopping process records them as failed instead of
//! leaving them `inprogress` — in any store, and without touching the runs of other
//! processes sharing it (replicas in Kubernetes mode).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{ExecutionFilter, ExecutionPage, ExecutionStore, NewExecution, StoreError};
use crate::resource::execution::{
    ExecutionId, ExecutionOutcome, ExecutionRecord, RetentionPolicy, StepRecord,
};

/// The error a stopping process records for the runs it leaves unfinished.
pub const STOPPED_ERROR: &str =
    "execution cancelled: muster was stopped before the workflow finished";

/// Wraps an [`ExecutionStore`], remembering the runs begun through it until they finish.
///
/// ```
/// # async fn demo() -> Result<(), muster_core::store::StoreError> {
/// use std::sync::Arc;
/// use muster_core::store::{ExecutionStore, InFlightExecutions, MemoryExecutionStore, NewExecution};
///
/// let store = InFlightExecutions::new(Arc::new(MemoryExecutionStore::new()));
/// let id = store.begin(NewExecution::now("deploy", serde_json::json!({}))).await?;
/// assert_eq!(store.fail_unfinished("muster was stopped").await?, 1);
/// let record = store.get(&id).await?.expect("stored");
/// assert_eq!(record.error.as_deref(), Some("muster was stopped"));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct InFlightExecutions {
    inner: Arc<dyn ExecutionStore>,
    running: Mutex<HashSet<ExecutionId>>,
    /// Set once the process stops: the error its cut-short runs are recorded with.
    stopping: std::sync::OnceLock<String>,
}

impl InFlightExecutions {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn ExecutionStore>) -> Self {
        Self {
            inner,
            running: Mutex::new(HashSet::new()),
            stopping: std::sync::OnceLock::new(),
        }
    }

    /// Marks the process as stopping: from now on a run of this process that fails — cut
    /// short by the stop, its caller's connection closed or its MCP server stopped — is
    /// recorded with `error`, as [`fail_unfinished`](Self::fail_unfinished) records the runs
    /// still going at the end. Runs that complete are recorded as they are. Only the first
    /// call counts.
    pub fn mark_stopping(&self, error: &str) {
        let _ = self.stopping.set(error.to_owned());
    }

    /// The runs begun through this store and not finished yet.
    pub fn unfinished(&self) -> Vec<ExecutionId> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.iter().cloned().collect()
    }

    /// Finishes every unfinished run as failed with `error`; returns how many were
    /// recorded so (a record deleted meanwhile is skipped). Call it once nothing runs any
    /// more (at shutdown).
    ///
    /// # Errors
    ///
    /// The first store error; the runs not recorded yet stay in the set.
    pub async fn fail_unfinished(&self, error: &str) -> Result<usize, StoreError> {
        let now = Utc::now();
        let mut failed = 0;
        for id in self.unfinished() {
            match self
                .finish(&id, ExecutionOutcome::Failed(error.to_owned()), now)
                .await
            {
                Ok(()) => failed += 1,
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(failed)
    }

    fn is_running(&self, id: &ExecutionId) -> bool {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(id)
    }

    fn forget(&self, id: &ExecutionId) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

#[async_trait]
impl ExecutionStore for InFlightExecutions {
    async fn begin(&self, run: NewExecution) -> Result<ExecutionId, StoreError> {
        let id = self.inner.begin(run).await?;
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone());
        Ok(id)
    }

    async fn record_step(&self, id: &ExecutionId, step: StepRecord) -> Result<(), StoreError> {
        self.inner.record_step(id, step).await
    }

    async fn finish(
        &self,
        id: &ExecutionId,
        outcome: ExecutionOutcome,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let outcome = match (outcome, self.stopping.get()) {
            (ExecutionOutcome::Failed(_), Some(stopped)) if self.is_running(id) => {
                ExecutionOutcome::Failed(stopped.clone())
            }
            (outcome, _) => outcome,
        };
        let result = self.inner.finish(id, outcome, at).await;
        // A record that is gone cannot be finished later either.
        if result.is_ok() || matches!(result, Err(StoreError::NotFound { .. })) {
            self.forget(id);
        }
        result
    }

    async fn get(&self, id: &ExecutionId) -> Result<Option<ExecutionRecord>, StoreError> {
        self.inner.get(id).await
    }

    async fn list(&self, filter: &ExecutionFilter) -> Result<ExecutionPage, StoreError> {
        self.inner.list(filter).await
    }

    async fn prune(
        &self,
        policy: &RetentionPolicy,
        now: DateTime<Utc>,
    ) -> Result<usize, StoreError> {
        self.inner.prune(policy, now).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::resource::execution::ExecutionStatus;
    use crate::store::MemoryExecutionStore;

    #[tokio::test]
    async fn only_the_unfinished_runs_of_this_process_are_failed() {
        let shared: Arc<dyn ExecutionStore> = Arc::new(MemoryExecutionStore::new());
        let other_replica = shared
            .begin(NewExecution::now("a", json!({})))
            .await
            .unwrap();
        let mine = InFlightExecutions::new(shared.clone());
        let done = mine.begin(NewExecution::now("b", json!({}))).await.unwrap();
        let open = mine.begin(NewExecution::now("c", json!({}))).await.unwrap();
        mine.finish(&done, ExecutionOutcome::Completed(json!(1)), Utc::now())
            .await
            .unwrap();
        assert_eq!(mine.unfinished(), vec![open.clone()]);

        assert_eq!(mine.fail_unfinished("stopped").await.unwrap(), 1);
        assert!(mine.unfinished().is_empty());
        let status = |id| {
            let shared = shared.clone();
            async move { shared.get(&id).await.unwrap().unwrap().status }
        };
        assert_eq!(status(open).await, ExecutionStatus::Failed);
        assert_eq!(status(done).await, ExecutionStatus::Completed);
        assert_eq!(status(other_replica).await, ExecutionStatus::Inprogress);
        assert_eq!(mine.fail_unfinished("stopped").await.unwrap(), 0);
    }

    #[tokio::test]
    async fn the_wrapper_passes_the_store_conformance_suite() {
        let store = InFlightExecutions::new(Arc::new(MemoryExecutionStore::new()));
        let ids = crate::store::conformance::execution_store_lifecycle(&store).await;
        // What the suite left running is failed; what it pruned is skipped.
        let left = store.unfinished();
        let failed = store.fail_unfinished("stopped").await.unwrap();
        assert!(failed <= left.len());
        assert!(store.unfinished().is_empty(), "{:?}", store.unfinished());
        assert!(store.get(&ids.pruned).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn runs_failing_while_stopping_are_recorded_as_stopped() {
        let store = InFlightExecutions::new(Arc::new(MemoryExecutionStore::new()));
        let before = store
            .begin(NewExecution::now("a", json!({})))
            .await
            .unwrap();
        store
            .finish(&before, ExecutionOutcome::Failed("boom".into()), Utc::now())
            .await
            .unwrap();
        let cut_short = store
            .begin(NewExecution::now("b", json!({})))
            .await
            .unwrap();
        let completes = store
            .begin(NewExecution::now("c", json!({})))
            .await
            .unwrap();
        store.mark_stopping("stopped");
        store
            .finish(
                &cut_short,
                ExecutionOutcome::Failed("caller went away".into()),
                Utc::now(),
            )
            .await
            .unwrap();
        store
            .finish(
                &completes,
                ExecutionOutcome::Completed(json!(1)),
                Utc::now(),
            )
            .await
            .unwrap();
        let error = |id| {
            let store = &store;
            async move { store.get(&id).await.unwrap().unwrap().error }
        };
        assert_eq!(error(before).await.as_deref(), Some("boom"));
        assert_eq!(error(cut_short).await.as_deref(), Some("stopped"));
        assert_eq!(error(completes).await, None);
    }
}
