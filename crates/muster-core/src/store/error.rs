//! Errors of the stores.

use crate::BoxError;
use crate::resource::{ObjectKey, ValidationErrors};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No object has this key.
    #[error("{kind} {key} not found")]
    NotFound {
        /// The kind, e.g. `MCPServer`.
        kind: &'static str,
        /// The key.
        key: String,
    },
    /// An object with this key exists already.
    #[error("{kind} {key} already exists")]
    AlreadyExists {
        /// The kind.
        kind: &'static str,
        /// The key.
        key: String,
    },
    /// The object changed since it was read.
    #[error("{key} was changed concurrently (expected resource version {expected}, found {found})")]
    Conflict {
        /// The key.
        key: String,
        /// The version the caller had.
        expected: String,
        /// The version stored.
        found: String,
    },
    /// The object breaks the kind's rules.
    #[error("invalid definition: {0}")]
    Invalid(#[source] Box<ValidationErrors>),
    /// The stored form could not be read or written.
    #[error("{message}")]
    Codec {
        /// What went wrong, with the location.
        message: String,
    },
    /// The backing storage failed (I/O, API server); may succeed when retried.
    #[error("storage backend failed: {0}")]
    Backend(#[source] BoxError),
}

impl StoreError {
    /// A [`StoreError::NotFound`] for `key` of kind `kind`.
    pub fn not_found(kind: &'static str, key: &ObjectKey) -> Self {
        Self::NotFound {
            kind,
            key: key.to_string(),
        }
    }

    /// Whether retrying the same call may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Backend(_) | Self::Conflict { .. })
    }

    /// A stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "not_found",
            Self::AlreadyExists { .. } => "already_exists",
            Self::Conflict { .. } => "conflict",
            Self::Invalid(_) => "invalid",
            Self::Codec { .. } => "codec",
            Self::Backend(_) => "backend",
        }
    }
}

impl From<ValidationErrors> for StoreError {
    fn from(e: ValidationErrors) -> Self {
        Self::Invalid(Box::new(e))
    }
}
