//! Authentication settings of a remote MCPServer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec.auth`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerAuth {
    /// `oauth` or `none`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<AuthType>,
    /// Forward muster's ID token for SSO.
    #[serde(default, skip_serializing_if = "is_false")]
    pub forward_token: bool,
    /// Send the session's ID token in `X-Muster-Id-Token` next to the pinned grant.
    #[serde(default, skip_serializing_if = "is_false")]
    pub forward_identity: bool,
    /// Provider Apps whose grants the server receives.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_apps: Vec<String>,
    /// Additional audiences to request from the IdP for SSO.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_audiences: Vec<String>,
    /// RFC 8693 token exchange for cross-cluster SSO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_exchange: Option<TokenExchange>,
    /// Pinned OAuth authorization server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_server: Option<AuthorizationServer>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl McpServerAuth {
    /// Whether the server is served per session with the caller's own identity.
    pub fn is_per_session(&self) -> bool {
        self.forward_token || self.token_exchange.as_ref().is_some_and(|t| t.enabled)
    }
}

/// `spec.auth.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuthType {
    /// OAuth towards the server.
    Oauth,
    /// No authentication.
    None,
}

/// `spec.auth.tokenExchange`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenExchange {
    /// Enable token exchange.
    #[serde(default)]
    pub enabled: bool,
    /// Dex's token endpoint (HTTPS); required when enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dex_token_endpoint: Option<String>,
    /// Expected `iss` of the exchanged token (HTTPS); default: the endpoint minus `/token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_issuer: Option<String>,
    /// ID of the OIDC connector on the remote Dex; required when enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_id: Option<String>,
    /// Scopes to request; default `openid profile email groups`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<String>,
    /// Secret holding the client credentials for the exchange.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_credentials_secret_ref: Option<ClientCredentialsSecretRef>,
}

impl TokenExchange {
    /// Default scopes requested for an exchanged token.
    pub const DEFAULT_SCOPES: &'static str = "openid profile email groups";

    /// The issuer the exchanged token must carry.
    pub fn effective_expected_issuer(&self) -> Option<String> {
        self.expected_issuer.clone().or_else(|| {
            self.dex_token_endpoint
                .as_deref()
                .map(|e| e.strip_suffix("/token").unwrap_or(e).to_owned())
        })
    }
}

/// `spec.auth.authorizationServer`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationServer {
    /// Issuer URL (HTTPS; no trailing slash, query or fragment).
    #[serde(default)]
    pub issuer: String,
    /// Authorization endpoint of a server without discovery; set with `tokenEndpoint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Token endpoint of such a server; set with `authorizationEndpoint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// Issuer in the RFC 9207 `iss` parameter when it differs from `issuer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_issuer: Option<String>,
    /// RFC 7009 revocation endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// Secret holding a pre-registered client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_credentials_secret_ref: Option<ClientCredentialsSecretRef>,
    /// Whom a token belongs to: `session` (default) or `subject`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_scope: Option<GrantScope>,
    /// OAuth scope parameter value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<String>,
}

/// `spec.auth.authorizationServer.grantScope`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GrantScope {
    /// The muster session that obtained the token.
    #[default]
    Session,
    /// The person: every session of the same person reuses it.
    Subject,
}

/// A reference to a Secret holding OAuth client credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientCredentialsSecretRef {
    /// Name of the Secret.
    #[serde(default)]
    pub name: String,
    /// Namespace of the Secret; default: the MCPServer's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Key of the client id; default `client-id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_key: Option<String>,
    /// Key of the client secret; default `client-secret`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_key: Option<String>,
}

impl ClientCredentialsSecretRef {
    /// The key of the client id, with its default.
    pub fn client_id_key(&self) -> &str {
        self.client_id_key.as_deref().unwrap_or("client-id")
    }

    /// The key of the client secret, with its default.
    pub fn client_secret_key(&self) -> &str {
        self.client_secret_key.as_deref().unwrap_or("client-secret")
    }
}
