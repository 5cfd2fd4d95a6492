//! Arguments of the commands that talk to a running muster.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// The default config directory, with `~` standing for the home directory.
pub(crate) const DEFAULT_CONFIG_PATH: &str = "~/.config/muster";

/// Which muster to talk to.
#[derive(Debug, Clone, Args)]
pub(crate) struct EndpointArgs {
    /// The MCP endpoint of muster, such as http://localhost:8090/mcp (overrides every
    /// context).
    #[arg(long, env = "MUSTER_ENDPOINT", value_name = "URL")]
    pub(crate) endpoint: Option<String>,

    /// Use this context of ~/.config/muster/contexts.yaml instead of the current one.
    #[arg(long, env = "MUSTER_CONTEXT", value_name = "NAME")]
    pub(crate) context: Option<String>,

    /// The config directory whose config.yaml names the endpoint when no context applies.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_CONFIG_PATH)]
    pub(crate) config_path: PathBuf,
}

/// Flags every client command shares.
#[derive(Debug, Clone, Args)]
pub(crate) struct ClientArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub(crate) output: Output,

    /// Print tables without the header line.
    #[arg(long)]
    pub(crate) no_headers: bool,

    /// Print only what was asked for: no notes, no progress.
    #[arg(short, long)]
    pub(crate) quiet: bool,

    /// Which muster to talk to.
    #[command(flatten)]
    pub(crate) target: EndpointArgs,
}

/// Output formats of client commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Output {
    /// Aligned columns.
    Table,
    /// Aligned columns, with more of them.
    Wide,
    /// The JSON the server answered, indented.
    Json,
    /// The same as YAML.
    Yaml,
}

/// What `list` and `get` work on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Kind {
    /// MCPServer definitions with their state.
    #[value(alias = "mcpservers")]
    Mcpserver,
    /// Workflow definitions.
    #[value(alias = "workflows")]
    Workflow,
    /// Running services (MCP servers and the aggregator).
    #[value(alias = "services")]
    Service,
    /// Tools reachable through call_tool.
    #[value(alias = "tools")]
    Tool,
    /// Workflow executions.
    #[value(aliases = ["executions", "workflow-execution", "workflow-executions"])]
    Execution,
    /// Resources of the MCP servers.
    #[value(alias = "resources")]
    Resource,
    /// Prompts of the MCP servers.
    #[value(alias = "prompts")]
    Prompt,
}

/// Arguments of `muster list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// What to list.
    pub(crate) kind: Kind,

    /// Only names matching this glob (`*` and `?`).
    #[arg(long, value_name = "GLOB")]
    pub(crate) filter: Option<String>,

    /// Include failed MCP servers.
    #[arg(long)]
    pub(crate) all: bool,

    /// Include error details of MCP servers.
    #[arg(long)]
    pub(crate) verbose: bool,

    /// Only executions of this workflow.
    #[arg(long, value_name = "NAME")]
    pub(crate) workflow: Option<String>,

    /// Shared flags.
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// Arguments of `muster get`.
#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    /// What to show.
    pub(crate) kind: Kind,

    /// Its name (the id for an execution, the URI for a resource).
    pub(crate) name: String,

    /// Shared flags.
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// What `create` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CreateKind {
    /// An MCPServer definition.
    Mcpserver,
    /// A Workflow definition (from a file, or from --step / --steps).
    Workflow,
}

