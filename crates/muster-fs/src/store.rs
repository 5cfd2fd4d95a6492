//! [`FsStore`]: MCPServer and Workflow definitions as YAML files of a config directory, behind
//! [`ResourceStore`].
//!
//! Each object is one file, `<root>/mcpservers/<name>.yaml` or `<root>/workflows/<name>.yaml`
//! (`.yml` is read too), holding the full resource. Reads go to the files every time, through
//! the same decoding and validation as [`ConfigDir::load`](crate::ConfigDir::load), so a file
//! edited by hand is seen at once.
//!
//! - **Names.** The resource name is the file name. One file per name: a name is unique in its
//!   directory, whatever namespace the file declares. [`get`](ResourceStore::get) of a key
//!   whose file declares another namespace finds nothing.
//! - **Namespace.** A file without `metadata.namespace`, and an object written without one, is
//!   in the store's namespace: `namespace` of `config.yaml` (`default` unless set), or the one
//!   given to [`FsStoreBuilder::namespace`].
//! - **Broken files.** [`list`](ResourceStore::list) skips a file that cannot be read or is
//!   invalid; [`get`](ResourceStore::get) of it fails with [`StoreError::Codec`] carrying the
//!   file's absolute path and every problem; [`watch`](ResourceStore::watch) reports it as
//!   [`StoreEvent::Invalid`].
//! - **Resource versions** are the hash of a file's content (16 hex digits). They change with
//!   every change of the content, whoever made it, survive restarts, and stay the same when a
//!   file is rewritten unchanged or only touched. [`apply`](ResourceStore::apply) with a
//!   resource version checks it against the file's, as the memory store does.
//! - **Generations** are kept in the file (`metadata.generation`): 1 on creation, incremented
//!   by `apply` when the spec changes; a file without one reads as generation 1. Creation
//!   writes `metadata.creationTimestamp` too.
//! - **Writes** are atomic (temporary file in the same directory, fsync, rename, directory
//!   fsync) and validated first ([`StoreError::Invalid`]); writes of one store run one at a
//!   time. [`create`](ResourceStore::create) fails with [`StoreError::AlreadyExists`] when
//!   `<name>.yaml` or `<name>.yml` exists, also when another process created it a moment
//!   before. `apply` writes nothing when the file would not change.
//! - **Status** is written back into the definition file by
//!   [`set_status`](ResourceStore::set_status), only when it changed (the file, and its
//!   mtime, stay untouched otherwise). Only the `status:` block is replaced: comments and
//!   formatting of the rest of the file are kept.
//! - [`delete`](ResourceStore::delete) removes the file, and a second file of the same name
//!   (`x.yml` next to `x.yaml`). A file that cannot be read is not deleted: there is no last
//!   state to return, and the call fails with [`StoreError::Codec`].
//!
//! See [`watch`](ResourceStore::watch) on [`FsStore`] for the change stream.
//!
//! ```no_run
//! use muster_core::{McpServer, Object, ResourceStore};
//! use muster_core::resource::mcp_server::McpServerSpec;
//! use muster_fs::FsStore;
//!
//! # async fn demo() -> Result<(), muster_core::StoreError> {
//! let store = FsStore::<McpServer>::new("/home/me/.config/muster");
//! let spec = McpServerSpec::streamable_http("http://localhost:9000/mcp");
//! store.create(Object::new("tools", spec)).await?;
//! for server in store.list(None).await? {
//!     println!("{}", server.name());
//! }
//! # Ok(())
//! # }
//! ```

mod file;
mod kind;
mod ops;
mod read;
mod render;
#[cfg(test)]
mod tests;

use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_core::stream::BoxStream;
use muster_core::config::MusterConfig;
use muster_core::{Object, ObjectKey, ResourceStore, StoreError, StoreEvent};

pub use file::FileError;
pub use kind::FsKind;

use crate::codec::from_yaml;
use crate::layout::Layout;
pub(crate) use file::ensure_dir;
pub(crate) use read::{Definitions, Entry};

/// How long the watch waits after the last change of a file before reading it.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(500);
/// How often the watch rereads the whole directory, in case a change notification was lost.
pub const DEFAULT_RESYNC_INTERVAL: Duration = Duration::from_secs(30);

