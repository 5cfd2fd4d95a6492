//! [`KubeExecutionStore`]: workflow execution records as `WorkflowExecution` objects.
//!
//! One object per run, named by the execution UUID, labelled with the workflow and the status
//! (`muster.giantswarm.io/workflow`, `muster.giantswarm.io/status`) so `kubectl get wfe -l`
//! filters them. The object is created when the run begins (a taken name is refused), replaced
//! on each step transition with optimistic concurrency, and immutable once the run finished
//! (the store refuses, and so does the CRD's transition rule). Every write keeps the record
//! within the 256 KB guard.
//!
//! A store built [`owned_by`](KubeExecutionStore::owned_by) a replica labels the records it
//! begins with that replica (`muster.giantswarm.io/replica`), so the leader can tell the runs
//! of a replica that died from those still running ([`crate::replicas`]).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject, ObjectMeta};
use muster_core::ValidationErrors;
use muster_core::resource::ObjectKey;
use muster_core::resource::execution::{
    ExecutionId, ExecutionOutcome, ExecutionRecord, ExecutionStatus, MAX_RECORD_BYTES,
    RetentionPolicy, STATUS_LABEL, StepRecord, WORKFLOW_LABEL, WorkflowExecution,
};
use muster_core::store::{
    ExecutionFilter, ExecutionPage, ExecutionStore, NewExecution, StoreError,
};
use serde_json::{Value, json};

use crate::convert::{api_code, api_resource, store_error};

/// The label naming the replica (incarnation) that began a run, and that its heartbeat
/// Lease carries ([`crate::replicas`]).
pub const REPLICA_LABEL: &str = "muster.giantswarm.io/replica";

/// How often a write is retried after a conflict.
const CONFLICT_RETRIES: usize = 8;

/// The `ExecutionStore` over `WorkflowExecution` objects in one namespace.
pub struct KubeExecutionStore {
    api: Api<DynamicObject>,
    resource: ApiResource,
    namespace: String,
    /// The replica (incarnation) the records begun here are labelled with.
    replica: Option<String>,
    /// Records of runs in progress that this process writes, so a step transition does not
    /// read the object back first. Each entry is locked while it is written.
    open: Mutex<HashMap<ExecutionId, Arc<tokio::sync::Mutex<Open>>>>,
}

#[derive(Debug)]
struct Open {
    record: ExecutionRecord,
    resource_version: Option<String>,
    /// The replica that began the run, kept on every write.
    owner: Option<String>,
}

impl fmt::Debug for KubeExecutionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeExecutionStore")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// Whether `s` is a valid label value (at most 63 characters, alphanumeric at both ends,
/// `-`, `_` and `.` between).
fn is_label_value(s: &str) -> bool {
    s.len() <= 63
        && (s.is_empty()
            || (s.starts_with(|c: char| c.is_ascii_alphanumeric())
                && s.ends_with(|c: char| c.is_ascii_alphanumeric())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))))
}

fn immutable(id: &ExecutionId) -> StoreError {
    let mut errors = ValidationErrors::new();
    errors.push(
        "spec",
        format!("execution {id} has finished: a finished WorkflowExecution is immutable"),
    );
    StoreError::Invalid(Box::new(errors))
}

impl KubeExecutionStore {
    /// A store of the execution records in `namespace`.
    pub fn new(client: kube::Client, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        let resource = api_resource::<WorkflowExecution>();
        let api = Api::namespaced_with(client, &namespace, &resource);
        Self {
            api,
            resource,
            namespace,
            replica: None,
            open: Mutex::default(),
        }
    }

    /// Labels the records this store begins with `replica` (a label value: at most 63
    /// characters), the identity whose heartbeat says whether their runs are still going.
    #[must_use]
    pub fn owned_by(mut self, replica: impl Into<String>) -> Self {
        self.replica = Some(replica.into()).filter(|r| is_label_value(r));
        self
    }

    /// The runs recorded `inprogress`, each with the replica that began it (when labelled).
    ///
    /// # Errors
    ///
    /// When the API server cannot list them.
    pub async fn unfinished(&self) -> Result<Vec<(ExecutionId, Option<String>)>, StoreError> {
        let selector = format!("{STATUS_LABEL}={}", ExecutionStatus::Inprogress.as_str());
        let list = self
            .api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        Ok(list
            .items
            .iter()
            .filter_map(|obj| {
                let id = ExecutionId::from_string(obj.metadata.name.clone()?);
                Some((id, owner_of(obj)))
            })
            .collect())
    }

