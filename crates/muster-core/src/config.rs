//! The `config.yaml` model: all keys camelCase, unknown keys ignored, every key optional with
//! the defaults documented on each field.
//!
//! Credentials in it (client secrets, passwords, tokens) are [`SecretString`]s; they are never
//! written back out by serialization. Use the `*File` keys to keep them in files.

mod limits;
mod oauth_server;
mod observability;

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::validate::Violation;
use crate::secret::SecretString;

pub use limits::{BackendLimits, EventLimits, LimitsConfig, WorkflowLimits};
pub use oauth_server::{
    AuthRateLimitConfig, OAuthStorageConfig, OAuthStorageType, TrustedIssuerConfig, ValkeyConfig,
};
pub use observability::{LogFormat, LogsConfig, MetricsConfig, ObservabilityConfig, TracingConfig};

/// Where the running configuration lives, for the `core_config_*` tools.
#[async_trait::async_trait]
pub trait ConfigStore: Send + Sync + std::fmt::Debug {
    /// The configuration in effect.
    fn current(&self) -> MusterConfig;

    /// Replaces the `aggregator` section and saves the configuration.
    async fn update_aggregator(
        &self,
        aggregator: AggregatorConfig,
    ) -> Result<(), crate::StoreError>;

    /// Writes the configuration in effect.
    async fn save(&self) -> Result<(), crate::StoreError>;

    /// Reads the configuration again.
    async fn reload(&self) -> Result<MusterConfig, crate::StoreError>;
}

/// A [`ConfigStore`] that only keeps the configuration in memory.
#[derive(Debug, Default)]
pub struct MemoryConfigStore {
    config: std::sync::RwLock<MusterConfig>,
}

impl MemoryConfigStore {
    /// A store holding `config`.
    pub fn new(config: MusterConfig) -> Self {
        Self {
            config: std::sync::RwLock::new(config),
        }
    }
}

#[async_trait::async_trait]
impl ConfigStore for MemoryConfigStore {
    fn current(&self) -> MusterConfig {
        self.config
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    async fn update_aggregator(
        &self,
        aggregator: AggregatorConfig,
    ) -> Result<(), crate::StoreError> {
        self.config
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .aggregator = aggregator;
        Ok(())
    }

    async fn save(&self) -> Result<(), crate::StoreError> {
        Ok(())
    }

    async fn reload(&self) -> Result<MusterConfig, crate::StoreError> {
        Ok(self.current())
    }
}

/// The whole `config.yaml`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct MusterConfig {
    /// Namespace for resources, events and executions (default `default`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Kubernetes mode: definitions, execution records and events are custom resources and
    /// core/v1 Events of the cluster (`muster serve` fails when it cannot reach the API
    /// server); `muster validate` checks files with the Kubernetes-mode rules.
    pub kubernetes: bool,
    /// Kubernetes mode: namespaces besides [`namespace`](Self::namespace) whose MCPServers
    /// muster serves, their tools named `<namespace>_<toolPrefix or name>`; `["*"]` watches
    /// every namespace. Empty (the default): muster's own namespace only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_server_namespaces: Vec<String>,
    /// The aggregator.
    pub aggregator: AggregatorConfig,
    /// Bounds on workflows, the event log and backend results.
    pub limits: LimitsConfig,
    /// Metrics, traces and logs.
    pub observability: ObservabilityConfig,
}

impl MusterConfig {
    /// Settings this muster accepts in the file but cannot honour yet, each as a violation
    /// naming the key and what to do instead. `muster validate` and `muster serve` both refuse
    /// a configuration with any: a setting that silently does nothing (an OAuth server that
    /// does not protect, an admin UI that is not there) is worse than an error.
    pub fn unsupported_settings(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        let aggregator = &self.aggregator;
        if aggregator.oauth.server.enabled {
            out.extend(aggregator.oauth.server.problems());
        }
        let admin = &aggregator.admin;
        let default_admin = AdminConfig::default();
        for (set, key) in [
            (admin.enabled, "aggregator.admin.enabled"),
            (admin.port != default_admin.port, "aggregator.admin.port"),
            (
                admin.bind_address != default_admin.bind_address,
                "aggregator.admin.bindAddress",
            ),
        ] {
            if set {
                out.push(Violation::new(
                    key,
                    "the admin UI is not available in this muster yet; remove the \
                     aggregator.admin section",
                ));
            }
        }
        out
    }

