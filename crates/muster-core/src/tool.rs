//! The tool-call contract.
//!
//! A tool call is a tower `Service<ToolCall, Response = CallToolResult, Error = ToolError>`,
//! erased at boundaries as [`ToolService`]. Timeouts, concurrency caps, token forwarding and
//! tracing are `Layer`s around it. A [`ToolProvider`] bundles a catalog of tools with the
//! service that calls them: MCP server backends, the core tools and the workflow tools are
//! all providers.

mod arguments;
mod call;
mod caller;
mod error;
mod provider;
pub mod reply;
mod tree;

pub use arguments::ToolArguments;
pub use call::{
    CallContext, CallerIdentity, ProgressSink, ProgressUpdate, SessionId, SessionNotifier,
    ToolCall, ToolName,
};
pub use caller::{CallerChannel, CallerRequests, upstream_meta};
pub use error::ToolError;
pub use provider::{
    Catalog, Revision, StaticAvailability, ToolAvailability, ToolProvider, ToolService,
};
pub use tree::{RunTree, TreeLimits};
