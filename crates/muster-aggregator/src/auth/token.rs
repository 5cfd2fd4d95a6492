//! The token endpoint: exchanging an authorization code (with its PKCE verifier) and
//! refreshing a grant; and the revocation endpoint (RFC 7009), where a grant's tokens are
//! revoked at sign-out. Error texts carry the server's `error` code and description, never a
//! token or code.

use chrono::Utc;
use muster_core::auth::Grant;
use muster_core::secret::{ExposeSecret, SecretString};
use serde::Deserialize;

/// Why the token endpoint gave no token.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TokenError {
    /// The endpoint could not be reached.
    #[error("token endpoint unreachable: {0}")]
    Unreachable(String),
    /// The endpoint refused the request.
    #[error("token endpoint refused the request: {0}")]
    Refused(String),
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<i64>,
    #[serde(default)]
    scope: Option<String>,
}

/// An OAuth error answer (RFC 6749 §5.2).
#[derive(Deserialize)]
pub(crate) struct ErrorResponse {
    /// The error code.
    #[serde(default)]
    pub(crate) error: String,
    /// The server's description.
    #[serde(default)]
    pub(crate) error_description: Option<String>,
}

/// What a grant is filed under and refreshed with.
pub(crate) struct GrantContext<'a> {
    pub(crate) issuer: &'a str,
    pub(crate) token_endpoint: &'a str,
    pub(crate) client_id: &'a str,
    /// The client's secret, for a client registered out of band (sent in the form,
    /// `client_secret_post`); `None` for muster's public client.
    pub(crate) client_secret: Option<&'a SecretString>,
}

/// Exchanges `code` for a grant.
pub(crate) async fn exchange_code(
    http: &reqwest::Client,
    context: &GrantContext<'_>,
    code: &str,
    redirect_uri: &str,
    verifier: &SecretString,
) -> Result<Grant, TokenError> {
    let body = {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("client_id", context.client_id)
            .append_pair("code_verifier", verifier.expose_secret());
        if let Some(secret) = context.client_secret {
            form.append_pair("client_secret", secret.expose_secret());
        }
        form.finish()
    };
    request(http, context, body, None).await
}

/// Refreshes `grant` (as a confidential client when `client_secret` is given); a new grant
/// that keeps the old refresh token when the server sent none.
pub(crate) async fn refresh(
    http: &reqwest::Client,
    grant: &Grant,
    client_secret: Option<&SecretString>,
) -> Result<Grant, TokenError> {
    let Some(refresh_token) = &grant.refresh_token else {
        return Err(TokenError::Refused("no refresh token".to_owned()));
    };
    let context = GrantContext {
        issuer: &grant.issuer,
        token_endpoint: &grant.token_endpoint,
        client_id: &grant.client_id,
        client_secret,
    };
    let body = {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "refresh_token")
            .append_pair("refresh_token", refresh_token.expose_secret())
            .append_pair("client_id", &grant.client_id);
        if let Some(secret) = client_secret {
            form.append_pair("client_secret", secret.expose_secret());
        }
        form.finish()
    };
    let mut fresh = request(http, &context, body, Some(refresh_token)).await?;
    if fresh.scope.is_none() {
        fresh.scope.clone_from(&grant.scope);
    }
    Ok(fresh)
}

async fn request(
    http: &reqwest::Client,
    context: &GrantContext<'_>,
    body: String,
    previous_refresh: Option<&SecretString>,
) -> Result<Grant, TokenError> {
    let response = http
        .post(context.token_endpoint)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| TokenError::Unreachable(e.without_url().to_string()))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| TokenError::Unreachable(e.without_url().to_string()))?;
    if !status.is_success() {
        return Err(TokenError::Refused(error_text(status, &bytes)));
    }
    let token: TokenResponse = serde_json::from_slice(&bytes)
        .map_err(|_| TokenError::Refused("the answer is not a token response".to_owned()))?;
    let now = Utc::now();
    Ok(Grant {
        issuer: context.issuer.to_owned(),
        access_token: SecretString::from(token.access_token),
        refresh_token: token
            .refresh_token
            .map(SecretString::from)
            .or_else(|| previous_refresh.cloned()),
        scope: token.scope,
        expires_at: token
            .expires_in
            .filter(|s| *s > 0)
            .map(|s| now + chrono::Duration::seconds(s)),
        token_endpoint: context.token_endpoint.to_owned(),
        client_id: context.client_id.to_owned(),
        obtained_at: now,
    })
}

/// Revokes `grant` at `endpoint` (RFC 7009): its refresh token, which ends the whole grant
/// (the server invalidates the access tokens issued under it, RFC 7009 §2.1), or its access
/// token when it has no refresh token. A confidential client sends its secret
/// (`client_secret_post`, as at the token endpoint).
///
/// # Errors
///
/// When the endpoint cannot be reached or refuses the revocation (RFC 7009 answers 200 for a
/// token it does not know, so a refusal is a real failure).
pub(crate) async fn revoke(
    http: &reqwest::Client,
    endpoint: &str,
    grant: &Grant,
    client_secret: Option<&SecretString>,
) -> Result<(), TokenError> {
    let (token, hint) = match &grant.refresh_token {
        Some(refresh) => (refresh, "refresh_token"),
        None => (&grant.access_token, "access_token"),
    };
    revoke_token(
        http,
        endpoint,
        (token, hint),
        &grant.client_id,
        client_secret,
    )
    .await
}