    /// What is wrong with `mcpServerNamespaces`: each entry must be a namespace name
    /// (DNS-1123 label) or `*`, and `*` stands alone.
    pub fn namespace_problems(&self) -> Vec<Violation> {
        let list = &self.mcp_server_namespaces;
        let mut out = Vec::new();
        if list.iter().any(|n| n == ALL_NAMESPACES) && list.len() > 1 {
            out.push(Violation::new(
                "mcpServerNamespaces",
                "`*` (every namespace) must be the only entry",
            ));
        }
        for (i, namespace) in list.iter().enumerate() {
            if namespace != ALL_NAMESPACES && !is_namespace_name(namespace) {
                out.push(Violation::new(
                    format!("mcpServerNamespaces[{i}]"),
                    "must be a namespace name (lower-case letters, digits and '-', at most 63 \
                     characters, starting and ending with a letter or digit) or `*`",
                ));
            }
        }
        out
    }

    /// The namespace with its default.
    pub fn namespace(&self) -> &str {
        self.namespace
            .as_deref()
            .unwrap_or(crate::DEFAULT_NAMESPACE)
    }
}

/// The `mcpServerNamespaces` entry that stands for every namespace.
pub const ALL_NAMESPACES: &str = "*";

/// Whether `name` is a valid Kubernetes namespace name (a DNS-1123 label).
fn is_namespace_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=63).contains(&bytes.len())
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes.iter().all(|b| edge(b) || *b == b'-')
}

/// How muster serves MCP to its clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AggregatorTransport {
    /// Streamable HTTP at `/mcp` (plus legacy SSE).
    #[default]
    StreamableHttp,
    /// Legacy HTTP+SSE: `GET /sse`, `POST /message`. Only changes the endpoint the client
    /// commands derive; `/mcp` is served too.
    Sse,
    /// MCP on muster's own stdin/stdout, one session, no port.
    Stdio,
}

/// How a family tool treats members whose tool descriptions differ.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FamilyDescriptionRule {
    /// Descriptions never split a family tool; it carries the most common description (the
    /// CRD reference's rule).
    #[default]
    Majority,
    /// A tool whose description differs between members is exposed under each member's own
    /// name (the rule of muster's Go releases).
    MustMatch,
}

/// The `aggregator` section.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct AggregatorConfig {
    /// Port (default 8090).
    pub port: u16,
    /// Host (default `localhost`).
    pub host: String,
    /// Transport (default `streamable-http`). `stdio`: `muster serve` speaks MCP on its own
    /// stdin and stdout (one session) instead of listening on a port. Otherwise it serves
    /// streamable HTTP at `/mcp` and legacy SSE at `/sse` + `/message`; `sse` makes the
    /// client commands use `/sse`.
    pub transport: AggregatorTransport,
    /// Prefix of backend tools (default `x`).
    pub muster_prefix: String,
    /// How family tools treat members whose tool descriptions differ (default `majority`).
    pub family_descriptions: FamilyDescriptionRule,
    /// `Host` names the MCP endpoints accept in addition to the loopback names (`localhost`,
    /// `127.0.0.1`, `::1`, always accepted), e.g. behind a Kubernetes Service or Ingress; an
    /// entry may carry a port. An `Origin` header must name one of these hosts too.
    /// `["*"]` accepts any `Host` and any `Origin` (the DNS-rebinding guard is off).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// The admin UI, not available yet: any setting in it is refused.
    pub admin: AdminConfig,
    /// OAuth, towards downstream servers and protecting muster.
    pub oauth: OAuthConfig,
    /// PEM file of CA certificates trusted, in addition to the system's, for every outgoing
    /// HTTPS connection (OpenID providers, JWKS, remote MCP servers); `--extra-ca-file`
    /// overrides it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_ca_file: Option<PathBuf>,
    /// Bounds on the sessions and connections of the MCP endpoint.
    pub limits: AggregatorLimits,
}

impl Default for AggregatorConfig {
    fn default() -> Self {
        Self {
            port: 8090,
            host: "localhost".to_owned(),
            transport: AggregatorTransport::default(),
            muster_prefix: "x".to_owned(),
            family_descriptions: FamilyDescriptionRule::default(),
            allowed_hosts: Vec::new(),
            admin: AdminConfig::default(),
            oauth: OAuthConfig::default(),
            extra_ca_file: None,
            limits: AggregatorLimits::default(),
        }
    }
}

