//! # muster-aggregator
//!
//! MCP aggregation built as tower services: one MCP endpoint in front of many MCP servers.
//!
//! The crate's layout (filled as the aggregator lands):
//!
//! - [`backend`]: one backend per MCPServer (stdio, streamable HTTP, SSE) with its lifecycle.
//! - [`naming`]: `x_<server>_<tool>`, `toolPrefix`, namespaces and `family` deduplication.
//! - [`layers`]: per-backend timeout, progress, concurrency, token forwarding, redaction.
//! - [`meta_tools`]: `list_tools`, `filter_tools`, `describe_tool`, `call_tool`, resources and
//!   prompts.
//! - [`core_tools`]: the `core_*` tools, one more `ToolProvider`.
//!
//! It depends on `muster-core` only among muster crates; workflows reach it through the
//! `ToolProvider` contract.

pub mod backend;
#[cfg(feature = "bridge")]
pub mod bridge;
pub mod core_tools;
pub mod layers;
pub mod meta_tools;
pub mod naming;
pub mod registry;
#[cfg(feature = "server")]
pub mod server;
pub mod services;
