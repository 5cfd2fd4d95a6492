//! The `MCPServer` kind: one MCP server muster connects to.
//!
//! Two forms of the spec exist:
//!
//! - [`McpServerDefinition`] is the document form, field for field what the CRD and the YAML
//!   files hold, every field optional. It is what parsers produce and what
//!   [`McpServerDefinition::validate`] checks, reporting every violation at once.
//! - [`McpServerSpec`] is the validated form, with the transport as an enum ([`Transport`]), so
//!   code that connects a server cannot see a stdio server with a URL. Deserializing it runs
//!   the mode-independent validation.

mod auth;
mod status;
mod validation;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use auth::{
    AuthType, AuthorizationServer, ClientCredentialsSecretRef, GrantScope, McpServerAuth,
    TokenExchange,
};
pub use status::{Health, McpServerState, McpServerStatus};

use super::{Kind, ValidationContext, ValidationErrors};

/// Annotation holding the human-friendly name UIs show in place of `metadata.name`.
pub const DISPLAY_NAME_ANNOTATION: &str = "ui.giantswarm.io/display-name";
/// Annotation holding the subject of the caller that created the server.
pub const REGISTERED_BY_ANNOTATION: &str = "ui.giantswarm.io/registered-by";
/// Annotation holding the email claim of the caller that created the server.
pub const REGISTERED_BY_EMAIL_ANNOTATION: &str = "ui.giantswarm.io/registered-by-email";

/// Default budget of every operation, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u32 = 30;
/// Default budget of a whole tool call extended by progress, in seconds.
pub const DEFAULT_PROGRESS_MAX_DURATION_SECS: u32 = 3600;

/// The `MCPServer` kind marker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct McpServer;

impl Kind for McpServer {
    const KIND: &'static str = "MCPServer";
    const PLURAL: &'static str = "mcpservers";
    type Spec = McpServerSpec;
    type Status = McpServerStatus;
}

/// The three server types, as spelled in `spec.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ServerType {
    /// A child process speaking MCP on stdin/stdout.
    #[serde(rename = "stdio")]
    Stdio,
    /// A remote server speaking streamable HTTP.
    #[serde(rename = "streamable-http")]
    StreamableHttp,
    /// A remote server speaking the legacy HTTP+SSE transport (2024-11-05).
    #[serde(rename = "sse")]
    Sse,
}

impl ServerType {
    /// The spelling in `spec.type`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::StreamableHttp => "streamable-http",
            Self::Sse => "sse",
        }
    }

    /// Parses the spelling in `spec.type`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "stdio" => Some(Self::Stdio),
            "streamable-http" => Some(Self::StreamableHttp),
            "sse" => Some(Self::Sse),
            _ => None,
        }
    }

    /// Whether the server is reached over the network.
    pub const fn is_remote(self) -> bool {
        !matches!(self, Self::Stdio)
    }
}

impl std::fmt::Display for ServerType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Family grouping of equivalent servers under one tool surface.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Family {
    /// Family identifier; tools appear as `x_<name>_<tool>`.
    #[serde(default)]
    pub name: String,
    /// Name of the required parameter that selects the instance, e.g. `management_cluster`.
    #[serde(default)]
    pub instance_arg: String,
}

/// An HTTP header whose value muster reads from a Secret when it connects.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeaderFrom {
    /// The header name, e.g. `Authorization`.
    #[serde(default)]
    pub name: String,
    /// Where the value comes from.
    #[serde(default)]
    pub value_from: SecretKeySource,
}

/// A key of a Secret in the MCPServer's own namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeySource {
    /// Kind of object that holds the value: `Secret`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// Name of the Secret.
    #[serde(default)]
    pub name: String,
    /// Key in the Secret's data.
    #[serde(default)]
    pub key: String,
}

/// Progress budget of tool calls.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProgressSpec {
    /// Budget of a whole tool call in seconds; each progress notification restarts `timeout`,
    /// up to this. Between `timeout` and 3600, default 3600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration: Option<i64>,
}

/// The document form of an MCPServer spec: every field of the CRD, all optional.
///
/// Validate it with [`McpServerDefinition::validate`] to get a [`McpServerSpec`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerDefinition {
    /// `stdio`, `streamable-http` or `sse`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Per-server tool prefix used when `family` is unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_prefix: Option<String>,
    /// Family grouping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<Family>,
    /// Human-readable description, at most 500 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Start the server when muster starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_start: Option<bool>,
    /// Executable of a stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Arguments of a stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Endpoint of a remote server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Environment of a stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// Headers sent to a remote server; no credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Headers whose values come from Secrets (Kubernetes mode; filesystem mode refuses to
    /// start a server with them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers_from: Option<Vec<HeaderFrom>>,
    /// Budget of every operation in seconds, 1–300, default 30.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    /// Progress budget of tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<ProgressSpec>,
    /// Authentication towards a remote server (filesystem mode refuses to start a server
    /// with anything but `type: none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<McpServerAuth>,
    /// Desired lifecycle state: `true` keeps the server stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended: Option<bool>,
    /// Requests a one-shot restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_requested_at: Option<DateTime<Utc>>,
}