impl AggregatorConfig {
    /// The MCP endpoint clients use, e.g. `http://localhost:8090/mcp`.
    pub fn endpoint(&self) -> String {
        let host = match self.host.as_str() {
            "0.0.0.0" | "::" | "" => "localhost",
            h => h,
        };
        let path = if self.transport == AggregatorTransport::Sse {
            "sse"
        } else {
            "mcp"
        };
        format!("http://{host}:{}/{path}", self.port)
    }
}

/// The `aggregator.limits` section: bounds on the sessions and connections of the MCP
/// endpoint. Every value must be at least 1; times are in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct AggregatorLimits {
    /// Most MCP sessions open at once; an `initialize` beyond it is answered `503`
    /// (default 10000).
    pub max_sessions: u32,
    /// Seconds without a request after which a session is closed (default 1800).
    pub session_idle_timeout: u32,
    /// Most HTTP connections open at once; further clients wait until one closes
    /// (default 1024).
    pub max_connections: u32,
    /// Seconds a client has to send a request's head once its first byte arrived, and
    /// again for its body (default 10).
    pub header_read_timeout: u32,
    /// Seconds after which a connection without an open request is closed (default 60).
    pub connection_idle_timeout: u32,
}

impl Default for AggregatorLimits {
    fn default() -> Self {
        Self {
            max_sessions: 10_000,
            session_idle_timeout: 1800,
            max_connections: 1024,
            header_read_timeout: 10,
            connection_idle_timeout: 60,
        }
    }
}

impl AggregatorLimits {
    /// What is wrong with the values: one violation per field, naming it and the rule.
    pub fn problems(&self) -> Vec<Violation> {
        [
            ("maxSessions", self.max_sessions),
            ("sessionIdleTimeout", self.session_idle_timeout),
            ("maxConnections", self.max_connections),
            ("headerReadTimeout", self.header_read_timeout),
            ("connectionIdleTimeout", self.connection_idle_timeout),
        ]
        .into_iter()
        .filter(|(_, value)| *value == 0)
        .map(|(field, _)| {
            Violation::new(format!("aggregator.limits.{field}"), "must be at least 1")
        })
        .collect()
    }
}

/// The `aggregator.admin` section (ignored: there is no admin UI yet).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct AdminConfig {
    /// Serve the admin UI (default false). Not available yet: `true` is refused.
    pub enabled: bool,
    /// Its port (default 9999).
    pub port: u16,
    /// Its bind address (default `127.0.0.1`).
    pub bind_address: String,
}

impl Default for AdminConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            port: 9999,
            bind_address: "127.0.0.1".to_owned(),
        }
    }
}

/// The `aggregator.oauth` section.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct OAuthConfig {
    /// muster as OAuth client of protected MCP servers (`core_auth_login`).
    pub mcp_client: OAuthClientConfig,
    /// muster as OAuth-protected server.
    pub server: OAuthServerConfig,
}

/// The `aggregator.oauth.mcpClient` section: muster signs in to OAuth-protected MCP servers
/// on behalf of each session.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct OAuthClientConfig {
    /// Enabled (default false). Without it `core_auth_login` answers that OAuth is not
    /// configured.
    pub enabled: bool,
    /// muster's public URL, used for callbacks and its client metadata document (default:
    /// `http://<host>:<port>` of the aggregator).
    pub public_url: String,
    /// Client id; default `<publicUrl><cimd.path>`.
    pub client_id: String,
    /// Callback path (default `/oauth/proxy/callback`).
    pub callback_path: String,
    /// Client ID Metadata Document settings.
    pub cimd: CimdConfig,
    /// Where a finished login may redirect to (ignored).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub post_login_redirect_allowlist: Vec<String>,
}

impl Default for OAuthClientConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            public_url: String::new(),
            client_id: String::new(),
            callback_path: "/oauth/proxy/callback".to_owned(),
            cimd: CimdConfig::default(),
            post_login_redirect_allowlist: Vec::new(),
        }
    }
}

/// `aggregator.oauth.mcpClient.cimd`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct CimdConfig {
    /// Path of the document (default `/.well-known/oauth-client.json`).
    pub path: String,
    /// Scopes (default `openid profile email groups offline_access`).
    pub scopes: String,
}

impl Default for CimdConfig {
    fn default() -> Self {
        Self {
            path: "/.well-known/oauth-client.json".to_owned(),
            scopes: "openid profile email groups offline_access".to_owned(),
        }
    }
}

