//! Checks every [`ExecutionStore`] implementation must pass, shared by the stores of muster and
//! available to anyone writing their own (feature `testing`).
//!
//! ```no_run
//! # async fn check() {
//! use muster_core::store::{MemoryExecutionStore, conformance};
//! let ids = conformance::execution_store_lifecycle(&MemoryExecutionStore::new()).await;
//! # let _ = ids;
//! # }
//! ```

use chrono::{TimeDelta, Utc};
use serde_json::json;

use super::{ExecutionFilter, ExecutionStore, NewExecution};
use crate::resource::execution::{
    ExecutionId, ExecutionOutcome, ExecutionStatus, RetentionPolicy, StepRecord, StepStatus,
};

/// A step record of `id` in `status`, stored under its own id.
pub fn step(id: &str, status: StepStatus) -> StepRecord {
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

/// The ids [`execution_store_lifecycle`] created: the run it kept and the one it pruned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleIds {
    /// The failed run, still stored.
    pub kept: ExecutionId,
    /// The 30-day-old run, pruned.
    pub pruned: ExecutionId,
}

/// Begins, records transitions, finishes, lists with filters and paging, and prunes, on an
/// empty store; panics with the broken expectation.
pub async fn execution_store_lifecycle(store: &dyn ExecutionStore) -> LifecycleIds {
    let id = store
        .begin(NewExecution::now("wf", json!({"x": 1})))
        .await
        .expect("begin");
    for s in [
        step("a", StepStatus::Inprogress),
        step("a", StepStatus::Completed),
        step("b", StepStatus::Failed),
    ] {
        store.record_step(&id, s).await.expect("record_step");
    }
    store
        .finish(&id, ExecutionOutcome::Failed("boom".into()), Utc::now())
        .await
        .expect("finish");
    let rec = store
        .get(&id)
        .await
        .expect("get")
        .expect("the record exists");
    assert_eq!(rec.status, ExecutionStatus::Failed);
    assert_eq!(rec.error.as_deref(), Some("boom"));
    assert_eq!(
        rec.steps.len(),
        2,
        "the transition of a replaced its first record"
    );
    assert_eq!(rec.steps[0].status, StepStatus::Completed);

    let mut old = NewExecution::now("other", json!({}));
    old.started_at = Utc::now() - TimeDelta::days(30);
    let old_id = store.begin(old).await.expect("begin");
    let page = store
        .list(&ExecutionFilter {
            limit: 1,
            ..ExecutionFilter::default()
        })
        .await
        .expect("list");
    assert_eq!((page.total, page.items.len(), page.has_more), (2, 1, true));
    assert_eq!(page.items[0].workflow_name, "wf", "newest first");
    let only_other = ExecutionFilter {
        workflow_name: Some("other".into()),
        ..ExecutionFilter::default()
    };
    assert_eq!(store.list(&only_other).await.expect("list").total, 1);
    let only_failed = ExecutionFilter {
        status: Some(ExecutionStatus::Failed),
        ..ExecutionFilter::default()
    };
    assert_eq!(
        store.list(&only_failed).await.expect("list").items[0].id,
        id
    );

    assert_eq!(
        store
            .prune(&RetentionPolicy::default(), Utc::now())
            .await
            .expect("prune"),
        1
    );
    assert_eq!(
        store
            .list(&ExecutionFilter::default())
            .await
            .expect("list")
            .total,
        1
    );
    assert_eq!(
        store.get(&old_id).await.expect("get"),
        None,
        "the pruned run is gone"
    );
    LifecycleIds {
        kept: id,
        pruned: old_id,
    }
}
