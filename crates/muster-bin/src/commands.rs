//! One module per subcommand; [`run()`] dispatches.

mod agent;
mod auth;
mod call;
mod completion;
mod context;
mod crd;
mod create;
mod events;
mod get;
mod lifecycle;
mod list;
pub(crate) mod paths;
mod remote;
mod run;
mod schema;
mod serve;
mod standalone;
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
        Command::Crd => crd::run(),
        Command::Version => Ok(version::run()),
        Command::Agent(args) => agent::run(&args),
        Command::Standalone(args) => standalone::run(&args),
        Command::List(args) => list::run(&args),
        Command::Get(args) => get::run(&args),
        Command::Create(args) => create::run(&args),
        Command::Start(args) => lifecycle::start(&args),
        Command::Stop(args) => lifecycle::stop(&args),
        Command::Check(args) => lifecycle::check(&args),
        Command::Call(args) => call::run(&args),
        Command::Events(args) => events::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Context(args) => context::run(&args.command),
        Command::Completion(args) => Ok(completion::run(&args)),
        Command::Auth(args) => auth::run(&args.command),
    }
}
