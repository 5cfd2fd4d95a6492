//! `muster version`.

use std::process::ExitCode;

use crate::cli::VERSION;

/// Prints `muster version <version>`, as `muster --version` does.
pub(super) fn run() -> ExitCode {
    println!("muster {VERSION}");
    ExitCode::SUCCESS
}
