//! `sse-bench`: a baseline for muster's hop to MCP servers over the legacy HTTP+SSE transport
//! (protocol revision 2024-11-05: a `GET /sse` event stream plus `POST /messages?sessionId=…`).
//!
//! Two halves, one per subcommand of the `sse-bench` binary:
//!
//! - [`server`] (`sse-bench serve`): a fast legacy-SSE MCP server written directly on axum,
//!   serving the same `echo` and `sleep_ms` tools as the shared harness's `bench-backend`.
//! - [`load`] (`sse-bench load`): a load generator with the options, summary line and `--json`
//!   report of the harness's `mcp-load`, speaking legacy SSE instead of streamable HTTP.
//!
//! `tests/benches/transport_variants.py` measures muster in front of `sse-bench serve` (row
//! `muster-sse-rust`) against `sse-bench load` calling that server directly (row `direct-sse`).
//!
//! ```no_run
//! use muster_tests::sse_bench::server::{ServeOptions, serve};
//!
//! # async fn run() -> anyhow::Result<()> {
//! serve(&ServeOptions { host: "127.0.0.1".parse()?, port: 18200, threads: None }).await
//! # }
//! ```

pub mod load;
pub mod server;
