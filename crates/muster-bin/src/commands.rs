//! One module per subcommand; [`run`] dispatches.

mod paths;
mod schema;
mod serve;
mod validate;
mod version;

use std::process::ExitCode;

use crate::cli::Command;

/// Runs a subcommand and returns the process exit code.
pub(crate) fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve(args) => serve::run(&args),
        Command::Validate(args) => validate::run(&args),
        Command::Schema(args) => schema::run(&args),
        Command::Version => Ok(version::run()),
    }
}
