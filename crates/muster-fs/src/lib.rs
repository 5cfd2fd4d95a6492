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
//!
//! Where to start: [`ConfigDir`].

pub mod codec;
pub mod document;
pub mod driver;
pub mod executions;
pub mod layout;
pub mod load;

pub use codec::{Location, ParseError};
pub use executions::{ExecutionFileError, FsExecutionStore, OpenReport};
pub use layout::Layout;
pub use load::{ConfigDir, ConfigFile, LoadDirError, LoadError, Loaded, LoadedConfig, Problem};