/// A [`ResourceStore`] of the definition files of kind `K` in a config directory.
///
/// Cloning is cheap; clones share the directory and the write lock. See the
/// [module documentation](self) for the rules.
#[derive(Debug)]
pub struct FsStore<K: FsKind> {
    inner: Arc<Inner>,
    _kind: PhantomData<fn() -> K>,
}

/// What the store and its watches share.
#[derive(Debug)]
pub(crate) struct Inner {
    /// The definitions of the store's kind.
    pub(crate) defs: Definitions,
    /// How watches behave.
    pub(crate) watch: WatchConfig,
    /// Serializes the store's writes.
    writes: Arc<tokio::sync::Mutex<()>>,
}

/// The settings of [`ResourceStore::watch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WatchConfig {
    /// Quiet time after a file's last change before it is read.
    pub(crate) debounce: Duration,
    /// Time between full rereads of the directory; zero for none.
    pub(crate) resync: Duration,
    /// Whether change notifications of the operating system are used.
    pub(crate) file_events: bool,
}

/// Builds an [`FsStore`]; see [`FsStore::builder`].
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct FsStoreBuilder<K: FsKind> {
    root: PathBuf,
    namespace: Option<String>,
    watch: WatchConfig,
    _kind: PhantomData<fn() -> K>,
}

// === impl FsStore ===

impl<K: FsKind> Clone for FsStore<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            _kind: PhantomData,
        }
    }
}

impl<K: FsKind> FsStore<K> {
    /// The store of the config directory at `root`, with every default; see
    /// [`builder`](Self::builder).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self::builder(root).build()
    }

    /// A builder for the store of the config directory at `root`.
    ///
    /// Defaults: the namespace of `config.yaml`, a debounce of [`DEFAULT_DEBOUNCE`], a resync
    /// every [`DEFAULT_RESYNC_INTERVAL`], change notifications on.
    pub fn builder(root: impl Into<PathBuf>) -> FsStoreBuilder<K> {
        FsStoreBuilder {
            root: root.into(),
            namespace: None,
            watch: WatchConfig {
                debounce: DEFAULT_DEBOUNCE,
                resync: DEFAULT_RESYNC_INTERVAL,
                file_events: true,
            },
            _kind: PhantomData,
        }
    }

    /// The config directory's layout.
    pub fn layout(&self) -> &Layout {
        self.inner.defs.layout()
    }

    /// The directory holding the definition files, e.g. `<root>/mcpservers`.
    pub fn dir(&self) -> &Path {
        self.inner.defs.dir()
    }

    /// The namespace of objects that do not name one.
    pub fn namespace(&self) -> &str {
        self.inner.defs.namespace()
    }

    /// Runs a read on the blocking pool.
    async fn read<T: Send + 'static>(
        &self,
        op: impl FnOnce(&Definitions) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = Arc::clone(&self.inner);
        blocking(move || op(&inner.defs)).await
    }

    /// Runs a write on the blocking pool, after the writes before it. The lock is held by the
    /// blocking task itself, so a caller that gives up waiting cannot let the next write
    /// overlap this one.
    async fn write<T: Send + 'static>(
        &self,
        op: impl FnOnce(&Definitions) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let guard = Arc::clone(&self.inner.writes).lock_owned().await;
        let inner = Arc::clone(&self.inner);
        blocking(move || {
            let result = op(&inner.defs);
            drop(guard);
            result
        })
        .await
    }
}

#[async_trait]
impl<K: FsKind> ResourceStore<K> for FsStore<K> {
    async fn get(&self, key: &ObjectKey) -> Result<Option<Object<K>>, StoreError> {
        let key = key.clone();
        self.read(move |defs| ops::get::<K>(defs, &key)).await
    }

    async fn list(&self, namespace: Option<&str>) -> Result<Vec<Object<K>>, StoreError> {
        let namespace = namespace.map(str::to_owned);
        self.read(move |defs| ops::list::<K>(defs, namespace.as_deref()))
            .await
    }

    async fn create(&self, obj: Object<K>) -> Result<Object<K>, StoreError> {
        self.write(move |defs| ops::create(defs, obj)).await
    }

    async fn apply(&self, obj: Object<K>) -> Result<Object<K>, StoreError> {
        self.write(move |defs| ops::apply(defs, obj)).await
    }

