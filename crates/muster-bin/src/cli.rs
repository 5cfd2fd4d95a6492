//! The command line: global flags and one subcommand per job.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, CommandFactory as _, Parser, Subcommand, ValueEnum};

mod client;

pub(crate) use self::client::*;

/// What `muster --version` prints after the binary name.
pub(crate) const VERSION: &str = concat!("version ", env!("CARGO_PKG_VERSION"));

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
    ///
    /// With `kubernetes: true` in config.yaml the definitions are checked with the
    /// Kubernetes-mode rules, the ones `core_mcpserver_validate` and the CRD apply: stdio
    /// servers, credentials in `headers` or `url` and `env` on a remote server are refused;
    /// `headersFrom`, `clientCredentialsSecretRef` and the sign-in settings are accepted. The
    /// report then lists what only the cluster can check: that the API server admits each
    /// file (`kubectl apply --dry-run=server -f FILE`), that the Secrets the definitions name
    /// exist and are readable, and that the `secretBinding` admission policy is in force.
    Validate(ValidateArgs),
    /// Write the JSON Schemas of config.yaml, MCPServer and Workflow files.
    Schema(SchemaArgs),
    /// Print the CustomResourceDefinitions of MCPServer, Workflow and WorkflowExecution as
    /// YAML, for `muster crd | kubectl apply -f -`.
    Crd,
    /// Print the version.
    Version,
    /// A client of a running muster: `--mcp-server` serves MCP on stdio for an IDE and
    /// forwards every message, `--repl` is an interactive shell; with neither it prints the
    /// server's notifications until interrupted.
    Agent(AgentArgs),
    /// `serve` and `agent --mcp-server` in one process: muster for one IDE, started by it.
    /// MCP on stdin/stdout, served by a muster listening as `serve` would; it stops when
    /// the IDE closes stdin. Logs only errors unless `--verbose` or `--debug`.
    Standalone(StandaloneArgs),
    /// List MCP servers, workflows, services, tools, executions, resources or prompts.
    List(ListArgs),
    /// Show one MCP server, workflow, service, tool, execution, resource or prompt.
    Get(GetArgs),
    /// Define an MCP server or a workflow.
    Create(Box<CreateArgs>),
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
    /// Sign in to a muster protected by OAuth, or to its MCP servers; show or end sign-ins.
    Auth(AuthArgs),
    /// Print a shell completion script.
    Completion(CompletionArgs),
}

/// Arguments of `muster serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The config directory (`config.yaml`, `mcpservers/`, `workflows/`).
    #[arg(long, value_name = "DIR", default_value = DEFAULT_CONFIG_PATH)]
    pub(crate) config_path: PathBuf,

    /// Serve the example configuration built into the binary (the files of
    /// `examples/config`), from a temporary directory removed at exit.
    #[arg(long, conflicts_with = "config_path")]
    pub(crate) example: bool,

    /// Listen on this port instead of `aggregator.port`.
    #[arg(long, value_name = "PORT")]
    pub(crate) port: Option<u16>,

    /// Log nothing to the console but errors.
    #[arg(long)]
    pub(crate) silent: bool,

    /// Format of log lines: text or json (default: `observability.logs.format`, else text).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub(crate) log_format: Option<LogFormatArg>,

    /// Write one log line per tool call (also `observability.logs.calls: true`).
    #[arg(long)]
    pub(crate) log_calls: bool,

    /// Accepted for compatibility: destructive tools are not blocked.
    #[arg(long, hide = true)]
    pub(crate) yolo: bool,

    /// Protect muster with OAuth 2.1 (`aggregator.oauth.server.enabled`): clients sign in
    /// through the upstream provider of `aggregator.oauth.server.dex`.
    #[arg(long)]
    pub(crate) oauth_server: bool,

    /// muster's public base URL for OAuth (`aggregator.oauth.server.baseUrl`).
    #[arg(long, value_name = "URL")]
    pub(crate) oauth_server_base_url: Option<String>,

    /// PEM file of CA certificates to trust, in addition to the system's, for outgoing
    /// HTTPS (identity providers, JWKS, remote MCP servers); overrides
    /// `aggregator.extraCaFile`.
    #[arg(long, value_name = "FILE")]
    pub(crate) extra_ca_file: Option<PathBuf>,
}

