//! `muster`: the command-line tool of muster, the MCP aggregator.
//!
//! This file only sets up logging, parses the command line and hands over to
//! [`commands::run`]. Exit codes: 0 success, 1 failure (including invalid definitions), 2
//! usage errors.

mod cli;
mod client;
mod commands;
mod output;

use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;

fn main() -> ExitCode {
    let cli = cli::Cli::parse_from(cli::workflow_flags(std::env::args_os().collect()));
    let silent = matches!(&cli.command, cli::Command::Serve(args) if args.silent);
    init_tracing(cli.debug, silent);
    match commands::run(cli.command) {
        Ok(code) => code,
        Err(err) if output::is_closed_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr so they never mix with a command's output, in colour only on a terminal.
/// `RUST_LOG` sets the filter; without it the level is `error` for `serve --silent`, `debug`
/// with `--debug` and `warn` otherwise.
fn init_tracing(debug: bool, silent: bool) {
    let default = if silent {
        LevelFilter::ERROR
    } else if debug {
        LevelFilter::DEBUG
    } else {
        LevelFilter::WARN
    };
    let filter = EnvFilter::builder()
        .with_default_directive(default.into())
        .from_env_lossy();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