    /// Records the run `id` as failed with `error` unless it finished meanwhile; returns
    /// whether this call recorded it. Concurrent calls record it once: each write names the
    /// resourceVersion it read, and a finished record is never written again.
    ///
    /// # Errors
    ///
    /// When the API server refuses the write for another reason.
    pub async fn fail_interrupted(
        &self,
        id: &ExecutionId,
        error: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let outcome = ExecutionOutcome::Failed(error.to_owned());
        match self
            .update(id, |record| record.finish(outcome.clone(), at))
            .await
        {
            Ok(_) => Ok(true),
            Err(StoreError::NotFound { .. } | StoreError::Invalid(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn key(&self, id: &ExecutionId) -> ObjectKey {
        ObjectKey::new(&self.namespace, id.as_str())
    }

    fn object(&self, id: &ExecutionId, open: &Open) -> Result<DynamicObject, StoreError> {
        let mut labels = BTreeMap::new();
        if let Some(owner) = &open.owner {
            labels.insert(REPLICA_LABEL.to_owned(), owner.clone());
        }
        if is_label_value(&open.record.workflow_name) {
            labels.insert(WORKFLOW_LABEL.to_owned(), open.record.workflow_name.clone());
        }
        labels.insert(
            STATUS_LABEL.to_owned(),
            open.record.status.as_str().to_owned(),
        );
        let spec = serde_json::to_value(&open.record).map_err(|e| StoreError::Codec {
            message: format!("execution {id}: {e}"),
        })?;
        let mut obj = DynamicObject::new(id.as_str(), &self.resource).within(&self.namespace);
        obj.metadata = ObjectMeta {
            name: Some(id.as_str().to_owned()),
            namespace: Some(self.namespace.clone()),
            labels: Some(labels),
            resource_version: open.resource_version.clone(),
            ..ObjectMeta::default()
        };
        obj.data = json!({ "spec": spec });
        Ok(obj)
    }

    async fn fetch(&self, id: &ExecutionId) -> Result<Option<Open>, StoreError> {
        let Some(obj) = self
            .api
            .get_opt(id.as_str())
            .await
            .map_err(|e| store_error::<WorkflowExecution>(&self.key(id), e))?
        else {
            return Ok(None);
        };
        let record = record_of(&obj)?;
        Ok(Some(Open {
            record,
            owner: owner_of(&obj),
            resource_version: obj.metadata.resource_version,
        }))
    }

    fn entry(&self, id: &ExecutionId) -> Option<Arc<tokio::sync::Mutex<Open>>> {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Applies `change` to the record of `id` and writes it; on a conflict the record is read
    /// again and the change applied to the fresh one.
    async fn update(
        &self,
        id: &ExecutionId,
        change: impl Fn(&mut ExecutionRecord),
    ) -> Result<ExecutionRecord, StoreError> {
        let entry = match self.entry(id) {
            Some(e) => e,
            None => {
                let open = self
                    .fetch(id)
                    .await?
                    .ok_or_else(|| StoreError::not_found("WorkflowExecution", &self.key(id)))?;
                Arc::new(tokio::sync::Mutex::new(open))
            }
        };
        let mut open = entry.lock().await;
        for _ in 0..CONFLICT_RETRIES {
            if open.record.status != ExecutionStatus::Inprogress {
                return Err(immutable(id));
            }
            let mut next = Open {
                record: open.record.clone(),
                resource_version: open.resource_version.clone(),
                owner: open.owner.clone(),
            };
            change(&mut next.record);
            if next.record.json_size() > MAX_RECORD_BYTES {
                next.record.enforce_size_limit();
            }
            let obj = self.object(id, &next)?;
            match self
                .api
                .replace(id.as_str(), &PostParams::default(), &obj)
                .await
            {
                Ok(written) => {
                    next.resource_version = written.metadata.resource_version;
                    *open = next;
                    return Ok(open.record.clone());
                }
                Err(e) if api_code(&e) == Some(409) => {
                    *open = self
                        .fetch(id)
                        .await?
                        .ok_or_else(|| StoreError::not_found("WorkflowExecution", &self.key(id)))?;
                }
                Err(e) => return Err(store_error::<WorkflowExecution>(&self.key(id), e)),
            }
        }
        Err(StoreError::Conflict {
            key: self.key(id).to_string(),
            expected: "any".to_owned(),
            found: format!("a new version on each of {CONFLICT_RETRIES} attempts"),
        })
    }
}

/// The replica label of a record.
fn owner_of(obj: &DynamicObject) -> Option<String> {
    obj.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REPLICA_LABEL))
        .cloned()
}

fn record_of(obj: &DynamicObject) -> Result<ExecutionRecord, StoreError> {
    let spec = obj.data.get("spec").cloned().unwrap_or(Value::Null);
    serde_json::from_value(spec).map_err(|e| StoreError::Codec {
        message: format!(
            "WorkflowExecution {}: {e}",
            obj.metadata.name.as_deref().unwrap_or_default()
        ),
    })
}

#[async_trait]
impl ExecutionStore for KubeExecutionStore {
    async fn begin(&self, run: NewExecution) -> Result<ExecutionId, StoreError> {
        let mut record = ExecutionRecord::started(run.workflow_name, run.input, run.started_at);
        record.enforce_size_limit();
        let open = Open {
            record,
            resource_version: None,
            owner: self.replica.clone(),
        };
        let obj = self.object(&run.id, &open)?;
        let created = self
            .api
            .create(&PostParams::default(), &obj)
            .await
            .map_err(|e| store_error::<WorkflowExecution>(&self.key(&run.id), e))?;
        let open = Open {
            resource_version: created.metadata.resource_version,
            ..open
        };
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run.id.clone(), Arc::new(tokio::sync::Mutex::new(open)));
        Ok(run.id)
    }

    async fn record_step(&self, id: &ExecutionId, step: StepRecord) -> Result<(), StoreError> {
        self.update(id, |record| {
            let mut step = step.clone();
            if record.truncated {
                // Already over the limit: keep large payloads of new steps out up front.
                ExecutionRecord::shrink_step_payloads(&mut step);
            }
            record.upsert_step(step);
        })
        .await
        .map(drop)
    }

    async fn finish(
        &self,
        id: &ExecutionId,
        outcome: ExecutionOutcome,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let result = self
            .update(id, |record| record.finish(outcome.clone(), at))
            .await;
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        result.map(drop)
    }

    async fn get(&self, id: &ExecutionId) -> Result<Option<ExecutionRecord>, StoreError> {
        Ok(self.fetch(id).await?.map(|o| o.record))
    }

    async fn list(&self, filter: &ExecutionFilter) -> Result<ExecutionPage, StoreError> {
        let mut selector = Vec::new();
        if let Some(w) = filter
            .workflow_name
            .as_deref()
            .filter(|w| is_label_value(w))
        {
            selector.push(format!("{WORKFLOW_LABEL}={w}"));
        }
        if let Some(s) = filter.status {
            selector.push(format!("{STATUS_LABEL}={}", s.as_str()));
        }
        let params = ListParams::default().labels(&selector.join(","));
        let list = self
            .api
            .list(&params)
            .await
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        let summaries = list
            .items
            .iter()
            .filter_map(|obj| {
                let id = ExecutionId::from_string(obj.metadata.name.clone()?);
                let record = record_of(obj).ok()?;
                filter.matches(&record).then(|| record.summary(&id))
            })
            .collect();
        Ok(filter.page(summaries))
    }

    async fn prune(
        &self,
        policy: &RetentionPolicy,
        now: DateTime<Utc>,
    ) -> Result<usize, StoreError> {
        let list = self
            .api
            .list(&ListParams::default())
            .await
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        let records: Vec<(ExecutionId, DateTime<Utc>)> = list
            .items
            .iter()
            .filter_map(|obj| {
                let id = ExecutionId::from_string(obj.metadata.name.clone()?);
                Some((id, record_of(obj).ok()?.started_at))
            })
            .collect();
        let expired = policy.expired(records.iter().map(|(id, at)| (id, *at)), now);
        let mut deleted = 0;
        for id in expired {
            match self.api.delete(id.as_str(), &DeleteParams::default()).await {
                Ok(_) => deleted += 1,
                Err(e) if api_code(&e) == Some(404) => {}
                Err(e) => return Err(store_error::<WorkflowExecution>(&self.key(&id), e)),
            }
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values() {
        for ok in ["", "a", "deploy-app", "a.b_c-9"] {
            assert!(is_label_value(ok), "{ok}");
        }
        for bad in ["-a", "a-", "a b", &"x".repeat(64)] {
            assert!(!is_label_value(bad), "{bad}");
        }
    }
}