/// Arguments of `muster standalone`.
#[derive(Debug, Args)]
pub(crate) struct StandaloneArgs {
    /// The server's flags, as for `muster serve`.
    #[command(flatten)]
    pub(crate) serve: ServeArgs,

    /// Log as `muster serve` does, not only errors.
    #[arg(long)]
    pub(crate) verbose: bool,

    /// How long a message waits for the server (while it starts) before it fails, in
    /// seconds.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub(crate) reconnect_timeout: u64,
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

/// Formats of log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormatArg {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
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

/// Rewrites the original's workflow argument flags into `--arg`: in `start workflow NAME` and
/// `run workflow NAME`, a `--KEY=VALUE` whose KEY is not a flag of the command becomes
/// `--arg KEY=VALUE`, and a lone unknown `--KEY` becomes `--arg KEY=true`. Everything else
/// is left for clap to parse (and refuse).
pub(crate) fn workflow_flags(args: Vec<OsString>) -> Vec<OsString> {
    let position = |token: &str| args.iter().position(|a| a == token);
    let Some(command_at) = args
        .iter()
        .skip(1)
        .position(|a| !a.to_string_lossy().starts_with('-'))
        .map(|i| i + 1)
    else {
        return args;
    };
    let command = args[command_at].to_string_lossy().into_owned();
    if command != "start" && command != "run" || position("workflow") != Some(command_at + 1) {
        return args;
    }
    let known: Vec<String> = Cli::command()
        .find_subcommand(&command)
        .map(|sub| {
            sub.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_owned))
                .chain(["help".to_owned(), "debug".to_owned()])
                .collect()
        })
        .unwrap_or_default();
    let name_at = command_at + 2;
    let mut out = Vec::with_capacity(args.len() + 4);
    let mut rest_literal = false;
    for (i, arg) in args.into_iter().enumerate() {
        let text = arg.to_string_lossy().into_owned();
        if i <= name_at || rest_literal {
            out.push(arg);
            continue;
        }
        if text == "--" {
            rest_literal = true;
            out.push(arg);
            continue;
        }
        let Some(flag) = text.strip_prefix("--") else {
            out.push(arg);
            continue;
        };
        let (key, value) = flag.split_once('=').unwrap_or((flag, "true"));
        if key.is_empty() || known.iter().any(|k| k == key) {
            out.push(arg);
        } else {
            out.push("--arg".into());
            out.push(format!("{key}={value}").into());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn rewritten(args: &[&str]) -> Vec<String> {
        workflow_flags(args.iter().map(OsString::from).collect())
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn workflow_flags_become_arguments() {
        assert_eq!(
            rewritten(&[
                "muster",
                "start",
                "workflow",
                "deploy",
                "--env=prod",
                "--dry-run",
                "-o",
                "json",
                "--quiet"
            ]),
            [
                "muster",
                "start",
                "workflow",
                "deploy",
                "--arg",
                "env=prod",
                "--arg",
                "dry-run=true",
                "-o",
                "json",
                "--quiet"
            ]
        );
        assert_eq!(
            rewritten(&[
                "muster",
                "--debug",
                "run",
                "workflow",
                "w",
                "--arg",
                "a=1",
                "--b=2",
                "--endpoint=http://x/mcp"
            ]),
            [
                "muster",
                "--debug",
                "run",
                "workflow",
                "w",
                "--arg",
                "a=1",
                "--arg",
                "b=2",
                "--endpoint=http://x/mcp"
            ]
        );
        // Other commands, and services, are left alone.
        for args in [
            &["muster", "start", "service", "git", "--x=1"][..],
            &["muster", "call", "workflow_w", "--x=1"],
            &["muster", "run", "workflow"],
        ] {
            assert_eq!(rewritten(args), args);
        }
    }

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}
