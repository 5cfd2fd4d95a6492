//! `muster completion <shell>`: shell completion scripts.

use std::process::ExitCode;

use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionArgs};

/// Prints the completion script of `args.shell` to stdout.
pub(crate) fn run(args: &CompletionArgs) -> ExitCode {
    let mut command = Cli::command();
    clap_complete::generate(args.shell, &mut command, "muster", &mut std::io::stdout());
    ExitCode::SUCCESS
}
