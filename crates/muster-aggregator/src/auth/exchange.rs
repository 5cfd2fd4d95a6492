//! Token exchange (`spec.auth.tokenExchange`, RFC 8693, as Dex implements it): a session
//! whose caller brought a token muster validated gets a connection of its own to the
//! server, authorized with a token the server's identity provider issued in exchange for
//! the caller's.
//!
//! The exchange is a form POST to `dexTokenEndpoint` with the caller's token as
//! `subject_token` (an ID token), `connector_id`, the scopes (`scopes`, default
//! `openid profile email groups`, plus `audience:server:client_id:<aud>` for each of
//! `requiredAudiences`) and, when `clientCredentialsSecretRef` names one, the client's id and
//! secret (HTTP Basic), read from its Secret at each exchange so a rotation takes effect at
//! once. The issued token's `iss` must equal `expectedIssuer` (default: the endpoint minus
//! `/token`), compared in constant time.
//!
//! Exchanged tokens are kept with their expiry: a token within [`RENEW_MARGIN`] of expiry is
//! exchanged again before it is sent, a 401 of the server exchanges once more and retries,
//! and a new token of the caller (refreshed) is exchanged at its next use. Tokens never
//! appear in logs or errors: each one goes into the connection's redactor.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use futures::future::BoxFuture;
use muster_core::resource::mcp_server::{McpServerSpec, TokenExchange};
use muster_core::secret::{ExposeSecret, Redactor, SecretString};
use serde::Deserialize;
use subtle::ConstantTimeEq;
use tokio::time::Instant;

use super::caller_token::ForwardedToken;
use super::token::{ErrorResponse, clip};
use crate::backend::client_credentials::{TOKEN_EXCHANGE_FIELD, read_client_credentials};
use crate::backend::{BackendOptions, BearerSource};

/// The grant type of RFC 8693.
const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of the subject token and of the token asked for.
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// An exchanged token this close to its expiry is exchanged again before use.
pub(crate) const RENEW_MARGIN: Duration = Duration::from_secs(30);
/// The lifetime assumed when the endpoint names none.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);

/// What one server's token exchange asks for, from its spec.
#[derive(Debug, Clone)]
pub(crate) struct ExchangeSettings {
    endpoint: String,
    connector: String,
    scope: String,
    expected_issuer: String,
    config: TokenExchange,
}

impl ExchangeSettings {
    /// The exchange `spec` enables, if any.
    pub(crate) fn of(spec: &McpServerSpec) -> Option<Self> {
        let auth = spec.transport.remote()?.auth.as_ref()?;
        let config = auth.token_exchange.as_ref().filter(|t| t.enabled)?;
        let endpoint = config.dex_token_endpoint.clone()?;
        let mut scope = config
            .scopes
            .clone()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| TokenExchange::DEFAULT_SCOPES.to_owned());
        for audience in &auth.required_audiences {
            scope.push_str(" audience:server:client_id:");
            scope.push_str(audience);
        }
        Some(Self {
            expected_issuer: config.effective_expected_issuer()?,
            connector: config.connector_id.clone().unwrap_or_default(),
            endpoint,
            scope,
            config: config.clone(),
        })
    }

    /// The token endpoint.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The connector on the remote identity provider.
    pub(crate) fn connector(&self) -> &str {
        &self.connector
    }
}

/// Why an exchange gave no token. Texts carry the endpoint's `error` code and description,
/// never a token or secret.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum ExchangeError {
    /// The endpoint did not answer, or answered 5xx.
    #[error("token endpoint {endpoint} unreachable: {reason}")]
    Endpoint {
        /// The endpoint.
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// The client credentials could not be read, or the endpoint refused them.
    #[error("client credentials: {0}")]
    Credentials(String),
    /// The endpoint does not know the connector.
    #[error("connector {connector:?} refused: {reason}")]
    Connector {
        /// The connector.
        connector: String,
        /// The endpoint's answer.
        reason: String,
    },
    /// The endpoint refused the caller's token (`invalid_grant`, an expired subject, a
    /// rejected audience): this caller's failure alone.
    #[error("the identity provider refused the caller's token: {0}")]
    Subject(String),
    /// The answer carried no usable token, or one of another issuer.
    #[error("the exchanged token is not usable: {0}")]
    Token(String),
}

