//! Which authorization server protects a server, and where its endpoints are: the 401
//! challenge and RFC 9728 protected-resource metadata, then RFC 8414 / OpenID Connect
//! discovery of the authorization server.

use serde::Deserialize;
use url::Url;

use super::challenge;

/// The issuer and scope a protected server asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProtectedResource {
    pub(crate) issuer: String,
    pub(crate) scope: Option<String>,
}

/// The endpoints of an authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuthorizationServer {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    pub(crate) revocation_endpoint: Option<String>,
    /// Where clients register themselves (RFC 7591), when the server says.
    pub(crate) registration_endpoint: Option<String>,
    /// Whether the server supports the RFC 9207 `iss` response parameter.
    pub(crate) iss_parameter_supported: bool,
}

/// Why discovery failed; texts carry URLs and statuses, never a token.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DiscoveryError {
    /// The server answered without asking for a bearer token.
    #[error("the server does not ask for OAuth authentication (HTTP {0})")]
    NotProtected(u16),
    /// No protected-resource metadata naming an authorization server was found.
    #[error("RFC 9728 protected resource metadata not found")]
    ResourceMetadataNotFound,
    /// The authorization server publishes no usable metadata.
    #[error("authorization server metadata of {issuer} not found: {reason}")]
    ServerMetadata { issuer: String, reason: String },
    /// The server could not be reached.
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
}

#[derive(Deserialize)]
struct ResourceMetadata {
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
}

#[derive(Deserialize)]
struct ServerMetadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    #[serde(default)]
    revocation_endpoint: Option<String>,
    #[serde(default)]
    registration_endpoint: Option<String>,
    #[serde(default)]
    authorization_response_iss_parameter_supported: bool,
}

/// The body of the probe: an `initialize` request, as a client's first request.
const PROBE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"muster","version":"probe"}}}"#;

/// Asks the MCP server at `server_url` (without a token) which authorization server
/// protects it: the `resource_metadata` of its challenge, else its RFC 9728 well-known
/// documents (path-specific first).
pub(crate) async fn protected_resource(
    http: &reqwest::Client,
    server_url: &str,
) -> Result<ProtectedResource, DiscoveryError> {
    protected_resource_of(http, server_url, false).await
}

/// [`protected_resource`] for a streamable-HTTP server (probed with an `initialize`
/// `POST`), or a legacy SSE one (`legacy_sse`: probed with the `GET` that opens its event
/// stream).
pub(crate) async fn protected_resource_of(
    http: &reqwest::Client,
    server_url: &str,
    legacy_sse: bool,
) -> Result<ProtectedResource, DiscoveryError> {
    let unreachable = |reason: String| DiscoveryError::Unreachable {
        url: server_url.to_owned(),
        reason,
    };
    let probe = if legacy_sse {
        http.get(server_url)
            .header(http::header::ACCEPT, "text/event-stream")
    } else {
        http.post(server_url)
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(PROBE)
    };
    let response = probe
        .send()
        .await
        .map_err(|e| unreachable(e.without_url().to_string()))?;
    let status = response.status().as_u16();
    if status != 401 {
        return Err(DiscoveryError::NotProtected(status));
    }
    let parsed = response
        .headers()
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(challenge::parse)
        .unwrap_or_default();
    let mut candidates: Vec<String> = parsed.resource_metadata.into_iter().collect();
    candidates.extend(well_known_urls(server_url, "oauth-protected-resource"));
    for url in candidates {
        let Some(doc) = fetch_json::<ResourceMetadata>(http, &url).await else {
            continue;
        };
        let Some(issuer) = doc.authorization_servers.into_iter().next() else {
            continue;
        };
        let scope = parsed
            .scope
            .clone()
            .or_else(|| (!doc.scopes_supported.is_empty()).then(|| doc.scopes_supported.join(" ")));
        return Ok(ProtectedResource {
            issuer: issuer.trim_end_matches('/').to_owned(),
            scope,
        });
    }
    Err(DiscoveryError::ResourceMetadataNotFound)
}

/// The metadata of the authorization server `issuer` (RFC 8414, then OpenID Connect
/// discovery); its `issuer` must be `issuer` (RFC 8414 §3.3).
pub(crate) async fn authorization_server(
    http: &reqwest::Client,
    issuer: &str,
) -> Result<AuthorizationServer, DiscoveryError> {
    let failed = |reason: &str| DiscoveryError::ServerMetadata {
        issuer: issuer.to_owned(),
        reason: reason.to_owned(),
    };
    let mut urls = well_known_urls(issuer, "oauth-authorization-server");
    urls.truncate(1);
    urls.push(format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    ));
    for url in urls {
        let Some(doc) = fetch_json::<ServerMetadata>(http, &url).await else {
            continue;
        };
        if doc.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
            return Err(failed("its metadata names another issuer"));
        }
        return Ok(AuthorizationServer {
            issuer: issuer.to_owned(),
            authorization_endpoint: doc.authorization_endpoint,
            token_endpoint: doc.token_endpoint,
            revocation_endpoint: doc.revocation_endpoint,
            registration_endpoint: doc.registration_endpoint,
            iss_parameter_supported: doc.authorization_response_iss_parameter_supported,
        });
    }
    Err(failed("no discovery document answered"))
}

/// `<origin>/.well-known/<name><path>` (RFC 8414 §3.1 / RFC 9728 §3.1), then
/// `<origin>/.well-known/<name>` when the URL has a path.
fn well_known_urls(url: &str, name: &str) -> Vec<String> {
    let Ok(parsed) = Url::parse(url) else {
        return Vec::new();
    };
    let origin = parsed.origin().ascii_serialization();
    let path = parsed.path().trim_end_matches('/');
    let mut out = Vec::new();
    if !path.is_empty() {
        out.push(format!("{origin}/.well-known/{name}{path}"));
    }
    out.push(format!("{origin}/.well-known/{name}"));
    out
}

/// GETs `url` and parses a 200 JSON answer as `T`; anything else is `None`.
async fn fetch_json<T: for<'de> Deserialize<'de>>(http: &reqwest::Client, url: &str) -> Option<T> {
    let response = http
        .get(url)
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let bytes = response.bytes().await.ok()?;
    if bytes.len() > 256 * 1024 {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_locations() {
        assert_eq!(
            well_known_urls("http://h:1/mcp", "oauth-protected-resource"),
            [
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            well_known_urls("https://idp.example", "oauth-authorization-server"),
            ["https://idp.example/.well-known/oauth-authorization-server"]
        );
    }
}
