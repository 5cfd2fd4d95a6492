//! The seam for servers reached by a byte stream of the embedder's instead of their
//! spec's transport.

use std::fmt;

use async_trait::async_trait;
use tokio::io::DuplexStream;

/// Opens a byte stream to a server in place of the transport of its spec: in-process
/// servers, tests, benchmarks. The stream carries newline-delimited JSON-RPC, as a stdio
/// server speaks it; the server side is the other end of a `tokio::io::duplex` pair.
#[async_trait]
pub trait Connector: Send + Sync + fmt::Debug {
    /// A fresh stream to the server `name`; called on every start.
    async fn connect(&self, name: &str) -> std::io::Result<DuplexStream>;
}
