//! # muster-core
//!
//! The contracts every other muster crate implements, and the only crate a user needs to depend
//! on to write a storage backend, a tool provider or a reconciler of their own.
//!
//! Nothing in here performs I/O. The crate holds:
//!
//! - [`resource`]: the three resource kinds ([`McpServer`], [`Workflow`], [`WorkflowExecution`]),
//!   their envelope [`Object`], and [`validate`](resource::validate), pure functions that return
//!   *every* violation of a definition, each naming the field path and the rule.
//! - [`store`]: [`ResourceStore`] and [`ExecutionStore`], the storage seams, with
//!   [`MemoryStore`](store::MemoryStore), a complete concurrent in-memory backend.
//! - [`tool`]: the tool-call contract ([`ToolCall`], [`CallContext`], [`ToolError`],
//!   [`ToolService`], [`ToolProvider`]).
//! - [`reconcile`]: [`Reconcile`] and [`Action`], in the shape of kube-runtime, run by the
//!   filesystem and Kubernetes drivers alike.
//! - [`event`]: [`Event`] and [`EventSink`].
//! - [`config`]: the `config.yaml` model.
//! - [`metrics`]: the lock-free duration histogram every crate's metrics use.
//! - [`text`]: bounding error and event messages.
//! - [`secret`]: credential values, and redacting them from every text muster produces.
//! - [`auth`]: the stores of sign-in state of muster as OAuth client of protected servers,
//!   with an in-memory one.
//!
//! Where to start: a custom storage backend implements [`ResourceStore`] for the kinds it cares
//! about; a custom tool source implements [`ToolProvider`].
//!
//! ## Validating a definition
//!
//! ```
//! use muster_core::resource::mcp_server::McpServerDefinition;
//! use muster_core::ValidationContext;
//!
//! let def: McpServerDefinition = serde_json::from_value(serde_json::json!({
//!     "type": "streamable-http",
//!     "toolPrefix": "9lives",
//!     "env": { "TOKEN": "x" },
//! }))
//! .unwrap();
//! let errors = def.validate(&ValidationContext::filesystem()).unwrap_err();
//! assert_eq!(
//!     errors.messages(),
//!     [
//!         "spec.toolPrefix: must match ^[a-zA-Z][a-zA-Z0-9_-]*$",
//!         "spec.url: url is required for streamable-http and sse types",
//!         "spec.env: refused on a remote server: send credentials in spec.headers",
//!     ]
//! );
//! ```
//!
//! MCP payload types (`Tool`, `CallToolResult`, `Content`, ...) are [`rmcp::model`] types: they
//! are the protocol's vocabulary and pass through muster without loss.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod auth;
pub mod config;
pub mod event;
pub mod metrics;
pub mod reconcile;
pub mod resource;
pub mod secret;
pub mod store;
pub mod text;
pub mod tool;
pub mod trace_sampling;

pub use event::{BroadcastEventLog, Event, EventFilter, EventLog, EventSink, EventType};
pub use reconcile::{Action, Reconcile, ReconcileError};
pub use resource::{
    Kind, McpServer, Meta, Object, ObjectKey, Workflow, WorkflowExecution,
    validate::{Mode, ValidationContext, ValidationErrors, Violation},
};
pub use store::{ExecutionStore, ResourceStore, StoreError, StoreEvent};
pub use tool::{CallContext, ToolCall, ToolError, ToolName, ToolProvider, ToolService};

/// The API group of muster's resources.
pub const API_GROUP: &str = "muster.giantswarm.io";
/// The API version of muster's resources.
pub const API_VERSION: &str = "muster.giantswarm.io/v1alpha1";
/// The namespace a resource lives in when none is given.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A type-erased error, as used at tower service boundaries.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
