//! `muster`: the command-line tool of muster, the MCP aggregator.
//!
//! This file only sets up logging, parses the command line and hands over to
//! [`commands::run`]. Exit codes: 0 success, 1 failure (including invalid definitions), 2
//! usage errors.

mod cli;
mod client;
mod commands;
mod logging;
mod output;
mod telemetry;

use std::process::ExitCode;

use clap::Parser;

/// jemalloc, with its background thread, hands memory freed by closed sessions, finished
/// runs and dropped connections back to the system within seconds; glibc's malloc keeps it
/// in its per-thread arenas for good (docs/decisions/0008).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse_from(cli::workflow_flags(std::env::args_os().collect()));
    let silent = match &cli.command {
        cli::Command::Serve(args) => args.silent,
        cli::Command::Standalone(args) => args.serve.silent || !(args.verbose || cli.debug),
        _ => false,
    };
    let guard = logging::init(cli.debug, silent, &telemetry::settings(&cli.command));
    let outcome = commands::run(cli.command);
    drop(guard);
    match outcome {
        Ok(code) => code,
        Err(err) if output::is_closed_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
