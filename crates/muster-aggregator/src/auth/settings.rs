//! How muster signs in to protected servers: its public URL, callback, client id, and the
//! bounds of sign-in state.

use std::time::Duration;

use muster_core::config::{AggregatorConfig, OAuthClientConfig};
use muster_core::resource::mcp_server::McpServerSpec;

/// Whether `spec` forwards the caller's token (token exchange, when enabled, takes
/// precedence and is not forwarding).
pub(crate) fn forwards_token(spec: &McpServerSpec) -> bool {
    spec.transport
        .remote()
        .and_then(|r| r.auth.as_ref())
        .is_some_and(|a| a.forward_token && !a.token_exchange.as_ref().is_some_and(|t| t.enabled))
}

/// The path that sends a browser on to the authorization server.
pub const START_PATH: &str = "/oauth/proxy/start";

/// Settings of muster as OAuth client of protected MCP servers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientSettings {
    /// Whether sign-in is enabled (`aggregator.oauth.mcpClient.enabled`).
    pub enabled: bool,
    /// muster's public URL, without trailing slash.
    pub public_url: String,
    /// The callback path (default `/oauth/proxy/callback`).
    pub callback_path: String,
    /// The client id sent to authorization servers.
    pub client_id: String,
    /// Path of muster's Client ID Metadata Document.
    pub cimd_path: String,
    /// Scopes muster's Client ID Metadata Document lists.
    pub cimd_scopes: String,
    /// How long a started sign-in stays valid (default 10 minutes).
    pub sign_in_ttl: Duration,
    /// A token expiring within this margin is refreshed before use (default 5 minutes).
    pub refresh_margin: Duration,
    /// A session's connection unused this long is closed (default 1 hour).
    pub idle_timeout: Duration,
    /// Requests to authorization servers and metadata documents (default 10 s).
    pub http_timeout: Duration,
    /// Sign-ins one session may start per minute (default 10).
    pub sign_ins_per_minute: u32,
    /// Per-session connections held at once (default 1000); the idlest is closed for a new
    /// one.
    pub max_connections: usize,
    /// CA certificates trusted, in addition to the system's, for talking to authorization
    /// servers and protected-resource metadata (`aggregator.extraCaFile`).
    pub extra_roots: crate::tls::ExtraRoots,
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            public_url: "http://localhost:8090".to_owned(),
            callback_path: "/oauth/proxy/callback".to_owned(),
            client_id: String::new(),
            cimd_path: "/.well-known/oauth-client.json".to_owned(),
            cimd_scopes: "openid profile email groups offline_access".to_owned(),
            sign_in_ttl: Duration::from_secs(600),
            refresh_margin: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(3600),
            http_timeout: Duration::from_secs(10),
            sign_ins_per_minute: 10,
            max_connections: 1000,
            extra_roots: crate::tls::ExtraRoots::default(),
        }
    }
}

impl ClientSettings {
    /// These settings, trusting `roots` too.
    #[must_use]
    pub fn with_extra_roots(mut self, roots: crate::tls::ExtraRoots) -> Self {
        self.extra_roots = roots;
        self
    }

    /// The settings of `config.oauth.mcpClient`; the public URL defaults to the
    /// aggregator's own `http://<host>:<port>`.
    pub fn from_config(aggregator: &AggregatorConfig) -> Self {
        let client: &OAuthClientConfig = &aggregator.oauth.mcp_client;
        let public_url = if client.public_url.trim().is_empty() {
            let host = match aggregator.host.as_str() {
                "" | "0.0.0.0" | "::" => "localhost",
                h => h,
            };
            format!("http://{host}:{}", aggregator.port)
        } else {
            client.public_url.trim().trim_end_matches('/').to_owned()
        };
        let defaults = Self::default();
        let path = |p: &str, default: &str| {
            let p = p.trim();
            if p.is_empty() {
                default.to_owned()
            } else if p.starts_with('/') {
                p.to_owned()
            } else {
                format!("/{p}")
            }
        };
        Self {
            enabled: client.enabled,
            callback_path: path(&client.callback_path, &defaults.callback_path),
            cimd_path: path(&client.cimd.path, &defaults.cimd_path),
            cimd_scopes: client.cimd.scopes.clone(),
            client_id: client.client_id.trim().to_owned(),
            public_url,
            ..defaults
        }
    }

    /// The `redirect_uri` of every sign-in.
    pub fn redirect_uri(&self) -> String {
        format!("{}{}", self.public_url, self.callback_path)
    }

    /// The client id: the configured one, else the URL of muster's Client ID Metadata
    /// Document.
    pub fn effective_client_id(&self) -> String {
        if self.client_id.is_empty() {
            format!("{}{}", self.public_url, self.cimd_path)
        } else {
            self.client_id.clone()
        }
    }

    /// muster's Client ID Metadata Document.
    pub fn client_metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "client_id": self.effective_client_id(),
            "client_name": "muster",
            "redirect_uris": [self.redirect_uri()],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "scope": self.cimd_scopes,
        })
    }
}