/// Arguments of `muster create`.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// What to create (taken from the file's `kind` with --file).
    #[arg(required_unless_present = "file")]
    pub(crate) kind: Option<CreateKind>,

    /// Its name (taken from the file's `metadata.name` with --file).
    #[arg(required_unless_present = "file")]
    pub(crate) name: Option<String>,

    /// A YAML or JSON definition (kind MCPServer or Workflow); `-` reads stdin.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,

    /// Server type.
    #[arg(long = "type", value_name = "TYPE", value_parser = ["stdio", "streamable-http", "sse"])]
    pub(crate) server_type: Option<String>,

    /// Executable of a stdio server.
    #[arg(long, value_name = "PATH")]
    pub(crate) command: Option<String>,

    /// Arguments of a stdio server (repeat, or separate with commas).
    #[arg(long, value_name = "ARG", value_delimiter = ',')]
    pub(crate) args: Vec<String>,

    /// URL of a remote server.
    #[arg(long, value_name = "URL")]
    pub(crate) url: Option<String>,

    /// Per-call timeout in seconds.
    #[arg(long, value_name = "SECONDS")]
    pub(crate) timeout: Option<u64>,

    /// Start the server as soon as it is defined.
    #[arg(long, alias = "autoStart", num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub(crate) auto_start: Option<bool>,

    /// A description.
    #[arg(long, value_name = "TEXT")]
    pub(crate) description: Option<String>,

    /// Prefix of the server's tool names.
    #[arg(long, value_name = "PREFIX")]
    pub(crate) tool_prefix: Option<String>,

    /// Environment variable of a stdio server (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub(crate) env: Vec<String>,

    /// HTTP header for a remote server (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub(crate) header: Vec<String>,

    /// A step of a workflow calling a tool with no arguments (repeatable, in order).
    #[arg(long, value_name = "ID=TOOL")]
    pub(crate) step: Vec<String>,

    /// The steps of a workflow as a YAML or JSON list, as in a Workflow file's `spec.steps`.
    #[arg(long, value_name = "YAML", conflicts_with = "step")]
    pub(crate) steps: Option<String>,

    /// An argument of a workflow and its type: string, integer, number, boolean, array or
    /// object (repeatable).
    #[arg(long, value_name = "NAME=TYPE")]
    pub(crate) input: Vec<String>,

    /// A workflow argument that callers must give (repeatable; implies --input NAME=string
    /// when not declared).
    #[arg(long, value_name = "NAME")]
    pub(crate) required: Vec<String>,

    /// Shared flags.
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// Arguments of `muster start`.
#[derive(Debug, Args)]
pub(crate) struct StartArgs {
    /// `NAME` of a service, or `service NAME`, `mcpserver NAME`, `workflow NAME`.
    #[arg(num_args = 1..=2, value_names = ["KIND", "NAME"], required = true)]
    pub(crate) target: Vec<String>,

    /// Argument of a workflow (repeatable); `--KEY=VALUE` works too.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub(crate) args: Vec<String>,

    /// Shared flags.
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// Arguments of `muster stop`.
#[derive(Debug, Args)]
pub(crate) struct StopArgs {
    /// `NAME` of a service, or `service NAME`, `mcpserver NAME`.
    #[arg(num_args = 1..=2, value_names = ["KIND", "NAME"], required = true)]
    pub(crate) target: Vec<String>,

    /// Shared flags.
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// What `check` looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CheckKind {
    /// Whether an MCP server's service runs and is healthy.
    Mcpserver,
    /// Whether a workflow's tools are all available.
    Workflow,
}

/// Arguments of `muster check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// What to check.
    pub(crate) kind: CheckKind,

    /// Its name.
    pub(crate) name: String,

    /// Shared flags.
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// Arguments of `muster call`.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool, such as `x_everything_echo`, `core_service_list` or `workflow_deploy`.
    pub(crate) tool: String,

    /// An argument (repeatable). Values that are JSON numbers, booleans, arrays or objects
    /// are passed as such, anything else as a string.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub(crate) args: Vec<String>,

    /// All arguments as one JSON object (--arg values are merged into it).
    #[arg(long, value_name = "JSON")]
    pub(crate) json: Option<String>,

    /// Shared flags.
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// Arguments of `muster events`.
#[derive(Debug, Args)]
pub(crate) struct EventsArgs {
    /// Only events of this kind of resource.
    #[arg(long, value_name = "KIND", value_parser = ["MCPServer", "Workflow"])]
    pub(crate) resource_type: Option<String>,

    /// Only events of this resource.
    #[arg(long, value_name = "NAME")]
    pub(crate) resource_name: Option<String>,

    /// Only events in this namespace.
    #[arg(long, value_name = "NAMESPACE")]
    pub(crate) namespace: Option<String>,

    /// Only events of this type.
    #[arg(long = "type", value_name = "TYPE", value_parser = ["Normal", "Warning"])]
    pub(crate) event_type: Option<String>,

    /// Only events since then: a duration such as `1h`, RFC 3339, or `2006-01-02`.
    #[arg(long, value_name = "TIME")]
    pub(crate) since: Option<String>,

    /// Only events until then (same formats).
    #[arg(long, value_name = "TIME")]
    pub(crate) until: Option<String>,

    /// At most this many events.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub(crate) limit: u32,

    /// Keep printing new events as they happen.
    #[arg(short, long)]
    pub(crate) follow: bool,

    /// Shared flags.
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// What `run` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RunKind {
    /// A workflow: `muster run workflow NAME --arg k=v`.
    Workflow,
}

/// Arguments of `muster run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// What to run.
    pub(crate) kind: RunKind,

    /// The workflow's name.
    pub(crate) name: String,

    /// An argument of the workflow (repeatable); `--KEY=VALUE` works too, and `--KEY`
    /// alone means `true`.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub(crate) args: Vec<String>,

