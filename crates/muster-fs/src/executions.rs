//! [`FsExecutionStore`]: workflow execution records as files of a directory.
//!
//! Every run is one file, `<dir>/<id>.yaml`, holding pretty-printed JSON of the record in the
//! API's snake_case shape (`execution_id`, `workflow_name`, `steps[].step_id`, ...); the
//! extension is `.yaml` for compatibility, YAML being a superset of JSON. In a config directory
//! `<dir>` is `workflow_executions/` (see [`Layout::workflow_executions_dir`]).
//!
//! - **Atomic writes.** Every write replaces the whole file through a synced temporary file
//!   and a rename, then syncs the directory: a reader, or a process started after a crash,
//!   sees the previous or the next version of a record, never a mix.
//! - **Ordered writes.** Writes to one record are serialized (per-id lock); writes to
//!   different records run in parallel. Every write applies the record size limit.
//! - **Cached listing.** Summaries are kept in memory, so listing reads no file.
//! - **Recovery.** [`FsExecutionStore::open`] removes the temporary files of interrupted
//!   writes and marks runs still `inprogress` (their process died) as failed with
//!   [`INTERRUPTED_ERROR`].
//!
//! A directory must be used by one process at a time: opening it declares every run in it
//! that is not finished to be dead.
//!
//! ```no_run
//! use muster_core::ExecutionStore;
//! use muster_core::store::ExecutionFilter;
//! use muster_fs::{FsExecutionStore, Layout};
//!
//! # async fn demo() -> Result<(), muster_core::StoreError> {
//! let (store, report) = FsExecutionStore::open_in(&Layout::new("/etc/muster")).await?;
//! println!("{} runs were interrupted", report.recovered.len());
//! let page = store.list(&ExecutionFilter::default()).await?;
//! println!("{} runs recorded", page.total);
//! # Ok(())
//! # }
//! ```

mod error;
mod file;
mod format;
mod locks;
mod recovery;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use muster_core::ValidationErrors;
use muster_core::resource::execution::{
    ExecutionId, ExecutionOutcome, ExecutionRecord, ExecutionSummary, RetentionPolicy, StepRecord,
};
use muster_core::store::{
    ExecutionFilter, ExecutionPage, ExecutionStore, NewExecution, StoreError,
};

pub use error::ExecutionFileError;

use crate::layout::Layout;
use locks::KeyedLocks;

/// The error of runs still in progress when muster is stopped by a signal (defined with
/// [`InFlightExecutions`](muster_core::store::InFlightExecutions), which every store uses).
pub use muster_core::store::STOPPED_ERROR;
/// The error of a run that was still in progress when its process stopped (found so when the
/// store is opened).
pub const INTERRUPTED_ERROR: &str =
    "execution interrupted: muster stopped before the workflow finished";

/// The kind named in store errors.
const KIND: &str = "WorkflowExecution";

/// An [`ExecutionStore`] keeping each record in a file of one directory. Clones share the
/// same directory, index and locks.
///
/// Created by [`open`](Self::open) or [`open_in`](Self::open_in); the directory itself is
/// created by the first write.
#[derive(Debug, Clone)]
pub struct FsExecutionStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    index: RwLock<HashMap<ExecutionId, ExecutionSummary>>,
    locks: KeyedLocks,
}

/// What [`FsExecutionStore::open`] found in the directory.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct OpenReport {
    /// Records read and indexed, the recovered ones included.
    pub loaded: usize,
    /// Runs found `inprogress` and marked failed with [`INTERRUPTED_ERROR`].
    pub recovered: Vec<ExecutionId>,
    /// Temporary files of interrupted writes that were removed.
    pub removed_temp_files: usize,
    /// Record files that could not be read; they are left alone and not listed.
    pub skipped: Vec<ExecutionFileError>,
}

// === impl FsExecutionStore ===

impl FsExecutionStore {
    /// Opens the execution directory `dir` (a missing one is empty): removes the temporary
    /// files of interrupted writes, marks runs left `inprogress` as failed (completed now,
    /// written atomically) and indexes every record.
    ///
    /// Unreadable record files are skipped and reported, not fatal. Fails when the
    /// directory cannot be listed or a recovered record cannot be written back.
    pub async fn open(dir: impl Into<PathBuf>) -> Result<(Self, OpenReport), StoreError> {
        let dir = dir.into();
        let now = Utc::now();
        let scan_dir = dir.clone();
        let scan = blocking(move || Ok(recovery::scan(&scan_dir, now)?)).await?;
        let store = Self {
            inner: Arc::new(Inner {
                dir,
                index: RwLock::new(scan.index),
                locks: KeyedLocks::default(),
            }),
        };
        Ok((store, scan.report))
    }

    /// Opens the `workflow_executions/` directory of a config directory; see
    /// [`open`](Self::open).
    pub async fn open_in(layout: &Layout) -> Result<(Self, OpenReport), StoreError> {
        Self::open(layout.workflow_executions_dir()).await
    }

    /// The directory holding the records.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The file holding the record of `id` (which may not exist).
    pub fn record_path(&self, id: &ExecutionId) -> PathBuf {
        file::record_path(&self.inner.dir, id)
    }

    /// Applies `change` to the stored record of `id` and writes it back, under its lock.
    async fn update(
        &self,
        id: &ExecutionId,
        change: impl FnOnce(&mut ExecutionRecord) + Send + 'static,
    ) -> Result<(), StoreError> {
        if !self.inner.contains(id) {
            return Err(not_found(id));
        }
        let guard = self.inner.locks.lock(id).await;
        let inner = Arc::clone(&self.inner);
        let id = id.clone();
        blocking(move || {
            let _guard = guard;
            let Some(mut record) = inner.read(&id)? else {
                inner.forget(&id);
                return Err(not_found(&id));
            };
            change(&mut record);
            record.enforce_size_limit();
            inner.write(&id, record)
        })
        .await
    }
}

