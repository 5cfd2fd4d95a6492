//! Signing in to a muster server protected by its OAuth server, as a native client does it
//! (RFC 8252): discovery of the authorization server from the endpoint (RFC 9728, RFC 8414),
//! a client id (dynamic registration, RFC 7591, or a configured id), the authorization code
//! flow with PKCE and a loopback redirect, refresh and revocation (RFC 7009).
//!
//! The `muster auth` commands are built on it; they keep the [`Grant`] in the user's config
//! directory. Error texts carry URLs, statuses and the server's error codes, never a token
//! or code.
//!
//! ```no_run
//! # async fn run() -> Result<(), muster_aggregator::client::signin::SignInError> {
//! use muster_aggregator::client::signin::{Loopback, SignIn, discover};
//! let endpoint = "http://localhost:8090/mcp";
//! let Some(server) = discover(endpoint).await? else {
//!     return Ok(()); // muster does not ask for a sign-in
//! };
//! let loopback = Loopback::bind(0).await?;
//! let client_id = server.register(&loopback.redirect_uri(), None).await?;
//! let sign_in = SignIn::start(&server, endpoint, &client_id, &loopback.redirect_uri())?;
//! println!("open {}", sign_in.authorization_url());
//! let answer = loopback.wait(std::time::Duration::from_secs(300)).await?;
//! let grant = sign_in.finish(&answer).await?;
//! # let _ = grant;
//! # Ok(())
//! # }
//! ```

mod error;
mod loopback;

use std::collections::BTreeMap;
use std::time::Duration;

use muster_core::auth::Grant;
use muster_core::secret::{ExposeSecret as _, SecretString};
use serde_json::{Value, json};

pub use self::error::SignInError;
pub use self::loopback::Loopback;
use crate::auth::discovery::{self, AuthorizationServer, DiscoveryError};
use crate::auth::{pkce, token};

/// How long one request to muster's OAuth endpoints may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// The scopes asked for: an identity and a refresh token.
pub const SCOPES: &str = "openid profile email offline_access";

/// The authorization server of a muster endpoint.
#[derive(Debug, Clone)]
pub struct AuthServer {
    metadata: AuthorizationServer,
    http: reqwest::Client,
}

fn http_client() -> Result<reqwest::Client, SignInError> {
    reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| SignInError::Unreachable {
            url: String::new(),
            reason: format!("cannot build the HTTP client: {e}"),
        })
}

/// The authorization server protecting `endpoint` (an MCP endpoint such as
/// `http://localhost:8090/mcp`), or `None` when the endpoint answers without asking for a
/// token.
///
/// # Errors
///
/// When the endpoint cannot be reached or names no usable authorization server.
pub async fn discover(endpoint: &str) -> Result<Option<AuthServer>, SignInError> {
    let http = http_client()?;
    let resource = match discovery::protected_resource(&http, endpoint).await {
        Ok(resource) => resource,
        Err(DiscoveryError::NotProtected(_)) => return Ok(None),
        Err(DiscoveryError::Unreachable { url, reason }) => {
            return Err(SignInError::Unreachable { url, reason });
        }
        Err(other) => {
            return Err(SignInError::Discovery {
                endpoint: endpoint.to_owned(),
                reason: other.to_string(),
            });
        }
    };
    let metadata = discovery::authorization_server(&http, &resource.issuer)
        .await
        .map_err(|e| SignInError::Discovery {
            endpoint: endpoint.to_owned(),
            reason: e.to_string(),
        })?;
    Ok(Some(AuthServer { metadata, http }))
}

impl AuthServer {
    /// The issuer.
    pub fn issuer(&self) -> &str {
        &self.metadata.issuer
    }

    /// The token endpoint.
    pub fn token_endpoint(&self) -> &str {
        &self.metadata.token_endpoint
    }

    /// The revocation endpoint, when the server has one.
    pub fn revocation_endpoint(&self) -> Option<&str> {
        self.metadata.revocation_endpoint.as_deref()
    }

    /// Registers a public client (no secret) with `redirect_uri` (RFC 7591), presenting
    /// `registration_token` as a bearer when given; the client id.
    ///
    /// # Errors
    ///
    /// When the server has no registration endpoint or refuses the registration.
    pub async fn register(
        &self,
        redirect_uri: &str,
        registration_token: Option<&SecretString>,
    ) -> Result<String, SignInError> {
        let Some(url) = &self.metadata.registration_endpoint else {
            return Err(SignInError::Registration(
                "it offers no registration endpoint".to_owned(),
            ));
        };
        let mut request = self.http.post(url).json(&json!({
            "client_name": "muster CLI",
            "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "scope": SCOPES,
        }));
        if let Some(token) = registration_token {
            request = request.bearer_auth(token.expose_secret());
        }
        let response = request.send().await.map_err(|e| SignInError::Unreachable {
            url: url.clone(),
            reason: e.without_url().to_string(),
        })?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(SignInError::Registration(oauth_error(
                &body,
                status.as_u16(),
            )));
        }
        body.get("client_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| SignInError::Registration("the answer has no client_id".to_owned()))
    }
}

