//! `muster version`.

use std::process::ExitCode;

use crate::cli::VERSION;
use crate::output;

/// Prints `muster version <version>`, as `muster --version` does.
pub(super) fn run() -> ExitCode {
    output::print(&format!("muster {VERSION}\n"));
    ExitCode::SUCCESS
}
