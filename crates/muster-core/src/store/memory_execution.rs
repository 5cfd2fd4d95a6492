//! [`MemoryExecutionStore`]: execution records kept in memory.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{ExecutionFilter, ExecutionPage, ExecutionStore, NewExecution, StoreError};
use crate::resource::execution::{
    ExecutionId, ExecutionOutcome, ExecutionRecord, MAX_RECORD_BYTES, RetentionPolicy, StepRecord,
};

/// An in-memory [`ExecutionStore`]. Clones share the same records.
///
/// Every write replaces a whole record under one lock, so readers never see half a write, and
/// every write applies the record size limit.
#[derive(Debug, Clone, Default)]
pub struct MemoryExecutionStore {
    records: Arc<RwLock<HashMap<ExecutionId, Sized>>>,
}

/// A record with the length of its JSON, kept up to date as steps are recorded so the size
/// limit is enforced without re-measuring the whole record on every step.
#[derive(Debug, Clone)]
struct Sized {
    record: ExecutionRecord,
    bytes: usize,
    /// Position of each step record by `(step_id, stored_as)`, so a transition finds its
    /// record without scanning a long loop's records.
    positions: HashMap<(String, Option<String>), usize>,
}

impl Sized {
    fn new(mut record: ExecutionRecord) -> Self {
        record.enforce_size_limit();
        let bytes = record.json_size();
        Self {
            record,
            bytes,
            positions: HashMap::new(),
        }
    }

    fn record_step(&mut self, mut step: StepRecord) {
        if self.bytes > MAX_RECORD_BYTES && ExecutionRecord::shrink_step_payloads(&mut step) {
            self.record.truncated = true;
        }
        let added = step_size(&step);
        let key = (step.step_id.clone(), step.stored_as.clone());
        let removed = match self.positions.get(&key) {
            Some(&i) => {
                let removed = step_size(&self.record.steps[i]);
                self.record.steps[i] = step;
                removed
            }
            None => {
                self.positions.insert(key, self.record.steps.len());
                self.record.steps.push(step);
                0
            }
        };
        self.bytes = (self.bytes + added).saturating_sub(removed);
        if self.bytes > MAX_RECORD_BYTES {
            let steps = self.record.steps.len();
            self.record.enforce_size_limit();
            self.bytes = self.record.json_size();
            if self.record.steps.len() != steps {
                self.reindex();
            }
        }
    }

    /// Rebuilds the step positions after step records were dropped.
    fn reindex(&mut self) {
        self.positions = self
            .record
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| ((s.step_id.clone(), s.stored_as.clone()), i))
            .collect();
    }
}

fn step_size(step: &StepRecord) -> usize {
    // The step's JSON plus the separating comma.
    serde_json::to_vec(step).map_or(0, |b| b.len() + 1)
}

impl MemoryExecutionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn update(&self, id: &ExecutionId, change: impl FnOnce(&mut Sized)) -> Result<(), StoreError> {
        let mut records = self.records.write().unwrap_or_else(PoisonError::into_inner);
        let record = records.get_mut(id).ok_or_else(|| StoreError::NotFound {
            kind: "WorkflowExecution",
            key: id.to_string(),
        })?;
        // The write lock makes the change atomic for readers; no copy is needed.
        change(record);
        Ok(())
    }
}

#[async_trait]
impl ExecutionStore for MemoryExecutionStore {
    async fn begin(&self, run: NewExecution) -> Result<ExecutionId, StoreError> {
        let record = Sized::new(ExecutionRecord::started(
            run.workflow_name,
            run.input,
            run.started_at,
        ));
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
        self.update(id, |r| r.record_step(step))
    }

    async fn finish(
        &self,
        id: &ExecutionId,
        outcome: ExecutionOutcome,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.update(id, |r| {
            r.record.finish(outcome, at);
            r.record.enforce_size_limit();
            r.bytes = r.record.json_size();
        })
    }

    async fn get(&self, id: &ExecutionId) -> Result<Option<ExecutionRecord>, StoreError> {
        Ok(self
            .records
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .map(|s| s.record.clone()))
    }

    async fn list(&self, filter: &ExecutionFilter) -> Result<ExecutionPage, StoreError> {
        let records = self.records.read().unwrap_or_else(PoisonError::into_inner);
        let matching = records
            .iter()
            .filter(|(_, s)| filter.matches(&s.record))
            .map(|(id, s)| s.record.summary(id));
        Ok(filter.page(matching.collect()))
    }

    async fn prune(
        &self,
        policy: &RetentionPolicy,
        now: DateTime<Utc>,
    ) -> Result<usize, StoreError> {
        let mut records = self.records.write().unwrap_or_else(PoisonError::into_inner);
        let expired = policy.expired(records.iter().map(|(id, s)| (id, s.record.started_at)), now);
        for id in &expired {
            records.remove(id);
        }
        Ok(expired.len())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::resource::execution::StepStatus;
    use crate::store::conformance::step;

    #[tokio::test]
    async fn passes_the_conformance_checks() {
        crate::store::conformance::execution_store_lifecycle(&MemoryExecutionStore::new()).await;
    }

    #[tokio::test]
    async fn records_stay_within_the_limit_as_steps_are_recorded() {
        let store = MemoryExecutionStore::new();
        let id = store
            .begin(NewExecution::now("wf", json!({})))
            .await
            .unwrap();
        let payload = "y".repeat(20 * 1024);
        for i in 0..16 {
            let mut s = step(&format!("s{i}"), StepStatus::Completed);
            s.result = Some(json!({ "blob": payload }));
            store.record_step(&id, s).await.unwrap();
        }
        let rec = store.get(&id).await.unwrap().unwrap();
        assert!(rec.truncated);
        assert!(rec.json_size() <= MAX_RECORD_BYTES, "{}", rec.json_size());
        assert_eq!(
            rec.steps.len(),
            16,
            "payloads shrink before steps are dropped"
        );
        let mut big = step("big", StepStatus::Completed);
        big.result = Some(json!({ "blob": "z".repeat(40 * 1024) }));
        store.record_step(&id, big).await.unwrap();
        let rec = store.get(&id).await.unwrap().unwrap();
        assert!(rec.json_size() <= MAX_RECORD_BYTES, "{}", rec.json_size());
        // Thousands of small steps: the oldest finished records go, the record stays bounded
        // and transitions still find their step.
        for i in 0..5000 {
            let name = format!("many{i}");
            store
                .record_step(&id, step(&name, StepStatus::Inprogress))
                .await
                .unwrap();
            store
                .record_step(&id, step(&name, StepStatus::Completed))
                .await
                .unwrap();
        }
        let rec = store.get(&id).await.unwrap().unwrap();
        assert!(rec.json_size() <= MAX_RECORD_BYTES, "{}", rec.json_size());
        assert!(rec.steps.len() < 5000);
        let last = rec.steps.last().unwrap();
        assert_eq!(
            (last.step_id.as_str(), last.status),
            ("many4999", StepStatus::Completed)
        );
        assert_eq!(
            rec.steps.iter().filter(|s| s.step_id == "many4999").count(),
            1
        );
    }
}
