//! `fake-apiserver`: the fake Kubernetes API server of the tests as a process, for `kubectl`
//! and `muster serve` (see `docs/testing/fake-apiserver.md`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use muster_tests::kube_fake::{FakeApiServer, FakeConfig};

/// A fake Kubernetes API server on the loopback interface.
#[derive(Debug, Parser)]
#[command(name = "fake-apiserver", version)]
struct Args {
    /// The address to listen on (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Write a kubeconfig pointing at the server to this file.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The default namespace of the written kubeconfig.
    #[arg(long, default_value = "default")]
    namespace: String,
    /// CRD files (YAML, several documents allowed) to create at start-up.
    #[arg(long = "crd")]
    crds: Vec<PathBuf>,
    /// How many changes the watch history keeps before older resourceVersions get 410 Gone.
    #[arg(long, default_value_t = 10_000)]
    history_window: usize,
    /// Seconds between BOOKMARK events on watches that ask for them.
    #[arg(long, default_value_t = 1.0)]
    bookmark_interval: f64,
    /// Write the server URL to this file once listening (for scripts and test harnesses).
    #[arg(long)]
    url_file: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config = FakeConfig {
        listen: args.listen,
        history_window: args.history_window,
        bookmark_interval: Duration::from_secs_f64(args.bookmark_interval.max(0.01)),
        log_requests: false,
        ..FakeConfig::default()
    };
    let server = FakeApiServer::start(config)?;
    for path in &args.crds {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        server
            .apply_crd_yaml(&text)
            .with_context(|| format!("creating the CRDs of {}", path.display()))?;
    }
    if let Some(path) = &args.kubeconfig {
        std::fs::write(
            path,
            muster_tests::kube_fake::kubeconfig_for(&server.url(), &args.namespace),
        )
        .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.url_file {
        std::fs::write(path, server.url())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    println!("fake-apiserver listening on {}", server.url());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        Ok::<_, anyhow::Error>(())
    })?;
    drop(server);
    Ok(())
}