impl ExchangeError {
    /// The `Ready` reason of a server whose exchange fails this way for every caller (the
    /// endpoint, the client, the connector); `None` for a failure of the caller's own token.
    pub(crate) fn ready_reason(&self) -> Option<&'static str> {
        match self {
            Self::Subject(_) => None,
            Self::Credentials(_) => Some("TokenExchangeCredentials"),
            Self::Connector { .. } => Some("TokenExchangeConnector"),
            Self::Endpoint { .. } | Self::Token(_) => Some("TokenExchangeEndpoint"),
        }
    }
}

/// One exchanged token and when it expires.
#[derive(Clone)]
pub(crate) struct Exchanged {
    token: SecretString,
    expires_at: Instant,
}

impl std::fmt::Debug for Exchanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchanged")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct ExchangeResponse {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// Exchanges `subject` at the endpoint of `settings`; client credentials are read through
/// `options` (the server's Secret reader and namespace).
///
/// # Errors
///
/// [`ExchangeError`], classed by whose failure it is.
pub(crate) async fn exchange(
    http: &reqwest::Client,
    settings: &ExchangeSettings,
    options: &BackendOptions,
    subject: &SecretString,
) -> Result<Exchanged, ExchangeError> {
    let client = match &settings.config.client_credentials_secret_ref {
        Some(reference) => Some(
            read_client_credentials(TOKEN_EXCHANGE_FIELD, reference, options)
                .await
                .map_err(|f| ExchangeError::Credentials(f.message))?,
        ),
        None => None,
    };
    let body = form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", GRANT_TYPE)
        .append_pair("subject_token", subject.expose_secret())
        .append_pair("subject_token_type", ID_TOKEN_TYPE)
        .append_pair("requested_token_type", ID_TOKEN_TYPE)
        .append_pair("connector_id", &settings.connector)
        .append_pair("scope", &settings.scope)
        .finish();
    let mut request = http
        .post(&settings.endpoint)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json")
        .body(body);
    if let Some(client) = &client {
        request = request.basic_auth(
            form_component(&client.client_id),
            Some(form_component(client.client_secret.expose_secret())),
        );
    }
    let unreachable = |e: reqwest::Error| ExchangeError::Endpoint {
        endpoint: settings.endpoint.clone(),
        reason: crate::backend::failure::with_causes(&e.without_url()),
    };
    let response = request.send().await.map_err(unreachable)?;
    let status = response.status();
    let bytes = response.bytes().await.map_err(unreachable)?;
    if !status.is_success() {
        return Err(refusal(settings, status, &bytes));
    }
    let answer: ExchangeResponse = serde_json::from_slice(&bytes)
        .map_err(|e| ExchangeError::Token(format!("the answer is not a token response: {e}")))?;
    check_issuer(&answer.access_token, &settings.expected_issuer)?;
    let lifetime = answer
        .expires_in
        .map_or(DEFAULT_LIFETIME, Duration::from_secs);
    Ok(Exchanged {
        token: SecretString::from(answer.access_token),
        expires_at: Instant::now() + lifetime,
    })
}

