//! The storage seams: [`ResourceStore`] for declarative resources and [`ExecutionStore`] for
//! append-shaped execution records.
//!
//! Implementations: [`MemoryStore`] and [`MemoryExecutionStore`] here (the default for
//! embedders and the test double everywhere), YAML files in `muster-fs`, custom resources in
//! `muster-k8s`. A backend may implement only the kinds it cares about.

#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod conformance;
mod error;
mod execution;
mod in_flight;
mod memory;
mod memory_execution;

use async_trait::async_trait;
use futures_core::stream::BoxStream;

pub use error::StoreError;
pub use execution::{ExecutionFilter, ExecutionPage, ExecutionStore, NewExecution};
pub use in_flight::{InFlightExecutions, STOPPED_ERROR};
pub use memory::MemoryStore;
pub use memory_execution::MemoryExecutionStore;

use crate::resource::{Kind, McpServer, Object, ObjectKey, Workflow};

/// A change seen by [`ResourceStore::watch`], after kube's watcher events.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StoreEvent<K: Kind> {
    /// An object was created or changed.
    Applied(Object<K>),
    /// An object was deleted; this is its last known state.
    Deleted(Object<K>),
    /// The complete current set, sent first and again whenever a watcher fell behind.
    Resynced(Vec<Object<K>>),
    /// A definition could not be read (filesystem mode): the broken source only, every other
    /// object is unaffected.
    Invalid {
        /// The key the broken definition would have had, when known.
        key: Option<ObjectKey>,
        /// Where it came from, e.g. a file path.
        source: String,
        /// What is wrong with it.
        error: String,
    },
}

/// Storage of one resource kind.
///
/// Held as `Arc<dyn ResourceStore<K>>`. Every implementation must be safe to call
/// concurrently; `watch` streams are independent of each other.
#[async_trait]
pub trait ResourceStore<K: Kind>: Send + Sync + std::fmt::Debug {
    /// The object with this key, if any.
    async fn get(&self, key: &ObjectKey) -> Result<Option<Object<K>>, StoreError>;

    /// Every object, optionally only those of one namespace, sorted by key.
    async fn list(&self, namespace: Option<&str>) -> Result<Vec<Object<K>>, StoreError>;

    /// Creates an object; fails with [`StoreError::AlreadyExists`] when the key is taken.
    async fn create(&self, obj: Object<K>) -> Result<Object<K>, StoreError>;

    /// Creates or replaces an object's metadata and spec, keeping the stored status.
    ///
    /// When `obj.metadata.resource_version` is set it must match the stored one, or the call
    /// fails with [`StoreError::Conflict`].
    async fn apply(&self, obj: Object<K>) -> Result<Object<K>, StoreError>;

    /// Deletes an object and returns its last state; [`StoreError::NotFound`] when absent.
    async fn delete(&self, key: &ObjectKey) -> Result<Object<K>, StoreError>;

    /// Replaces the status of an existing object, leaving its spec alone.
    async fn set_status(&self, key: &ObjectKey, status: K::Status)
    -> Result<Object<K>, StoreError>;

    /// Changes from now on, beginning with a [`StoreEvent::Resynced`] of the current set.
    fn watch(&self) -> BoxStream<'static, Result<StoreEvent<K>, StoreError>>;
}

/// Storage of MCPServer definitions.
pub type McpServerStore = dyn ResourceStore<McpServer>;
/// Storage of Workflow definitions.
pub type WorkflowStore = dyn ResourceStore<Workflow>;