/// Revokes one `token` of the kind `hint` names (`refresh_token`, `access_token`) at
/// `endpoint` (RFC 7009) as `client_id`, with its secret for a confidential client.
///
/// # Errors
///
/// When the endpoint cannot be reached or refuses the revocation.
pub(crate) async fn revoke_token(
    http: &reqwest::Client,
    endpoint: &str,
    (token, hint): (&SecretString, &str),
    client_id: &str,
    client_secret: Option<&SecretString>,
) -> Result<(), TokenError> {
    let body = {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("token", token.expose_secret())
            .append_pair("token_type_hint", hint)
            .append_pair("client_id", client_id);
        if let Some(secret) = client_secret {
            form.append_pair("client_secret", secret.expose_secret());
        }
        form.finish()
    };
    let response = http
        .post(endpoint)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body)
        .send()
        .await
        .map_err(|e| TokenError::Unreachable(e.without_url().to_string()))?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let bytes = response.bytes().await.unwrap_or_default();
    Err(TokenError::Refused(error_text(status, &bytes)))
}

/// The `error` and description of an OAuth error answer, or its HTTP status.
fn error_text(status: http::StatusCode, body: &[u8]) -> String {
    serde_json::from_slice::<ErrorResponse>(body)
        .ok()
        .filter(|e| !e.error.is_empty())
        .map_or_else(
            || format!("HTTP {}", status.as_u16()),
            |e| match e.error_description {
                Some(d) if !d.is_empty() => format!("{}: {}", e.error, clip(&d)),
                _ => e.error,
            },
        )
}

/// At most 200 characters of a server-supplied description.
pub(crate) fn clip(text: &str) -> String {
    text.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::Router;
    use axum::extract::State;
    use axum::routing::post;

    use super::*;

    type Forms = Arc<Mutex<Vec<Vec<(String, String)>>>>;

    /// A token endpoint on the loopback interface that records every form it receives.
    async fn token_endpoint() -> (String, Forms) {
        async fn handle(State(forms): State<Forms>, body: String) -> axum::Json<serde_json::Value> {
            let form = form_urlencoded::parse(body.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            forms.lock().unwrap().push(form);
            axum::Json(serde_json::json!({
                "access_token": "at", "refresh_token": "rt", "expires_in": 60,
            }))
        }
        let forms = Forms::default();
        let app = Router::new()
            .route("/token", post(handle))
            .with_state(forms.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, forms)
    }

    fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    #[tokio::test]
    async fn a_registered_client_sends_its_secret_at_code_exchange_and_refresh() {
        let (url, forms) = token_endpoint().await;
        let http = reqwest::Client::new();
        let secret = SecretString::from("client-s3cret".to_owned());
        let context = GrantContext {
            issuer: "https://github.com/login/oauth",
            token_endpoint: &url,
            client_id: "Iv1.app",
            client_secret: Some(&secret),
        };
        let verifier = SecretString::from("v".repeat(43));
        let grant = exchange_code(&http, &context, "code-1", "http://cb", &verifier)
            .await
            .unwrap();
        assert_eq!(grant.client_id, "Iv1.app");
        refresh(&http, &grant, Some(&secret)).await.unwrap();
        refresh(&http, &grant, None).await.unwrap();
        let forms = forms.lock().unwrap();
        assert_eq!(field(&forms[0], "grant_type"), Some("authorization_code"));
        assert_eq!(field(&forms[0], "client_id"), Some("Iv1.app"));
        assert_eq!(field(&forms[0], "client_secret"), Some("client-s3cret"));
        assert_eq!(field(&forms[1], "grant_type"), Some("refresh_token"));
        assert_eq!(field(&forms[1], "client_secret"), Some("client-s3cret"));
        assert_eq!(field(&forms[2], "client_secret"), None, "public client");
    }

    #[tokio::test]
    async fn revocation_sends_the_refresh_token_or_else_the_access_token() {
        let (url, forms) = token_endpoint().await;
        let http = reqwest::Client::new();
        let context = GrantContext {
            issuer: "https://idp",
            token_endpoint: &url,
            client_id: "muster",
            client_secret: None,
        };
        let verifier = SecretString::from("v".repeat(43));
        let mut grant = exchange_code(&http, &context, "code-1", "http://cb", &verifier)
            .await
            .unwrap();
        let secret = SecretString::from("client-s3cret".to_owned());
        revoke(&http, &url, &grant, Some(&secret)).await.unwrap();
        grant.refresh_token = None;
        revoke(&http, &url, &grant, None).await.unwrap();
        let forms = forms.lock().unwrap();
        assert_eq!(field(&forms[1], "token"), Some("rt"));
        assert_eq!(field(&forms[1], "token_type_hint"), Some("refresh_token"));
        assert_eq!(field(&forms[1], "client_id"), Some("muster"));
        assert_eq!(field(&forms[1], "client_secret"), Some("client-s3cret"));
        assert_eq!(field(&forms[2], "token"), Some("at"));
        assert_eq!(field(&forms[2], "token_type_hint"), Some("access_token"));
        assert_eq!(field(&forms[2], "client_secret"), None, "public client");
    }
}