/// `value` encoded as RFC 6749 §2.3.1 asks for the client id and secret of HTTP Basic.
fn form_component(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// The error of a refused exchange, classed by the endpoint's `error` code.
fn refusal(settings: &ExchangeSettings, status: reqwest::StatusCode, body: &[u8]) -> ExchangeError {
    let answer = serde_json::from_slice::<ErrorResponse>(body)
        .ok()
        .filter(|e| !e.error.is_empty());
    let reason = answer.as_ref().map_or_else(
        || format!("HTTP {}", status.as_u16()),
        |e| match e.error_description.as_deref() {
            Some(d) if !d.is_empty() => format!("{}: {}", e.error, clip(d)),
            _ => e.error.clone(),
        },
    );
    let code = answer.as_ref().map_or("", |e| e.error.as_str());
    let description = answer
        .as_ref()
        .and_then(|e| e.error_description.as_deref())
        .unwrap_or("")
        .to_ascii_lowercase();
    if status.is_server_error() {
        ExchangeError::Endpoint {
            endpoint: settings.endpoint.clone(),
            reason,
        }
    } else if code == "invalid_client" || status == reqwest::StatusCode::UNAUTHORIZED {
        ExchangeError::Credentials(reason)
    } else if description.contains("connector") {
        ExchangeError::Connector {
            connector: settings.connector.clone(),
            reason,
        }
    } else {
        ExchangeError::Subject(reason)
    }
}

/// Checks that the JWT `token` names `expected` as its issuer (constant-time comparison).
fn check_issuer(token: &str, expected: &str) -> Result<(), ExchangeError> {
    let payload = token
        .split('.')
        .nth(1)
        .ok_or_else(|| ExchangeError::Token("it is not a JWT".to_owned()))?;
    let claims: serde_json::Value = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| ExchangeError::Token("its claims cannot be read".to_owned()))?;
    let issuer = claims
        .get("iss")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    if bool::from(issuer.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(ExchangeError::Token(format!(
            "its issuer {issuer:?} is not the expected {expected:?}"
        )))
    }
}

/// The [`BearerSource`] of a session's connection to a token-exchange server: the caller's
/// token, exchanged, kept until shortly before it expires.
#[derive(Debug)]
pub(crate) struct ExchangedToken {
    subject: Arc<ForwardedToken>,
    settings: ExchangeSettings,
    options: BackendOptions,
    http: reqwest::Client,
    current: tokio::sync::Mutex<Option<Current>>,
    redactors: Mutex<Vec<Redactor>>,
}

/// The exchanged token in use and the subject token it was exchanged for.
#[derive(Debug)]
struct Current {
    exchanged: Exchanged,
    subject: SecretString,
}

impl ExchangedToken {
    /// A source exchanging the caller's token of `subject` as `settings` say, starting with
    /// `first` (exchanged for `first_subject` when the session connected).
    pub(crate) fn new(
        subject: Arc<ForwardedToken>,
        settings: ExchangeSettings,
        options: BackendOptions,
        http: reqwest::Client,
        first: (Exchanged, SecretString),
    ) -> Self {
        Self {
            subject,
            settings,
            options,
            http,
            current: tokio::sync::Mutex::new(Some(Current {
                exchanged: first.0,
                subject: first.1,
            })),
            redactors: Mutex::default(),
        }
    }

    /// Adds every token of this source, present and future, to `redactor`.
    pub(crate) fn watch(&self, redactor: Redactor) {
        if let Ok(current) = self.current.try_lock()
            && let Some(current) = current.as_ref()
        {
            redactor.add(current.exchanged.token.expose_secret());
        }
        self.redactors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(redactor);
    }

    /// Exchanges the caller's current token now and keeps the result.
    async fn renew(&self, current: &mut Option<Current>) -> Option<SecretString> {
        let subject = self.subject.current();
        match exchange(&self.http, &self.settings, &self.options, &subject).await {
            Ok(exchanged) => {
                for redactor in self
                    .redactors
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .iter()
                {
                    redactor.add(exchanged.token.expose_secret());
                }
                let token = exchanged.token.clone();
                *current = Some(Current { exchanged, subject });
                tracing::debug!(endpoint = %self.settings.endpoint, "token exchanged again");
                Some(token)
            }
            Err(e) => {
                tracing::warn!(
                    endpoint = %self.settings.endpoint,
                    error = %e,
                    "exchanging the caller's token again failed"
                );
                *current = None;
                None
            }
        }
    }
}

