//! `muster agent`: a client of a running muster. `--mcp-server` is the stdio bridge for
//! IDEs, `--repl` an interactive shell; with neither, it prints the server's notifications
//! until interrupted.

mod credentials;
mod repl;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use futures::StreamExt as _;
use muster_aggregator::bridge::Bridge;
use serde_json::Value;

use super::remote;
use crate::cli::AgentArgs;
use crate::output;

/// Runs the mode `args` choose.
pub(crate) fn run(args: &AgentArgs) -> anyhow::Result<ExitCode> {
    if args.mcp_server {
        return bridge(args);
    }
    remote::block_on(async {
        let client = remote::connect(&args.target).await?;
        if args.repl {
            repl::run(client).await?;
        } else {
            watch(client).await?;
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// Bridges stdio to muster until the IDE closes stdin.
fn bridge(args: &AgentArgs) -> anyhow::Result<ExitCode> {
    let endpoint = remote::endpoint(&args.target)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // The sign-in of `muster auth login`, read (and refreshed when needed) for every request;
    // without one, or once it has ended, the IDE gets `authenticate_muster`.
    let bridge = Bridge::new(&endpoint)?
        .reconnect_timeout(Duration::from_secs(args.reconnect_timeout))
        .credentials(Arc::new(credentials::StoredCredentials::new(&endpoint)));
    tracing::info!(%endpoint, "bridging stdio to muster");
    runtime.block_on(bridge.run_stdio())?;
    // Leave the blocking stdin reader behind instead of waiting for it.
    runtime.shutdown_background();
    Ok(ExitCode::SUCCESS)
}

/// Prints each notification of the session, one JSON message a line, until Ctrl-C or the
/// end of the session.
async fn watch(client: crate::client::Client) -> anyhow::Result<()> {
    let mut notifications = client.notifications().await?;
    eprintln!(
        "Connected to muster at {}; printing its notifications (Ctrl-C ends).",
        client.session().endpoint()
    );
    loop {
        tokio::select! {
            message = notifications.next() => match message {
                Some(message) => output::print(&format!("{}\n", Value::to_string(&message))),
                None => {
                    client.close().await;
                    anyhow::bail!("muster closed the session");
                }
            },
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    client.close().await;
    Ok(())
}
