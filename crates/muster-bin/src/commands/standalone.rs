//! `muster standalone`: `serve` and `agent --mcp-server` in one process. The server runs as
//! `muster serve` would; once it listens, the stdio bridge forwards the IDE's messages to
//! its endpoint. The IDE closing stdin stops the server, a stopped server ends the process.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use muster_aggregator::bridge::Bridge;
use tokio::sync::oneshot;

use super::serve::{self, Hooks};
use crate::cli::StandaloneArgs;

/// Runs the server and the bridge until stdin ends or a shutdown signal.
pub(crate) fn run(args: &StandaloneArgs) -> anyhow::Result<ExitCode> {
    let (listening, endpoint) = oneshot::channel::<String>();
    let (stop, stopped) = oneshot::channel::<()>();
    let reconnect = Duration::from_secs(args.reconnect_timeout);
    let bridge = std::thread::Builder::new()
        .name("muster-bridge".to_owned())
        .spawn(move || bridge(endpoint, stop, reconnect))
        .context("cannot start the stdio bridge")?;
    let outcome = serve::run_with(
        &args.serve,
        Hooks {
            listening: Some(listening),
            stop: Some(stopped),
        },
    );
    if bridge.is_finished() {
        match bridge.join() {
            Ok(Err(e)) => return Err(e),
            Ok(Ok(())) => {}
            Err(_) => anyhow::bail!("the stdio bridge panicked"),
        }
    }
    // A bridge still reading stdin is left behind: the server is gone, so is the process.
    outcome
}

/// Forwards stdio to the server once it listens; then stops it. A server that never
/// listens (it failed, or serves MCP on stdio itself, `aggregator.transport: stdio`) is
/// left alone.
fn bridge(
    endpoint: oneshot::Receiver<String>,
    stop: oneshot::Sender<()>,
    reconnect: Duration,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = runtime.block_on(async move {
        // The server drops the sender without a word only as it ends.
        let Ok(endpoint) = endpoint.await else {
            return Ok(());
        };
        tracing::info!(%endpoint, "bridging stdio to the server of this process");
        let result = Bridge::new(&endpoint)?
            .reconnect_timeout(reconnect)
            .run_stdio()
            .await;
        let _ = stop.send(());
        result.map_err(anyhow::Error::from)
    });
    // Leave the blocking stdin reader behind instead of waiting for it.
    runtime.shutdown_background();
    outcome
}