impl BearerSource for ExchangedToken {
    fn token(&self) -> BoxFuture<'_, Option<SecretString>> {
        Box::pin(async move {
            let mut current = self.current.lock().await;
            if let Some(c) = current.as_ref()
                && self.subject.is(&c.subject)
                && c.exchanged.expires_at > Instant::now() + RENEW_MARGIN
            {
                return Some(c.exchanged.token.clone());
            }
            self.renew(&mut current).await
        })
    }

    fn refresh(&self, rejected: SecretString) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let mut current = self.current.lock().await;
            let replaced = current
                .as_ref()
                .is_some_and(|c| c.exchanged.token.expose_secret() != rejected.expose_secret());
            if replaced {
                return true;
            }
            self.renew(&mut current).await.is_some()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &serde_json::Value) -> String {
        let encode = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        format!(
            "{}.{}.sig",
            encode(br#"{"alg":"RS256"}"#),
            encode(claims.to_string().as_bytes())
        )
    }

    #[test]
    fn the_issued_token_must_name_the_expected_issuer() {
        let expected = "https://dex.remote.example";
        assert!(check_issuer(&jwt(&serde_json::json!({"iss": expected})), expected).is_ok());
        let other = check_issuer(
            &jwt(&serde_json::json!({"iss": "https://evil.example"})),
            expected,
        );
        assert!(
            other
                .unwrap_err()
                .to_string()
                .contains("is not the expected"),
            "another issuer is refused"
        );
        assert!(check_issuer("opaque-token", expected).is_err());
        assert!(check_issuer("a.!!!.c", expected).is_err());
    }

    #[test]
    fn refusals_are_classed_by_whose_failure_they_are() {
        let settings = ExchangeSettings {
            endpoint: "https://dex.example/token".to_owned(),
            connector: "local".to_owned(),
            scope: "openid".to_owned(),
            expected_issuer: "https://dex.example".to_owned(),
            config: TokenExchange::default(),
        };
        let class = |status: u16, body: &str| {
            refusal(
                &settings,
                reqwest::StatusCode::from_u16(status).unwrap_or_default(),
                body.as_bytes(),
            )
        };
        assert!(matches!(class(503, "{}"), ExchangeError::Endpoint { .. }));
        assert!(matches!(
            class(401, r#"{"error":"invalid_client"}"#),
            ExchangeError::Credentials(_)
        ));
        assert!(matches!(
            class(
                400,
                r#"{"error":"invalid_request","error_description":"Requested connector does not exist."}"#
            ),
            ExchangeError::Connector { .. }
        ));
        let subject = class(
            400,
            r#"{"error":"invalid_grant","error_description":"expired"}"#,
        );
        assert_eq!(
            subject.to_string(),
            "the identity provider refused the caller's token: invalid_grant: expired"
        );
        assert_eq!(subject.ready_reason(), None);
        assert_eq!(class(503, "").ready_reason(), Some("TokenExchangeEndpoint"));
        assert_eq!(
            class(401, r#"{"error":"invalid_client"}"#).ready_reason(),
            Some("TokenExchangeCredentials")
        );
    }

    #[test]
    fn required_audiences_become_cross_client_scopes() {
        let spec: McpServerSpec = serde_json::from_value(serde_json::json!({
            "type": "streamable-http",
            "url": "https://mcp.remote.example/mcp",
            "auth": {
                "requiredAudiences": ["kubernetes"],
                "tokenExchange": {
                    "enabled": true,
                    "dexTokenEndpoint": "https://dex.remote.example/token",
                    "connectorId": "local-dex",
                },
            },
        }))
        .unwrap_or_else(|e| panic!("spec: {e}"));
        let settings = ExchangeSettings::of(&spec).unwrap_or_else(|| panic!("enabled"));
        assert_eq!(
            settings.scope,
            "openid profile email groups audience:server:client_id:kubernetes"
        );
        assert_eq!(settings.expected_issuer, "https://dex.remote.example");
        assert_eq!(settings.connector(), "local-dex");
    }
}