/// The `aggregator.oauth.server` section: muster as OAuth 2.1 authorization server (signing
/// users in through an upstream OpenID provider) and resource server (`/mcp`, `/sse` and
/// `/message` require a bearer).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct OAuthServerConfig {
    /// Enabled (default false).
    pub enabled: bool,
    /// muster's public base URL, e.g. `https://muster.example.com`: its issuer identifier
    /// and the base of every OAuth endpoint. Required when enabled.
    pub base_url: String,
    /// Upstream identity provider: `dex` (default; any OpenID provider with discovery).
    pub provider: String,
    /// Upstream provider settings.
    pub dex: DexConfig,
    /// Resource identifier tokens are bound to (RFC 8707; default `baseUrl`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_identifier: String,
    /// Rolling session duration: how long a refresh-token family lives without use
    /// (default `720h`).
    pub session_duration: String,
    /// Audiences of externally issued tokens muster accepts in addition to the resource
    /// identifier.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trusted_audiences: Vec<String>,
    /// Issuers whose JWTs muster accepts as bearers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trusted_issuers: Vec<TrustedIssuerConfig>,
    /// Web origins (`https://app.example.com`) whose pages may call the OAuth endpoints and
    /// metadata documents: they get CORS headers there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    /// Registration token required by `POST /oauth/register` (never serialized).
    #[serde(skip_serializing)]
    #[schemars(with = "Option<String>")]
    pub registration_token: Option<SecretString>,
    /// File holding the registration token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registration_token_file: Option<PathBuf>,
    /// Allow dynamic client registration without the registration token (default false).
    pub allow_public_client_registration: bool,
    /// Custom URI schemes (`cursor`, `vscode`) accepted as redirect URIs of registered
    /// clients.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trusted_public_registration_schemes: Vec<String>,
    /// Accept Client ID Metadata Documents: an `https` URL as `client_id` (default true).
    #[serde(rename = "enableCIMD")]
    pub enable_cimd: bool,
    /// Accept `http://localhost`, `http://127.0.0.1` and `http://[::1]` redirect URIs
    /// (default true).
    #[serde(rename = "allowLocalhostRedirectURIs")]
    pub allow_localhost_redirect_uris: bool,
    /// Where grants, clients and pending sign-ins are kept.
    pub storage: OAuthStorageConfig,
    /// Bound on sign-in attempts and failed bearers per client address.
    pub rate_limit: AuthRateLimitConfig,
    /// Encryption key of stored tokens (never serialized).
    #[serde(skip_serializing)]
    #[schemars(with = "Option<String>")]
    pub encryption_key: Option<SecretString>,
    /// File holding the encryption key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encryption_key_file: Option<PathBuf>,
}

impl Default for OAuthServerConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            base_url: String::new(),
            provider: "dex".to_owned(),
            dex: DexConfig::default(),
            resource_identifier: String::new(),
            session_duration: "720h".to_owned(),
            trusted_audiences: Vec::new(),
            trusted_issuers: Vec::new(),
            allowed_origins: Vec::new(),
            registration_token: None,
            registration_token_file: None,
            allow_public_client_registration: false,
            trusted_public_registration_schemes: Vec::new(),
            enable_cimd: true,
            allow_localhost_redirect_uris: true,
            storage: OAuthStorageConfig::default(),
            rate_limit: AuthRateLimitConfig::default(),
            encryption_key: None,
            encryption_key_file: None,
        }
    }
}

