//! # muster-aggregator
//!
//! MCP aggregation built as tower services: one MCP endpoint in front of many MCP servers.
//!
//! - [`backend`]: one [`Backend`](backend::Backend) per MCPServer (stdio, streamable HTTP,
//!   SSE) with its lifecycle, backoff and health probe; a `ToolProvider` over the server's
//!   own names.
//! - [`naming`]: `x_<server>_<tool>`, `toolPrefix`, namespaces and `family` grouping, as pure
//!   functions.
//! - [`registry`]: the live set of tool providers and the snapshot clients read; its
//!   [`service`](registry::Registry::service) routes a call to the right provider.
//! - [`layers`]: the per-call [`timeout`](layers::timeout) of `spec.timeout`, restarted by
//!   progress notifications up to `spec.progress.maxDuration`.
//! - [`meta_tools`]: `list_tools`, `filter_tools`, `describe_tool`, `list_core_tools`,
//!   `call_tool`, and the resource and prompt meta-tools.
//! - [`core_tools`]: the `core_*` tools (config, mcpserver, service, events), one more
//!   `ToolProvider`.
//! - `auth` (feature `http-client`): signing in to OAuth-protected MCP servers per session
//!   (`core_auth_login`, `/oauth/proxy/*`, per-session connections, `auth://status`).
//! - [`health`]: the readiness checks behind `/ready`.
//! - [`metrics`]: the Prometheus metrics of tool calls, meta-tools, servers and sessions.
//! - [`observe`]: spans and call logs of tool calls, W3C trace context in and out.
//! - [`services`]: the running backends, their status write-back and the MCPServer
//!   reconciler.
//! - `server` (feature `server`): the axum front door, `/mcp`, `/sse` + `/message`,
//!   `/health`, with the `Host` guard.
//! - `oauth_server` (feature `oauth-server`): muster as OAuth 2.1 authorization and
//!   resource server in front of the MCP endpoints.
//! - `tls` (feature `http-client`): extra CA certificates for outgoing HTTPS.
//! - `client` (feature `client`): a client of a muster server (rmcp's streamable-HTTP
//!   client), behind the `muster` CLI and `muster agent --repl`.
//! - `bridge` (feature `bridge`): stdio MCP forwarded to a muster over HTTP
//!   (`muster agent --mcp-server`).
//!
//! Where to start: build a [`Registry`](registry::Registry), add backends or your own
//! providers, and serve it with `server::Aggregator::builder(registry).build()`, standalone
//! or nested in your own axum router (`examples/embed-aggregator-in-axum`, and
//! `docs/library/embedding-aggregator.md` in the repository).
//!
//! It depends on `muster-core` only among muster crates; workflows reach it through the
//! `ToolProvider` contract.

#[cfg(feature = "http-client")]
pub mod auth;
pub mod backend;
#[cfg(feature = "bridge")]
pub mod bridge;
#[cfg(feature = "client")]
pub mod client;
pub mod core_tools;
pub mod health;
#[cfg(any(feature = "server", feature = "http-client"))]
mod json_key;
pub mod layers;
pub mod meta_tools;
pub mod metrics;
pub mod naming;
#[cfg(feature = "oauth-server")]
pub mod oauth_server;
pub mod observe;
pub mod registry;
#[cfg(feature = "server")]
pub mod server;
pub mod services;
#[cfg(feature = "http-client")]
pub mod tls;
mod wake_gate;
