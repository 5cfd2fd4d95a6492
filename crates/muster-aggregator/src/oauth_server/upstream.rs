//! The upstream OpenID provider (Dex or any provider with discovery): its metadata, the
//! authorization URL muster sends users to, the code exchange, refresh, and the userinfo
//! check that tells whether the provider still honours a sign-in.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use muster_core::secret::{ExposeSecret as _, SecretString};
use serde::{Deserialize, Serialize};
use tokio::sync::RwLock;

use super::fetch::{self, FetchError};
use super::id_token::{self, IdTokenClaims};
use super::settings::{UPSTREAM_SCOPES, UpstreamSettings};

/// The provider metadata muster uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ProviderMetadata {
    /// The issuer; must equal the configured one.
    pub(crate) issuer: String,
    /// Where users sign in.
    pub(crate) authorization_endpoint: String,
    /// Where codes and refresh tokens are exchanged.
    pub(crate) token_endpoint: String,
    /// Where access tokens are checked.
    #[serde(default)]
    pub(crate) userinfo_endpoint: Option<String>,
}

/// Tokens the provider issued for one sign-in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct UpstreamTokens {
    #[serde(with = "super::exposed")]
    pub(crate) access_token: SecretString,
    #[serde(with = "super::exposed::option")]
    pub(crate) refresh_token: Option<SecretString>,
    #[serde(with = "super::exposed::option")]
    pub(crate) id_token: Option<SecretString>,
    pub(crate) expires_at: Option<SystemTime>,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    id_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// Claims of the userinfo answer muster reads.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct UserInfo {
    /// The subject.
    pub(crate) sub: String,
    /// The email, when given.
    #[serde(default)]
    pub(crate) email: Option<String>,
}

/// Why the provider refused or failed.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum UpstreamError {
    /// The provider said no (a rejected code, token or grant).
    #[error("the identity provider refused: {0}")]
    Refused(String),
    /// The provider could not be asked.
    #[error("the identity provider is unavailable: {0}")]
    Unavailable(String),
    /// Its answer was not acceptable (wrong issuer, bad ID token).
    #[error("the identity provider's answer is not acceptable: {0}")]
    Invalid(String),
}

impl From<FetchError> for UpstreamError {
    fn from(e: FetchError) -> Self {
        match e {
            FetchError::Status { status, .. } if (400..500).contains(&status) => {
                Self::Refused(e.to_string())
            }
            FetchError::Body(_) => Self::Invalid(e.to_string()),
            other => Self::Unavailable(other.to_string()),
        }
    }
}

/// The upstream provider. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Upstream {
    settings: Arc<UpstreamSettings>,
    http: reqwest::Client,
    metadata: Arc<RwLock<Option<Arc<ProviderMetadata>>>>,
}

impl Upstream {
    /// The provider of `settings`; metadata is fetched on first use.
    pub(crate) fn new(settings: UpstreamSettings, http: reqwest::Client) -> Self {
        Self {
            settings: Arc::new(settings),
            http,
            metadata: Arc::default(),
        }
    }

    /// The configured issuer.
    pub(crate) fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    /// The provider's metadata (RFC 8414 / OpenID discovery), fetched once and kept.
    pub(crate) async fn metadata(&self) -> Result<Arc<ProviderMetadata>, UpstreamError> {
        if let Some(m) = self.metadata.read().await.clone() {
            return Ok(m);
        }
        let url = format!("{}/.well-known/openid-configuration", self.settings.issuer);
        let metadata: ProviderMetadata = fetch::json(self.http.get(&url))
            .await
            .map_err(|e| UpstreamError::Unavailable(format!("discovery at {url}: {e}")))?;
        if metadata.issuer.trim_end_matches('/') != self.settings.issuer {
            return Err(UpstreamError::Invalid(format!(
                "discovery names issuer `{}`, configured is `{}`",
                metadata.issuer, self.settings.issuer
            )));
        }
        let metadata = Arc::new(metadata);
        *self.metadata.write().await = Some(metadata.clone());
        Ok(metadata)
    }

