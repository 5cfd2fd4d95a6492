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

/// jemalloc's settings built into the binary (`_RJEM_MALLOC_CONF` is read after them and
/// wins): a thread's cache of freed blocks is swept after every 1 MiB its thread allocates
/// instead of every 64 KiB, which spared a proxied call about 1.3 % of its instructions
/// (docs/decisions/0008, amendment).
///
/// This is the `malloc_conf` string jemalloc looks up when it starts: a weak symbol of
/// jemalloc's that a program may define (`tikv-jemalloc-sys` prefixes jemalloc's symbols
/// with `_rjem_`), a pointer to the first character of a NUL-terminated string, as the
/// reference to its first byte is.
#[cfg(not(target_env = "msvc"))]
#[allow(unsafe_code)] // Naming a symbol: see docs/decisions/0008, amendment.
#[unsafe(export_name = "_rjem_malloc_conf")]
static JEMALLOC_MALLOC_CONF: Option<&u8> = Some(&b"tcache_gc_incr_bytes:1048576\0"[0]);

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