    async fn delete(&self, key: &ObjectKey) -> Result<Object<K>, StoreError> {
        let key = key.clone();
        self.write(move |defs| ops::delete::<K>(defs, &key)).await
    }

    async fn set_status(
        &self,
        key: &ObjectKey,
        status: K::Status,
    ) -> Result<Object<K>, StoreError> {
        let key = key.clone();
        self.write(move |defs| ops::set_status::<K>(defs, &key, status))
            .await
    }

    /// Changes of the definition files, beginning with a [`StoreEvent::Resynced`] of every
    /// valid object.
    ///
    /// Each stream runs its own watcher on the kind's directory (created when missing) and
    /// stops it when dropped; it must be polled inside a Tokio runtime.
    ///
    /// - **Debounce.** A file is read once it has not changed for the debounce time (500 ms
    ///   by default), so the notifications of one save become one event. What is reported is
    ///   the file's state at that moment compared with the last state reported: a file created
    ///   and written is one `Applied`, created and deleted is nothing, changed and deleted is
    ///   one `Deleted`, renamed is a `Deleted` of the old name and an `Applied` of the new.
    /// - **Resync.** Every 30 s by default, and whenever notifications were lost, the whole
    ///   directory is read and the differences are reported the same way.
    /// - **What counts as a change.** `Applied` is sent when a file's metadata or spec differ
    ///   from the last reported object. A file rewritten unchanged, touched, or changed only in
    ///   its `status:` block sends nothing: a reconciler writing status through
    ///   [`set_status`](ResourceStore::set_status) never triggers itself. Events carry the
    ///   status as read, which may be older than the file's by the status-only changes since.
    /// - **Broken files.** A file that cannot be read or is invalid sends
    ///   [`StoreEvent::Invalid`] (again only when its problems change); when its name had a
    ///   valid object, a `Deleted` of that object follows, so the objects reported always
    ///   equal what [`list`](ResourceStore::list) returns.
    fn watch(&self) -> BoxStream<'static, Result<StoreEvent<K>, StoreError>> {
        crate::watch::watch::<K>(Arc::clone(&self.inner))
    }
}

// === impl FsStoreBuilder ===

impl<K: FsKind> FsStoreBuilder<K> {
    /// The namespace of objects that do not name one, instead of `config.yaml`'s.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// How long a watch waits after a file's last change before reading it; default 500 ms.
    pub fn debounce(mut self, debounce: Duration) -> Self {
        self.watch.debounce = debounce;
        self
    }

    /// How often a watch rereads the whole directory; default 30 s. Zero turns the periodic
    /// resync off (a watch still rereads everything when notifications were lost).
    pub fn resync_interval(mut self, interval: Duration) -> Self {
        self.watch.resync = interval;
        self
    }

    /// Whether watches use the operating system's change notifications; default on.
    ///
    /// Turn them off on file systems that do not deliver them (some network and container
    /// mounts): changes are then seen by the periodic resync only.
    pub fn file_events(mut self, enabled: bool) -> Self {
        self.watch.file_events = enabled;
        self
    }

    /// The store. Reads `config.yaml` for the namespace unless one was given; a missing or
    /// broken `config.yaml` means `default`, as for [`ConfigDir::load`](crate::ConfigDir::load).
    pub fn build(self) -> FsStore<K> {
        let layout = Layout::new(self.root);
        let namespace = self
            .namespace
            .unwrap_or_else(|| configured_namespace(&layout));
        FsStore {
            inner: Arc::new(Inner {
                defs: Definitions::new::<K>(layout, namespace),
                watch: self.watch,
                writes: Arc::default(),
            }),
            _kind: PhantomData,
        }
    }
}

/// The namespace `config.yaml` configures, `default` when it is missing or broken.
fn configured_namespace(layout: &Layout) -> String {
    let path = layout.config_file();
    let config = match std::fs::read_to_string(&path) {
        Ok(text) => from_yaml::<MusterConfig>(&text).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), error = %e, "config file is broken");
            MusterConfig::default()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => MusterConfig::default(),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read the config file");
            MusterConfig::default()
        }
    };
    config.namespace().to_owned()
}

/// Runs blocking file work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    op: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(op)
        .await
        .map_err(|e| StoreError::Backend(Box::new(e)))?
}
