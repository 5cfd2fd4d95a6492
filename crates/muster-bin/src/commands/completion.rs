//! `muster completion <shell>`: shell completion scripts.

use std::process::ExitCode;

use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionArgs};
use crate::output;

/// Prints the completion script of `args.shell` to stdout.
pub(crate) fn run(args: &CompletionArgs) -> ExitCode {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "muster", &mut script);
    output::print(&String::from_utf8_lossy(&script));
    ExitCode::SUCCESS
}
