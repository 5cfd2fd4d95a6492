//! The command line: global flags and one subcommand per job.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod client;

pub(crate) use self::client::*;

/// What `muster --version` prints after the binary name.
pub(crate) const VERSION: &str = concat!("version ", env!("CARGO_PKG_VERSION"));

/// The default config directory, with `~` standing for the home directory.
pub(crate) const DEFAULT_CONFIG_PATH: &str = "~/.config/muster";

/// muster aggregates MCP servers behind one endpoint and runs workflows across their tools.
#[derive(Debug, Parser)]
#[command(name = "muster", version = VERSION)]
pub(crate) struct Cli {
    /// Log at debug level (`RUST_LOG` overrides).
    #[arg(long, global = true)]
    pub(crate) debug: bool,

    /// The command to run.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the aggregator: serve MCP at http://HOST:PORT/mcp for the servers and
    /// workflows of a config directory.
    Serve(ServeArgs),
    /// Check config.yaml and every MCPServer and Workflow definition of a config directory.
    Validate(ValidateArgs),
    /// Write the JSON Schemas of config.yaml, MCPServer and Workflow files.
    Schema(SchemaArgs),
    /// Print the CustomResourceDefinitions of MCPServer, Workflow and WorkflowExecution as
    /// YAML, for `muster crd | kubectl apply -f -`.
    Crd,
    /// Print the version.
    Version,
    /// Bridge an IDE to muster: `--mcp-server` serves MCP on stdio and forwards every
    /// message to a running muster.
    Agent(AgentArgs),
    /// List MCP servers, workflows, services, tools, executions, resources or prompts.
    List(ListArgs),
    /// Show one MCP server, workflow, service, tool, execution, resource or prompt.
    Get(GetArgs),
    /// Define an MCP server or a workflow.
    Create(CreateArgs),
    /// Start a service (an MCP server), or run a workflow with `start workflow NAME`.
    Start(StartArgs),
    /// Stop a service (an MCP server).
    Stop(StopArgs),
    /// Check whether an MCP server runs or a workflow is available; exit 1 when not.
    Check(CheckArgs),
    /// Call any tool through call_tool and print its result.
    Call(CallArgs),
    /// Show events of MCP servers and workflows, newest first (or follow them).
    Events(EventsArgs),
    /// Run a workflow, showing the progress of its steps.
    Run(RunArgs),
    /// Manage named muster endpoints in ~/.config/muster/contexts.yaml.
    Context(ContextArgs),
    /// Print a shell completion script.
    Completion(CompletionArgs),
}

/// Arguments of `muster serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The config directory (`config.yaml`, `mcpservers/`, `workflows/`).
    #[arg(long, value_name = "DIR", default_value = DEFAULT_CONFIG_PATH)]
    pub(crate) config_path: PathBuf,

    /// Listen on this port instead of `aggregator.port`.
    #[arg(long, value_name = "PORT")]
    pub(crate) port: Option<u16>,

    /// Log nothing to the console but errors.
    #[arg(long)]
    pub(crate) silent: bool,

    /// Accepted for compatibility: destructive tools are not blocked.
    #[arg(long, hide = true)]
    pub(crate) yolo: bool,
}

/// Arguments of `muster validate`.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// The config directory.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_CONFIG_PATH)]
    pub(crate) config_path: PathBuf,

    /// Output format.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) output: OutputFormat,
}

/// Output formats of reporting commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// One line per file, followed by its problems.
    Text,
    /// One JSON document.
    Json,
}

/// Arguments of `muster schema`.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// The directory to write the schema files into (created when missing).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}
