//! `sse-bench`: a fast MCP server over the legacy HTTP+SSE transport and a load generator
//! for that transport, the baseline of muster's SSE hop in
//! `tests/benches/transport_variants.py` (see `muster_tests::sse_bench`).
//!
//! ```text
//! sse-bench serve --port 18200 [--host 127.0.0.1] [--threads N]
//! sse-bench load --url http://127.0.0.1:18200/sse [mcp-load's options]
//! ```

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use muster_tests::sse_bench::load::{self, LoadOptions};
use muster_tests::sse_bench::server::{self, ServeOptions};

/// A legacy HTTP+SSE MCP server and its load generator.
#[derive(Debug, Parser)]
#[command(name = "sse-bench", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the `echo` and `sleep_ms` tools at GET /sse + POST /messages?sessionId=…
    Serve(ServeOptions),
    /// Call a tool of a legacy SSE server at a fixed concurrency, as mcp-load does over
    /// streamable HTTP (exit status: 0 all calls succeeded, 1 some failed or none were
    /// made, 2 usage, 3 session setup failed).
    Load(Box<LoadOptions>),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Serve(options) => serve(&options),
        Command::Load(options) => run_load(&options),
    }
}

fn serve(options: &ServeOptions) -> ExitCode {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = options.threads {
        builder.worker_threads(n.max(1));
    }
    let result = builder
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(server::serve(options)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sse-bench serve: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_load(options: &LoadOptions) -> ExitCode {
    // One thread by default, as mcp-load: the load generator's own cost stays comparable.
    let rt = if options.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.threads)
            .enable_all()
            .build()
    };
    match rt {
        Ok(rt) => ExitCode::from(rt.block_on(load::run(options))),
        Err(e) => {
            eprintln!("sse-bench load: starting the runtime: {e}");
            ExitCode::from(load::EXIT_FAILED)
        }
    }
}
