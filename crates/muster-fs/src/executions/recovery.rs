//! Opening the execution directory: index every record, remove the temporary files of
//! interrupted writes, and mark runs that a dead process left `inprogress` as failed.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::Path;

use chrono::{DateTime, Utc};
use muster_core::resource::execution::{
    ExecutionId, ExecutionOutcome, ExecutionStatus, ExecutionSummary,
};

use super::error::ExecutionFileError;
use super::file::{self, EntryKind};
use super::{INTERRUPTED_ERROR, OpenReport, format};

/// What opening found: the summaries to index, and the report for the caller.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub(crate) index: HashMap<ExecutionId, ExecutionSummary>,
    pub(crate) report: OpenReport,
}

/// Scans `dir` (a missing one is empty), recovering interrupted runs as finished at `now`.
///
/// Files that cannot be read are skipped and listed in the report; only a directory that
/// cannot be listed, or a recovered record that cannot be written back, fails the scan.
pub(crate) fn scan(dir: &Path, now: DateTime<Utc>) -> Result<Scan, ExecutionFileError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Scan::default()),
        Err(e) => return Err(ExecutionFileError::io("list", dir)(e)),
    };
    let mut scan = Scan::default();
    for entry in entries {
        let entry = entry.map_err(ExecutionFileError::io("list", dir))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let path = entry.path();
        match file::classify(name) {
            EntryKind::Temp => match file::remove(&path) {
                Ok(_) => scan.report.removed_temp_files += 1,
                Err(e) => tracing::warn!(error = %e, "cannot remove temporary execution file"),
            },
            EntryKind::Record(id) => scan.load(dir, &path, id, now)?,
            EntryKind::Other => {}
        }
    }
    if scan.report.removed_temp_files > 0 {
        file::sync_dir(dir)?;
    }
    Ok(scan)
}

impl Scan {
    /// Indexes the record at `path`, recovering it when interrupted; skips it when unreadable.
    fn load(
        &mut self,
        dir: &Path,
        path: &Path,
        id: ExecutionId,
        now: DateTime<Utc>,
    ) -> Result<(), ExecutionFileError> {
        let decoded = file::read(path).and_then(|bytes| {
            bytes
                .map(|bytes| format::decode(&bytes))
                .transpose()
                .map_err(|source| ExecutionFileError::Decode {
                    path: path.to_owned(),
                    source,
                })
        });
        let (stored_id, mut record) = match decoded {
            Ok(Some(decoded)) => decoded,
            // Removed since the directory was listed.
            Ok(None) => return Ok(()),
            Err(e) => {
                tracing::warn!(error = %e, "skipping unreadable execution record");
                self.report.skipped.push(e);
                return Ok(());
            }
        };
        if stored_id != id {
            tracing::warn!(
                file = %path.display(),
                execution_id = %stored_id,
                "execution record names another id than its file; the file name wins"
            );
        }
        if record.status == ExecutionStatus::Inprogress {
            record.finish(ExecutionOutcome::Failed(INTERRUPTED_ERROR.to_owned()), now);
            record.enforce_size_limit();
            let summary = record.summary(&id);
            let content =
                format::encode(&id, record).map_err(|source| ExecutionFileError::Encode {
                    id: id.clone(),
                    source,
                })?;
            file::write_atomic(dir, &id, &content)?;
            self.index.insert(id.clone(), summary);
            self.report.recovered.push(id);
        } else {
            self.index.insert(id.clone(), record.summary(&id));
        }
        self.report.loaded += 1;
        Ok(())
    }
}