impl McpServerDefinition {
    /// Checks every rule of the MCPServer spec for the given context and returns the validated
    /// spec, or every violation, each with its field path under `spec.`.
    pub fn validate(&self, ctx: &ValidationContext) -> Result<McpServerSpec, ValidationErrors> {
        validation::validate(self, None, ctx)
    }

    /// Like [`validate`](Self::validate), with the rules that depend on the server's name and
    /// namespace (the `org-` prefix rule, Secret namespaces) applied too.
    pub fn validate_named(
        &self,
        name: &str,
        namespace: &str,
        ctx: &ValidationContext,
    ) -> Result<McpServerSpec, ValidationErrors> {
        validation::validate(self, Some((name, namespace)), ctx)
    }
}

/// How muster reaches a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process.
    Stdio(StdioTransport),
    /// Streamable HTTP.
    StreamableHttp(RemoteTransport),
    /// Legacy HTTP+SSE.
    Sse(RemoteTransport),
}

impl Transport {
    /// The `spec.type` of this transport.
    pub const fn server_type(&self) -> ServerType {
        match self {
            Self::Stdio(_) => ServerType::Stdio,
            Self::StreamableHttp(_) => ServerType::StreamableHttp,
            Self::Sse(_) => ServerType::Sse,
        }
    }

    /// The remote settings, for `streamable-http` and `sse`.
    pub const fn remote(&self) -> Option<&RemoteTransport> {
        match self {
            Self::Stdio(_) => None,
            Self::StreamableHttp(r) | Self::Sse(r) => Some(r),
        }
    }
}

/// Settings of a stdio server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StdioTransport {
    /// The executable.
    pub command: String,
    /// Its arguments, passed verbatim.
    pub args: Vec<String>,
    /// Variables added to the inherited environment.
    pub env: BTreeMap<String, String>,
}

/// Settings of a remote server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RemoteTransport {
    /// The endpoint.
    pub url: String,
    /// Headers sent with every request.
    pub headers: BTreeMap<String, String>,
    /// Headers whose values come from Secrets.
    pub headers_from: Vec<HeaderFrom>,
    /// Authentication.
    pub auth: Option<McpServerAuth>,
}

/// A validated MCPServer spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "McpServerDefinition", into = "McpServerDefinition")]
pub struct McpServerSpec {
    /// How the server is reached.
    pub transport: Transport,
    /// Per-server tool prefix.
    pub tool_prefix: Option<String>,
    /// Family grouping.
    pub family: Option<Family>,
    /// Human-readable description.
    pub description: Option<String>,
    /// Start when muster starts.
    pub auto_start: bool,
    /// Budget of every operation in seconds, when set.
    pub timeout: Option<u32>,
    /// Budget of a tool call extended by progress, in seconds, when set.
    pub progress_max_duration: Option<u32>,
    /// Keep the server stopped.
    pub suspended: bool,
    /// One-shot restart request.
    pub restart_requested_at: Option<DateTime<Utc>>,
}

impl McpServerSpec {
    /// A stdio server running `command` with `args`.
    pub fn stdio(command: impl Into<String>, args: impl IntoIterator<Item = String>) -> Self {
        Self::with_transport(Transport::Stdio(StdioTransport {
            command: command.into(),
            args: args.into_iter().collect(),
            env: BTreeMap::new(),
        }))
    }

    /// A streamable-HTTP server at `url`.
    pub fn streamable_http(url: impl Into<String>) -> Self {
        Self::with_transport(Transport::StreamableHttp(RemoteTransport {
            url: url.into(),
            ..RemoteTransport::default()
        }))
    }

    /// A spec with the given transport and every other field at its default.
    pub fn with_transport(transport: Transport) -> Self {
        Self {
            transport,
            tool_prefix: None,
            family: None,
            description: None,
            auto_start: false,
            timeout: None,
            progress_max_duration: None,
            suspended: false,
            restart_requested_at: None,
        }
    }

    /// The `spec.type`.
    pub const fn server_type(&self) -> ServerType {
        self.transport.server_type()
    }

