//! Shared harness of muster's end-to-end and architecture tests.
//!
//! The tests themselves live in `tests/tests/*.rs`, one behaviour per file. The end-to-end
//! tests run the real `muster` binary ([`muster_bin`]) on a config directory they write
//! ([`MusterConfig`]), talk to it over HTTP ([`McpClient`]), and put real MCP peers behind
//! and in front of it ([`deps`]):
//!
//! ```no_run
//! use muster_tests::{MusterConfig, deps};
//! use serde_json::json;
//!
//! # fn main() -> anyhow::Result<()> {
//! let dir = MusterConfig::new()
//!     .stdio_server("everything", deps::server_everything()?, ["stdio"])
//!     .expect_tool("x_everything_echo")
//!     .write()?;
//! let muster = dir.start()?;
//! let reply = muster.client()?.call("x_everything_echo", json!({"message": "hi"}))?;
//! assert_eq!(reply.text(), "Echo: hi");
//! # Ok(())
//! # }
//! ```

mod binary;
pub mod deps;
mod instance;
pub mod kube_fake;
pub mod markdown;
mod mcp;
pub mod oidc;
mod process;
pub mod sse_bench;
mod wait;

use std::path::{Path, PathBuf};

pub use binary::{MUSTER_BIN_ENV, muster_bin};
pub use instance::{
    ConfigDir, MusterConfig, MusterInstance, READY_TIMEOUT, TERM_GRACE, free_port,
    mcp_server_document,
};
pub use mcp::{Envelope, HANDSHAKE_PROTOCOL_VERSION, META_TOOLS, McpClient, jsonrpc_result};
pub use process::ProcessId;
pub use wait::eventually;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// A file under `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}
