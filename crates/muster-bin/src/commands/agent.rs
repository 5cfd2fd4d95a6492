//! `muster agent --mcp-server`: the stdio bridge for IDEs.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use muster_aggregator::bridge::Bridge;

use super::remote;
use crate::cli::AgentArgs;

/// Runs the bridge until the IDE closes stdin.
pub(crate) fn run(args: &AgentArgs) -> anyhow::Result<ExitCode> {
    if !args.mcp_server {
        bail!(
            "`muster agent` needs --mcp-server: it then speaks MCP on stdin/stdout, for IDEs \
             (see docs/guides/ide.md)"
        );
    }
    let endpoint = remote::endpoint(&args.target)?;
    let bridge =
        Bridge::new(&endpoint)?.reconnect_timeout(Duration::from_secs(args.reconnect_timeout));
    tracing::info!(%endpoint, "bridging stdio to muster");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(bridge.run_stdio())?;
    // Leave the blocking stdin reader behind instead of waiting for it.
    runtime.shutdown_background();
    Ok(ExitCode::SUCCESS)
}