    /// The budget of every operation, with the default of 30 s applied.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(u64::from(self.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS)))
    }

    /// The budget of a tool call extended by progress, with the default of 3600 s applied.
    pub fn progress_max_duration(&self) -> std::time::Duration {
        let secs = self
            .progress_max_duration
            .unwrap_or(DEFAULT_PROGRESS_MAX_DURATION_SECS);
        std::time::Duration::from_secs(u64::from(secs))
    }

    /// Settings filesystem mode accepts in a definition but cannot honour yet: `headersFrom`
    /// (there are no Secrets to read), the parts of `auth` muster does not do there (token
    /// exchange, client credentials from Secrets) and what no mode does
    /// ([`unsupported_in_any_mode`](Self::unsupported_in_any_mode)). `type: oauth`, an
    /// `authorizationServer` (with `grantScope` and `revocationEndpoint`), `forwardToken` and
    /// `forwardIdentity` work. Definitions with them are stored as written; `muster validate`
    /// reports them and `muster serve` refuses to start such a server, saying why, instead of
    /// connecting without the header or the sign-in.
    pub fn unsupported_in_filesystem_mode(&self) -> ValidationErrors {
        let mut errors = ValidationErrors::new();
        let Some(remote) = self.transport.remote() else {
            return errors;
        };
        if !remote.headers_from.is_empty() {
            errors.push(
                "spec.headersFrom",
                "not supported in filesystem mode, which has no Secrets to read header values \
                 from; put the header in spec.headers instead",
            );
        }
        errors.extend(self.unsupported_in_any_mode());
        let Some(auth) = &remote.auth else {
            return errors;
        };
        let sso = "signing in with the caller's own identity is not supported in filesystem \
                   mode yet; remove it and let each session sign in with core_auth_login";
        if auth.token_exchange.as_ref().is_some_and(|t| t.enabled) {
            errors.push("spec.auth.tokenExchange", sso);
        }
        if !auth.required_audiences.is_empty() && !auth.forward_token && !auth.forward_identity {
            errors.push(
                "spec.auth.requiredAudiences",
                "is asked for at sign-in only for a server that receives the caller's ID \
                 token; set forwardToken or forwardIdentity: true, or remove it",
            );
        }
        if auth
            .authorization_server
            .as_ref()
            .is_some_and(|server| server.client_credentials_secret_ref.is_some())
        {
            errors.push(
                "spec.auth.authorizationServer.clientCredentialsSecretRef",
                "not supported in filesystem mode, which has no Secrets to read; muster \
                 signs in as a public client with PKCE",
            );
        }
        errors
    }

    /// Settings of the spec no mode of this muster honours yet, so a server naming them is
    /// refused instead of run without them: `spec.auth.providerApps` (the Provider Apps of
    /// `aggregator.providerApps`).
    pub fn unsupported_in_any_mode(&self) -> ValidationErrors {
        let mut errors = ValidationErrors::new();
        if self
            .transport
            .remote()
            .and_then(|r| r.auth.as_ref())
            .is_some_and(|a| !a.provider_apps.is_empty())
        {
            errors.push(
                "spec.auth.providerApps",
                "Provider Apps (aggregator.providerApps) are not supported by this muster yet; \
                 remove it",
            );
        }
        errors
    }

    /// Checks the rules that depend on the context (e.g. stdio refused in Kubernetes mode).
    pub fn validate(&self, ctx: &ValidationContext) -> Result<(), ValidationErrors> {
        McpServerDefinition::from(self.clone())
            .validate(ctx)
            .map(drop)
    }
}

impl TryFrom<McpServerDefinition> for McpServerSpec {
    type Error = ValidationErrors;

    /// Validates with the filesystem-mode rules, which every mode shares.
    fn try_from(def: McpServerDefinition) -> Result<Self, Self::Error> {
        def.validate(&ValidationContext::filesystem())
    }
}

impl From<McpServerSpec> for McpServerDefinition {
    fn from(spec: McpServerSpec) -> Self {
        let mut def = McpServerDefinition {
            type_: Some(spec.server_type().as_str().to_owned()),
            tool_prefix: spec.tool_prefix,
            family: spec.family,
            description: spec.description,
            auto_start: spec.auto_start.then_some(true),
            timeout: spec.timeout.map(i64::from),
            progress: spec.progress_max_duration.map(|d| ProgressSpec {
                max_duration: Some(i64::from(d)),
            }),
            suspended: spec.suspended.then_some(true),
            restart_requested_at: spec.restart_requested_at,
            ..McpServerDefinition::default()
        };
        match spec.transport {
            Transport::Stdio(s) => {
                def.command = Some(s.command);
                def.args = (!s.args.is_empty()).then_some(s.args);
                def.env = (!s.env.is_empty()).then_some(s.env);
            }
            Transport::StreamableHttp(r) | Transport::Sse(r) => {
                def.url = Some(r.url);
                def.headers = (!r.headers.is_empty()).then_some(r.headers);
                def.headers_from = (!r.headers_from.is_empty()).then_some(r.headers_from);
                def.auth = r.auth;
            }
        }
        def
    }
}

impl JsonSchema for McpServerSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "McpServerSpec".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        McpServerDefinition::json_schema(generator)
    }
}
