//! [`MemoryExecutionStore`]: execution records kept in memory.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{ExecutionFilter, ExecutionPage, ExecutionStore, NewExecution, StoreError};
use crate::resource::execution::{
    ExecutionId, ExecutionOutcome, ExecutionRecord, RetentionPolicy, StepRecord,
};

/// An in-memory [`ExecutionStore`]. Clones share the same records.
///
/// Every write replaces a whole record under one lock, so readers never see half a write, and
/// every write applies the record size limit.
#[derive(Debug, Clone, Default)]
pub struct MemoryExecutionStore {
    records: Arc<RwLock<HashMap<ExecutionId, ExecutionRecord>>>,
}

impl MemoryExecutionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn update(
        &self,
        id: &ExecutionId,
        change: impl FnOnce(&mut ExecutionRecord),
    ) -> Result<(), StoreError> {
        let mut records = self.records.write().unwrap_or_else(PoisonError::into_inner);
        let record = records.get_mut(id).ok_or_else(|| StoreError::NotFound {
            kind: "WorkflowExecution",
            key: id.to_string(),
        })?;
        // The write lock makes the change atomic for readers; no copy is needed.
        change(record);
        record.enforce_size_limit();
        Ok(())
    }
}

#[async_trait]
impl ExecutionStore for MemoryExecutionStore {
    async fn begin(&self, run: NewExecution) -> Result<ExecutionId, StoreError> {
        let mut record = ExecutionRecord::started(run.workflow_name, run.input, run.started_at);
        record.enforce_size_limit();
        let mut records = self.records.write().unwrap_or_else(PoisonError::into_inner);
        if records.contains_key(&run.id) {
            return Err(StoreError::AlreadyExists {
                kind: "WorkflowExecution",
                key: run.id.to_string(),
            });
        }
        records.insert(run.id.clone(), record);
        Ok(run.id)
    }

    async fn record_step(&self, id: &ExecutionId, step: StepRecord) -> Result<(), StoreError> {
        self.update(id, |r| r.upsert_step(step))
    }

    async fn finish(
        &self,
        id: &ExecutionId,
        outcome: ExecutionOutcome,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.update(id, |r| r.finish(outcome, at))
    }

    async fn get(&self, id: &ExecutionId) -> Result<Option<ExecutionRecord>, StoreError> {
        Ok(self
            .records
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned())
    }

    async fn list(&self, filter: &ExecutionFilter) -> Result<ExecutionPage, StoreError> {
        let records = self.records.read().unwrap_or_else(PoisonError::into_inner);
        let matching = records
            .iter()
            .filter(|(_, r)| filter.matches(r))
            .map(|(id, r)| r.summary(id));
        Ok(filter.page(matching.collect()))
    }

    async fn prune(
        &self,
        policy: &RetentionPolicy,
        now: DateTime<Utc>,
    ) -> Result<usize, StoreError> {
        let mut records = self.records.write().unwrap_or_else(PoisonError::into_inner);
        let expired = policy.expired(records.iter().map(|(id, r)| (id, r.started_at)), now);
        for id in &expired {
            records.remove(id);
        }
        Ok(expired.len())
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;
    use serde_json::json;

    use super::*;
    use crate::resource::execution::{ExecutionStatus, StepStatus};

    fn step(id: &str, status: StepStatus) -> StepRecord {
        StepRecord {
            step_id: id.to_owned(),
            tool: Some("x_t".to_owned()),
            status,
            started_at: Utc::now(),
            completed_at: None,
            duration_ms: 0,
            input: json!({}),
            result: None,
            error: None,
            stored_as: Some(id.to_owned()),
        }
    }

    #[tokio::test]
    async fn lifecycle_listing_and_pruning() {
        let store = MemoryExecutionStore::new();
        let id = store
            .begin(NewExecution::now("wf", json!({"x": 1})))
            .await
            .unwrap();
        store
            .record_step(&id, step("a", StepStatus::Inprogress))
            .await
            .unwrap();
        store
            .record_step(&id, step("a", StepStatus::Completed))
            .await
            .unwrap();
        store
            .record_step(&id, step("b", StepStatus::Failed))
            .await
            .unwrap();
        store
            .finish(&id, ExecutionOutcome::Failed("boom".into()), Utc::now())
            .await
            .unwrap();
        let rec = store.get(&id).await.unwrap().unwrap();
        assert_eq!(rec.status, ExecutionStatus::Failed);
        assert_eq!(
            rec.steps.len(),
            2,
            "the transition of a replaced its first record"
        );
        assert_eq!(rec.steps[0].status, StepStatus::Completed);

        let mut old = NewExecution::now("other", json!({}));
        old.started_at = Utc::now() - TimeDelta::days(30);
        store.begin(old).await.unwrap();
        let page = store
            .list(&ExecutionFilter {
                limit: 1,
                ..ExecutionFilter::default()
            })
            .await
            .unwrap();
        assert_eq!((page.total, page.items.len(), page.has_more), (2, 1, true));
        assert_eq!(page.items[0].workflow_name, "wf", "newest first");
        let only_other = ExecutionFilter {
            workflow_name: Some("other".into()),
            ..ExecutionFilter::default()
        };
        assert_eq!(store.list(&only_other).await.unwrap().total, 1);

        assert_eq!(
            store
                .prune(&RetentionPolicy::default(), Utc::now())
                .await
                .unwrap(),
            1
        );
        assert_eq!(
            store.list(&ExecutionFilter::default()).await.unwrap().total,
            1
        );
    }
}