    /// Where to send the user: the provider's authorization endpoint with muster's client,
    /// `redirect_uri`, `state`, `nonce` and PKCE `challenge`, asking for the extra
    /// `audiences` in the ID token.
    pub(crate) async fn authorization_url(
        &self,
        redirect_uri: &str,
        state: &str,
        nonce: &str,
        challenge: &str,
        audiences: &[String],
    ) -> Result<String, UpstreamError> {
        let metadata = self.metadata().await?;
        let mut url = url::Url::parse(&metadata.authorization_endpoint).map_err(|e| {
            UpstreamError::Invalid(format!("authorization_endpoint is not a URL: {e}"))
        })?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &self.settings.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("scope", &scope_with_audiences(audiences))
                .append_pair("state", state)
                .append_pair("nonce", nonce)
                .append_pair("code_challenge", challenge)
                .append_pair("code_challenge_method", "S256");
            if !self.settings.connector_id.is_empty() {
                query.append_pair("connector_id", &self.settings.connector_id);
            }
        }
        Ok(url.into())
    }

    /// Exchanges the provider's `code` and checks the ID token it comes with.
    pub(crate) async fn exchange_code(
        &self,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
        nonce: &str,
    ) -> Result<(UpstreamTokens, IdTokenClaims), UpstreamError> {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ];
        let tokens = self.token_request(&form).await?;
        let Some(id_token) = &tokens.id_token else {
            return Err(UpstreamError::Invalid(
                "no id_token in the token answer".into(),
            ));
        };
        let claims = id_token::check(
            id_token.expose_secret(),
            &self.settings.issuer,
            &self.settings.client_id,
            Some(nonce),
        )
        .map_err(UpstreamError::Invalid)?;
        Ok((tokens, claims))
    }

    /// Refreshes a sign-in with the provider's refresh token.
    pub(crate) async fn refresh(
        &self,
        refresh_token: &str,
    ) -> Result<UpstreamTokens, UpstreamError> {
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ];
        self.token_request(&form).await
    }

    async fn token_request(&self, form: &[(&str, &str)]) -> Result<UpstreamTokens, UpstreamError> {
        let metadata = self.metadata().await?;
        let mut form: Vec<(&str, &str)> = form.to_vec();
        let secret = self
            .settings
            .client_secret
            .as_ref()
            .map(|s| s.expose_secret().to_owned());
        form.push(("client_id", &self.settings.client_id));
        if let Some(secret) = &secret {
            form.push(("client_secret", secret));
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let request = self
            .http
            .post(&metadata.token_endpoint)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body);
        let answer: TokenResponse = fetch::json(request).await?;
        Ok(UpstreamTokens {
            access_token: SecretString::from(answer.access_token),
            refresh_token: answer
                .refresh_token
                .filter(|t| !t.is_empty())
                .map(SecretString::from),
            id_token: answer
                .id_token
                .filter(|t| !t.is_empty())
                .map(SecretString::from),
            expires_at: answer
                .expires_in
                .map(|s| SystemTime::now() + Duration::from_secs(s)),
        })
    }

    /// Asks the provider whether `access_token` is still good: its userinfo answer.
    pub(crate) async fn userinfo(&self, access_token: &str) -> Result<UserInfo, UpstreamError> {
        let metadata = self.metadata().await?;
        let Some(endpoint) = &metadata.userinfo_endpoint else {
            return Err(UpstreamError::Invalid(
                "the provider has no userinfo_endpoint".into(),
            ));
        };
        let request = self.http.get(endpoint).bearer_auth(access_token);
        Ok(fetch::json(request).await?)
    }
}

/// The scopes of a sign-in at the provider: muster's own, and Dex's cross-client scope
/// `audience:server:client_id:<audience>` per extra audience (each once; blank ones and
/// ones with whitespace, which validation refuses, are left out).
pub(crate) fn scope_with_audiences(audiences: &[String]) -> String {
    let mut scope = UPSTREAM_SCOPES.to_owned();
    let mut seen: Vec<&str> = Vec::new();
    for audience in audiences {
        let audience = audience.as_str();
        if audience.is_empty() || audience.contains(char::is_whitespace) || seen.contains(&audience)
        {
            continue;
        }
        seen.push(audience);
        scope.push_str(" audience:server:client_id:");
        scope.push_str(audience);
    }
    scope
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_audiences_become_cross_client_scopes_once_each() {
        assert_eq!(scope_with_audiences(&[]), UPSTREAM_SCOPES);
        let audiences = [
            "kubernetes",
            "dex-k8s-authenticator",
            "kubernetes",
            "",
            "a b",
        ]
        .map(str::to_owned);
        assert_eq!(
            scope_with_audiences(&audiences),
            format!(
                "{UPSTREAM_SCOPES} audience:server:client_id:kubernetes \
                 audience:server:client_id:dex-k8s-authenticator"
            )
        );
    }
}