impl OAuthServerConfig {
    /// What keeps an enabled OAuth server from starting, each naming the key.
    pub fn problems(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        let at = "aggregator.oauth.server";
        let mut push = |key: &str, rule: &str| {
            out.push(Violation::new(format!("{at}.{key}"), rule.to_owned()));
        };
        if !is_http_url(&self.base_url) {
            push("baseUrl", "is required: muster's public http(s) URL");
        }
        if self.provider != "dex" {
            push(
                "provider",
                "only `dex` (any OpenID provider with discovery) is supported",
            );
        }
        if !is_http_url(&self.dex.issuer_url) {
            push(
                "dex.issuerUrl",
                "is required: the upstream provider's issuer URL",
            );
        }
        if self.dex.client_id.is_empty() {
            push(
                "dex.clientId",
                "is required: muster's client id at the provider",
            );
        }
        let keyed = self.encryption_key.is_some() || self.encryption_key_file.is_some();
        match self.storage.kind {
            OAuthStorageType::Valkey if self.storage.valkey.url.trim().is_empty() => push(
                "storage.valkey.url",
                "is required with `storage.type: valkey`: `host:port` or a `redis://` URL",
            ),
            OAuthStorageType::Valkey => {
                let url = self.storage.valkey.url.trim();
                if url.starts_with("rediss://") || url.starts_with("valkeys://") {
                    push(
                        "storage.valkey.url",
                        "TLS connections to Valkey are not supported yet: connect over a \
                         private network (or through a TLS sidecar) with a `redis://` address",
                    );
                }
            }
            OAuthStorageType::Memory if keyed => push(
                "encryptionKey",
                "encrypts what a shared store keeps at rest; with `storage.type: memory` \
                 nothing is kept outside the process, so remove it or use `valkey`",
            ),
            OAuthStorageType::Memory => {}
        }
        if self.rate_limit.per_minute == 0 {
            push("rateLimit.perMinute", "must be at least 1");
        }
        for (i, origin) in self.allowed_origins.iter().enumerate() {
            if !is_origin(origin) {
                push(
                    &format!("allowedOrigins[{i}]"),
                    "must be an origin: http or https, a host and an optional port, nothing \
                     after it (e.g. `https://app.example.com`)",
                );
            }
        }
        for (i, issuer) in self.trusted_issuers.iter().enumerate() {
            if !is_http_url(&issuer.issuer) {
                push(
                    &format!("trustedIssuers[{i}].issuer"),
                    "is required: the issuer's http(s) URL",
                );
            }
            if !issuer.jwks_url.is_empty() && !is_http_url(&issuer.jwks_url) {
                push(
                    &format!("trustedIssuers[{i}].jwksUrl"),
                    "must be an http(s) URL",
                );
            }
        }
        out
    }
}

/// Whether `text` is an absolute `http` or `https` URL with a host.
/// Whether `text` is a web origin as browsers send it: `http(s)://host[:port]`, lowercase
/// scheme, nothing after the authority.
fn is_origin(text: &str) -> bool {
    let Some(authority) = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
    else {
        return false;
    };
    !authority.is_empty()
        && !authority.chars().any(|c| {
            matches!(c, '/' | '?' | '#' | '@' | '*') || c.is_whitespace() || c.is_control()
        })
}

fn is_http_url(text: &str) -> bool {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"));
    rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'))
}

