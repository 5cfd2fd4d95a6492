//! # muster-fs
//!
//! The filesystem mode of muster: a config directory of YAML files.
//!
//! - [`layout`]: where things live (`config.yaml`, `mcpservers/`, `workflows/`,
//!   `workflow_executions/`, `events/`) and how a file name becomes a resource name.
//! - [`codec`]: YAML text to typed values, with errors that carry the field path, line and
//!   column.
//! - [`document`]: the resource envelope every definition file must have (`apiVersion`,
//!   `kind`, `metadata`, `spec`, optionally `status`).
//! - [`load`]: [`ConfigDir::load`] reads a whole directory, one result per file.
//! - [`executions`]: [`FsExecutionStore`], workflow execution records as atomically replaced
//!   files of `workflow_executions/`.
//! - [`store`]: [`FsStore`], the `ResourceStore` of MCPServer and Workflow definition files,
//!   with a debounced, resyncing watch of their directory.
//! - [`events`]: [`FsEventLog`], the `EventSink` and `EventLog` of daily JSON-lines files in
//!   `events/`.
//! - [`config_store`]: [`FsConfigStore`], `config.yaml` behind the `core_config_*` tools.
//! - [`driver`]: the filesystem counterpart of kube-runtime's `Controller`, running a
//!   `Reconcile` implementation from a store's watch events with requeues and retries.
//!
//! Every file is replaced atomically and durably (a temporary file, `fsync`, rename).
//!
//! Where to start: [`ConfigDir`] to read a directory once, [`FsStore`] to serve it.

mod atomic;
pub mod codec;
pub mod config_store;
pub mod document;
pub mod driver;
pub mod events;
pub mod executions;
pub mod layout;
pub mod load;
pub mod store;
mod watch;

pub use codec::{Location, ParseError};
pub use config_store::FsConfigStore;
pub use events::{EventLogError, EventLogOptions, FsEventLog};
pub use executions::{ExecutionFileError, FsExecutionStore, OpenReport};
pub use layout::Layout;
pub use load::{ConfigDir, ConfigFile, LoadDirError, LoadError, Loaded, LoadedConfig, Problem};
pub use store::{FsKind, FsStore, FsStoreBuilder};