    /// All arguments as one JSON object (--arg values are merged into it).
    #[arg(long, value_name = "JSON")]
    pub(crate) json: Option<String>,

    /// Shared flags.
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// Arguments of `muster agent`.
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// Serve MCP on stdin/stdout for an IDE, forwarding every message to muster.
    #[arg(long, conflicts_with = "repl")]
    pub(crate) mcp_server: bool,

    /// An interactive shell over muster's MCP endpoint: list, describe and call tools, read
    /// resources, get prompts, watch notifications (`help` lists the commands).
    #[arg(long)]
    pub(crate) repl: bool,

    /// How long a message waits for an unreachable muster before it fails, in seconds.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub(crate) reconnect_timeout: u64,

    /// Which muster to talk to.
    #[command(flatten)]
    pub(crate) target: EndpointArgs,
}

/// Arguments of `muster auth`.
#[derive(Debug, Args)]
pub(crate) struct AuthArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: AuthCommand,
}

/// The `auth` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum AuthCommand {
    /// Sign in to muster (browser, PKCE, a loopback callback); with `--server`, sign in to
    /// one of its MCP servers through muster (`core_auth_login`).
    Login(AuthLoginArgs),
    /// Show whether you are signed in to muster, and the sign-in state of its MCP servers.
    Status(AuthStatusArgs),
    /// Sign out of muster (the refresh token is revoked, the local tokens removed); with
    /// `--server`, sign out of one of its MCP servers (`core_auth_logout`).
    Logout(AuthLogoutArgs),
}

/// Arguments of `muster auth login`.
#[derive(Debug, Args)]
pub(crate) struct AuthLoginArgs {
    /// Sign in to this MCP server of muster's instead of to muster itself.
    #[arg(short, long, value_name = "NAME")]
    pub(crate) server: Option<String>,

    /// Print the sign-in URL instead of opening a browser.
    #[arg(long)]
    pub(crate) no_browser: bool,

    /// The port of the loopback callback (any free port when 0).
    #[arg(
        long,
        env = "MUSTER_OAUTH_CALLBACK_PORT",
        default_value_t = 3000,
        value_name = "PORT"
    )]
    pub(crate) callback_port: u16,

    /// The client id to sign in with, registered with muster beforehand (or a Client ID
    /// Metadata Document URL). Without it the CLI registers itself (RFC 7591).
    #[arg(long, env = "MUSTER_OAUTH_CLIENT_ID", value_name = "ID")]
    pub(crate) client_id: Option<String>,

    /// How long to wait for the browser, in seconds.
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub(crate) timeout: u64,

    /// Which muster to talk to.
    #[command(flatten)]
    pub(crate) target: EndpointArgs,
}

/// Arguments of `muster auth status`.
#[derive(Debug, Args)]
pub(crate) struct AuthStatusArgs {
    /// Show only this MCP server.
    #[arg(short, long, value_name = "NAME")]
    pub(crate) server: Option<String>,

    /// Which muster to talk to.
    #[command(flatten)]
    pub(crate) target: EndpointArgs,
}

/// Arguments of `muster auth logout`.
#[derive(Debug, Args)]
pub(crate) struct AuthLogoutArgs {
    /// Sign out of this MCP server of muster's instead of out of muster.
    #[arg(short, long, value_name = "NAME")]
    pub(crate) server: Option<String>,

    /// Sign out of every muster this user is signed in to.
    #[arg(long, conflicts_with = "server")]
    pub(crate) all: bool,

    /// Which muster to talk to.
    #[command(flatten)]
    pub(crate) target: EndpointArgs,
}

/// Arguments of `muster context`.
#[derive(Debug, Args)]
pub(crate) struct ContextArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: ContextCommand,
}

/// The `context` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ContextCommand {
    /// List the contexts; the current one is marked with `*`.
    List {
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = Output::Table)]
        output: Output,
        /// Print the table without the header line.
        #[arg(long)]
        no_headers: bool,
    },
    /// Print the current context.
    Current,
    /// Make a context the current one.
    Use {
        /// The context.
        name: String,
    },
    /// Add a context.
    Add {
        /// Its name: lowercase letters, digits and dashes.
        name: String,
        /// Its MCP endpoint.
        #[arg(long, value_name = "URL")]
        endpoint: String,
        /// Make it the current context too.
        #[arg(long = "use")]
        make_current: bool,
    },
    /// Delete a context.
    Delete {
        /// The context.
        name: String,
    },
}

/// Arguments of `muster completion`.
#[derive(Debug, Args)]
pub(crate) struct CompletionArgs {
    /// The shell.
    pub(crate) shell: clap_complete::Shell,
}