/// A started sign-in: the URL to open, and what checks and redeems the answer.
#[derive(Debug)]
pub struct SignIn {
    server: AuthServer,
    client_id: String,
    redirect_uri: String,
    state: String,
    verifier: SecretString,
    url: String,
}

impl SignIn {
    /// Starts a sign-in of `client_id` to `server`, for `resource` (RFC 8707: the MCP
    /// endpoint), answered at `redirect_uri`.
    ///
    /// # Errors
    ///
    /// When no random numbers are available.
    pub fn start(
        server: &AuthServer,
        resource: &str,
        client_id: &str,
        redirect_uri: &str,
    ) -> Result<Self, SignInError> {
        let random = |_| SignInError::Random("the system has none".to_owned());
        let state = pkce::random_value().map_err(random)?;
        let verifier = pkce::random_value().map_err(random)?;
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", SCOPES)
            .append_pair("state", &state)
            .append_pair("code_challenge", &pkce::s256_challenge(&verifier))
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", resource)
            .finish();
        let endpoint = &server.metadata.authorization_endpoint;
        let separator = if endpoint.contains('?') { '&' } else { '?' };
        Ok(Self {
            server: server.clone(),
            client_id: client_id.to_owned(),
            redirect_uri: redirect_uri.to_owned(),
            url: format!("{endpoint}{separator}{query}"),
            state,
            verifier: SecretString::from(verifier),
        })
    }

    /// The URL the user opens in a browser.
    pub fn authorization_url(&self) -> &str {
        &self.url
    }

    /// Checks the authorization response's parameters (`state`, RFC 9207 `iss`, `error`)
    /// and redeems its code.
    ///
    /// # Errors
    ///
    /// When the answer is an error, belongs to another sign-in or another issuer, or the
    /// code is refused.
    pub async fn finish(self, answer: &BTreeMap<String, String>) -> Result<Grant, SignInError> {
        let state_matches = answer.get("state").is_some_and(|s| *s == self.state);
        if !state_matches {
            return Err(SignInError::Refused(
                "the answer belongs to another sign-in (state does not match)".to_owned(),
            ));
        }
        if let Some(error) = answer.get("error") {
            let description = answer
                .get("error_description")
                .map(|d| format!(": {}", token::clip(d)))
                .unwrap_or_default();
            return Err(SignInError::Refused(format!(
                "{}{description}",
                token::clip(error)
            )));
        }
        match answer.get("iss") {
            Some(iss)
                if iss.trim_end_matches('/') != self.server.issuer().trim_end_matches('/') =>
            {
                return Err(SignInError::Refused(format!(
                    "the answer comes from another issuer ({}), not {}",
                    token::clip(iss),
                    self.server.issuer()
                )));
            }
            None if self.server.metadata.iss_parameter_supported => {
                return Err(SignInError::Refused(
                    "the answer lacks the issuer (RFC 9207 iss) its server promises".to_owned(),
                ));
            }
            _ => {}
        }
        let Some(code) = answer.get("code") else {
            return Err(SignInError::Refused(
                "the answer carries no code".to_owned(),
            ));
        };
        let context = token::GrantContext {
            issuer: self.server.issuer(),
            token_endpoint: self.server.token_endpoint(),
            client_id: &self.client_id,
            client_secret: None,
        };
        token::exchange_code(
            &self.server.http,
            &context,
            code,
            &self.redirect_uri,
            &self.verifier,
        )
        .await
        .map_err(|e| SignInError::Token(e.to_string()))
    }
}

/// Refreshes `grant` at its token endpoint; the new grant (refresh tokens rotate).
///
/// # Errors
///
/// When the token endpoint cannot be reached or refuses the refresh token.
pub async fn refresh(grant: &Grant) -> Result<Grant, SignInError> {
    token::refresh(&http_client()?, grant, None)
        .await
        .map_err(|e| SignInError::Token(e.to_string()))
}

/// Revokes the refresh token `token` at `revocation_endpoint` (RFC 7009) as `client_id`;
/// for a muster sign-in this ends its whole session. Nothing when there is no endpoint.
///
/// # Errors
///
/// When the endpoint cannot be reached or refuses.
pub async fn revoke(
    revocation_endpoint: Option<&str>,
    client_id: &str,
    token: &SecretString,
) -> Result<(), SignInError> {
    let Some(url) = revocation_endpoint else {
        return Ok(());
    };
    let http = http_client()?;
    token::revoke_token(&http, url, (token, "refresh_token"), client_id, None)
        .await
        .map_err(|e| match e {
            token::TokenError::Unreachable(reason) => SignInError::Unreachable {
                url: url.to_owned(),
                reason,
            },
            token::TokenError::Refused(reason) => {
                SignInError::Token(format!("revocation refused: {reason}"))
            }
        })
}

/// `error: description` of an OAuth error body, else the status.
fn oauth_error(body: &Value, status: u16) -> String {
    match (
        body.get("error").and_then(Value::as_str),
        body.get("error_description").and_then(Value::as_str),
    ) {
        (Some(error), Some(d)) if !d.is_empty() => {
            format!("{}: {}", token::clip(error), token::clip(d))
        }
        (Some(error), _) => token::clip(error),
        _ => format!("HTTP {status}"),
    }
}