#[async_trait]
impl ExecutionStore for FsExecutionStore {
    async fn begin(&self, run: NewExecution) -> Result<ExecutionId, StoreError> {
        check_id(&run.id)?;
        let mut record = ExecutionRecord::started(run.workflow_name, run.input, run.started_at);
        record.enforce_size_limit();
        let id = run.id;
        let guard = self.inner.locks.lock(&id).await;
        let inner = Arc::clone(&self.inner);
        blocking(move || {
            let _guard = guard;
            if inner.contains(&id) || file::exists(&file::record_path(&inner.dir, &id))? {
                return Err(StoreError::AlreadyExists {
                    kind: KIND,
                    key: id.to_string(),
                });
            }
            inner.write(&id, record)?;
            Ok(id)
        })
        .await
    }

    async fn record_step(&self, id: &ExecutionId, step: StepRecord) -> Result<(), StoreError> {
        self.update(id, |r| r.upsert_step(step)).await
    }

    async fn finish(
        &self,
        id: &ExecutionId,
        outcome: ExecutionOutcome,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.update(id, move |r| r.finish(outcome, at)).await
    }

    async fn get(&self, id: &ExecutionId) -> Result<Option<ExecutionRecord>, StoreError> {
        if !self.inner.contains(id) {
            return Ok(None);
        }
        let inner = Arc::clone(&self.inner);
        let id = id.clone();
        blocking(move || Ok(inner.read(&id)?)).await
    }

    async fn list(&self, filter: &ExecutionFilter) -> Result<ExecutionPage, StoreError> {
        let index = self
            .inner
            .index
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let matching = index.values().filter(|s| matches(filter, s)).cloned();
        Ok(filter.page(matching.collect()))
    }

    async fn prune(
        &self,
        policy: &RetentionPolicy,
        now: DateTime<Utc>,
    ) -> Result<usize, StoreError> {
        let expired = {
            let index = self
                .inner
                .index
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            policy.expired(index.iter().map(|(id, s)| (id, s.started_at)), now)
        };
        if expired.is_empty() {
            return Ok(0);
        }
        let guards = self.inner.locks.lock_all(&expired).await;
        let inner = Arc::clone(&self.inner);
        blocking(move || {
            let _guards = guards;
            inner.remove_all(&expired)
        })
        .await
    }
}

// === impl Inner ===

impl Inner {
    fn contains(&self, id: &ExecutionId) -> bool {
        self.index
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(id)
    }

    fn forget(&self, id: &ExecutionId) -> bool {
        self.index
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
            .is_some()
    }

    /// The stored record of `id`, or `None` when its file is gone. Blocks.
    fn read(&self, id: &ExecutionId) -> Result<Option<ExecutionRecord>, ExecutionFileError> {
        let path = file::record_path(&self.dir, id);
        let Some(bytes) = file::read(&path)? else {
            return Ok(None);
        };
        let (_, record) =
            format::decode(&bytes).map_err(|source| ExecutionFileError::Decode { path, source })?;
        Ok(Some(record))
    }

    /// Replaces the file of `id` by `record` and indexes it. Blocks; the caller holds the lock
    /// of `id`.
    fn write(&self, id: &ExecutionId, record: ExecutionRecord) -> Result<(), StoreError> {
        let summary = record.summary(id);
        let content = format::encode(id, record).map_err(|source| ExecutionFileError::Encode {
            id: id.clone(),
            source,
        })?;
        file::write_atomic(&self.dir, id, &content)?;
        self.index
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), summary);
        Ok(())
    }

    /// Deletes the records of `ids`; returns how many were still indexed. Every id is tried;
    /// the first failure is returned after. Blocks; the caller holds the locks of `ids`.
    fn remove_all(&self, ids: &[ExecutionId]) -> Result<usize, StoreError> {
        let mut removed = 0;
        let mut failure = None;
        for id in ids {
            match file::remove(&file::record_path(&self.dir, id)) {
                Ok(_) => removed += usize::from(self.forget(id)),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot delete expired execution record");
                    failure.get_or_insert(e);
                }
            }
        }
        if removed > 0 {
            file::sync_dir(&self.dir)?;
        }
        match failure {
            Some(e) => Err(e.into()),
            None => Ok(removed),
        }
    }
}

/// Runs blocking file work off the async runtime.
async fn blocking<T, F>(work: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, StoreError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::from(ExecutionFileError::Task(e)))?
}

/// [`ExecutionFilter::matches`] on a summary.
fn matches(filter: &ExecutionFilter, summary: &ExecutionSummary) -> bool {
    filter
        .workflow_name
        .as_deref()
        .is_none_or(|w| w == summary.workflow_name)
        && filter.status.is_none_or(|s| s == summary.status)
}

fn check_id(id: &ExecutionId) -> Result<(), StoreError> {
    if file::is_valid_id(id.as_str()) {
        return Ok(());
    }
    let mut errors = ValidationErrors::new();
    errors.push(
        "execution_id",
        "must be 1 to 128 ASCII letters, digits, '-' or '_' (it names a file)",
    );
    Err(errors.into())
}

fn not_found(id: &ExecutionId) -> StoreError {
    StoreError::NotFound {
        kind: KIND,
        key: id.to_string(),
    }
}
