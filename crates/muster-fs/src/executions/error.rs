//! What can go wrong reading or writing the execution directory.

use std::io;
use std::path::PathBuf;

use muster_core::StoreError;
use muster_core::resource::execution::ExecutionId;

/// A failure of the file operations behind [`FsExecutionStore`](super::FsExecutionStore).
///
/// The store's methods return it inside a [`StoreError`]: I/O failures as
/// [`StoreError::Backend`] (so they count as retryable), content that is not a record as
/// [`StoreError::Codec`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecutionFileError {
    /// A file system call failed.
    #[error("{}: cannot {op}: {source}", .path.display())]
    Io {
        /// What was attempted, e.g. `rename`.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A file does not hold an execution record.
    #[error("{}: not an execution record: {source}", .path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// Where the JSON went wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A record could not be turned into JSON.
    #[error("execution {id}: cannot encode the record: {source}")]
    Encode {
        /// The execution.
        id: ExecutionId,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// The blocking task doing the file work panicked or was cancelled.
    #[error("file task of the execution store failed: {0}")]
    Task(#[source] tokio::task::JoinError),
}

impl ExecutionFileError {
    /// An [`ExecutionFileError::Io`] of `op` on `path`.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { op, path, source }
    }
}

impl From<ExecutionFileError> for StoreError {
    fn from(e: ExecutionFileError) -> Self {
        match e {
            ExecutionFileError::Decode { .. } | ExecutionFileError::Encode { .. } => {
                StoreError::Codec {
                    message: e.to_string(),
                }
            }
            ExecutionFileError::Io { .. } | ExecutionFileError::Task(_) => {
                StoreError::Backend(Box::new(e))
            }
        }
    }
}

impl From<crate::atomic::FileError> for ExecutionFileError {
    fn from(e: crate::atomic::FileError) -> Self {
        Self::Io {
            op: e.op,
            path: e.path,
            source: e.source,
        }
    }
}