/// `aggregator.oauth.server.dex`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct DexConfig {
    /// Dex's issuer URL.
    pub issuer_url: String,
    /// muster's client id at Dex.
    pub client_id: String,
    /// muster's client secret at Dex (never serialized).
    #[serde(skip_serializing)]
    #[schemars(with = "Option<String>")]
    pub client_secret: Option<SecretString>,
    /// File holding the client secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret_file: Option<PathBuf>,
    /// Connector to use at Dex (sent as `connector_id`, so Dex skips its chooser).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub connector_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_server_namespaces_are_names_or_a_lone_star() {
        let problems = |list: &[&str]| {
            let cfg = MusterConfig {
                mcp_server_namespaces: list.iter().map(|s| (*s).to_owned()).collect(),
                ..MusterConfig::default()
            };
            cfg.namespace_problems()
                .iter()
                .map(|v| v.path.clone())
                .collect::<Vec<_>>()
        };
        assert!(problems(&[]).is_empty());
        assert!(problems(&["*"]).is_empty());
        assert!(problems(&["team-a", "b2"]).is_empty());
        assert_eq!(problems(&["Team"]), ["mcpServerNamespaces[0]"]);
        assert_eq!(
            problems(&["ok", "-x", "a/b"]),
            ["mcpServerNamespaces[1]", "mcpServerNamespaces[2]"]
        );
        assert_eq!(problems(&["*", "team-a"]), ["mcpServerNamespaces"]);
        assert_eq!(problems(&[&"a".repeat(64)]), ["mcpServerNamespaces[0]"]);
    }

    #[test]
    fn allowed_origins_are_bare_origins() {
        let problems = |list: &[&str]| {
            let cfg = OAuthServerConfig {
                allowed_origins: list.iter().map(|s| (*s).to_owned()).collect(),
                ..OAuthServerConfig::default()
            };
            cfg.problems()
                .into_iter()
                .map(|v| v.path)
                .filter(|p| p.contains("allowedOrigins"))
                .collect::<Vec<_>>()
        };
        assert!(problems(&["https://app.example.com", "http://localhost:6274"]).is_empty());
        assert_eq!(
            problems(&[
                "https://app.example.com/",
                "app.example.com",
                "*",
                "https://*.example.com",
                "https://u@app.example.com",
                "https://",
            ]),
            (0..6)
                .map(|i| format!("aggregator.oauth.server.allowedOrigins[{i}]"))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn limits_default_parse_and_refuse_zero() {
        let cfg: MusterConfig = serde_json::from_value(serde_json::json!({
            "aggregator": { "limits": { "maxSessions": 5, "headerReadTimeout": 0 } }
        }))
        .unwrap();
        let limits = cfg.aggregator.limits;
        assert_eq!(limits.max_sessions, 5);
        assert_eq!(limits.session_idle_timeout, 1800);
        assert_eq!(limits.max_connections, 1024);
        assert_eq!(limits.connection_idle_timeout, 60);
        assert_eq!(
            limits
                .problems()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            vec!["aggregator.limits.headerReadTimeout: must be at least 1".to_owned()]
        );
        assert!(AggregatorLimits::default().problems().is_empty());
    }

    #[test]
    fn defaults_and_unknown_keys() {
        let cfg: MusterConfig = serde_json::from_value(serde_json::json!({
            "aggregator": { "port": 18000, "enabled": true },
            "logging": { "level": "debug" }
        }))
        .unwrap();
        assert_eq!(cfg.aggregator.port, 18000);
        assert_eq!(cfg.aggregator.host, "localhost");
        assert_eq!(cfg.aggregator.muster_prefix, "x");
        assert_eq!(cfg.namespace(), "default");
        assert_eq!(cfg.aggregator.endpoint(), "http://localhost:18000/mcp");
        assert_eq!(
            cfg.aggregator.family_descriptions,
            FamilyDescriptionRule::Majority
        );
        let go: MusterConfig = serde_json::from_value(serde_json::json!({
            "aggregator": { "familyDescriptions": "mustMatch" }
        }))
        .unwrap();
        assert_eq!(
            go.aggregator.family_descriptions,
            FamilyDescriptionRule::MustMatch
        );
    }

    #[test]
    fn settings_that_do_nothing_are_named() {
        let cfg: MusterConfig = serde_json::from_value(serde_json::json!({
            "kubernetes": true,
            "aggregator": {
                "oauth": { "server": { "enabled": true }, "mcpClient": { "enabled": true } },
                "admin": { "enabled": true, "port": 9999 }
            }
        }))
        .unwrap();
        let paths: Vec<String> = cfg
            .unsupported_settings()
            .into_iter()
            .map(|v| v.path)
            .collect();
        assert_eq!(
            paths,
            [
                "aggregator.oauth.server.baseUrl",
                "aggregator.oauth.server.dex.issuerUrl",
                "aggregator.oauth.server.dex.clientId",
                "aggregator.admin.enabled",
            ]
        );
        let complete: MusterConfig = serde_json::from_value(serde_json::json!({
            "aggregator": { "oauth": { "server": {
                "enabled": true, "baseUrl": "https://muster.example.com",
                "dex": { "issuerUrl": "https://dex.example.com", "clientId": "muster" }
            } } }
        }))
        .unwrap();
        assert!(complete.unsupported_settings().is_empty());
        assert!(MusterConfig::default().unsupported_settings().is_empty());
        let port: MusterConfig = serde_json::from_value(serde_json::json!({
            "aggregator": { "admin": { "port": 7777 } }
        }))
        .unwrap();
        assert_eq!(
            port.unsupported_settings()[0].to_string(),
            "aggregator.admin.port: the admin UI is not available in this muster yet; remove \
             the aggregator.admin section"
        );
    }

    #[test]
    fn secrets_are_not_serialized() {
        let cfg: MusterConfig = serde_json::from_value(serde_json::json!({
            "aggregator": { "oauth": { "server": { "dex": { "clientSecret": "hunter2" } } } }
        }))
        .unwrap();
        assert!(cfg.aggregator.oauth.server.dex.client_secret.is_some());
        let out = serde_json::to_string(&cfg).unwrap();
        assert!(!out.contains("hunter2"));
        assert!(!format!("{cfg:?}").contains("hunter2"));
    }
}
