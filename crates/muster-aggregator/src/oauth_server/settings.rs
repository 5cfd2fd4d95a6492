//! The OAuth server's settings, checked and with their defaults applied, built from
//! `aggregator.oauth.server`.

use std::path::Path;
use std::time::Duration;

use muster_core::config::{AuthRateLimitConfig, OAuthServerConfig, TrustedIssuerConfig};
use muster_core::secret::{ExposeSecret as _, SecretString};

use super::error::OAuthSetupError;

/// How long muster's access tokens live.
pub(crate) const ACCESS_TOKEN_LIFETIME: Duration = Duration::from_secs(30 * 60);
/// How long an authorization code, and a pending sign-in at the provider, stays usable.
pub(crate) const CODE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// The scopes muster asks its upstream provider for.
pub(crate) const UPSTREAM_SCOPES: &str = "openid profile email groups offline_access";

/// Settings of the OAuth server.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// muster's issuer identifier and the base of its endpoints, without a trailing `/`.
    pub(crate) base_url: String,
    /// What tokens are bound to (RFC 8707).
    pub(crate) resource: String,
    /// The upstream provider.
    pub(crate) upstream: UpstreamSettings,
    /// How long a refresh-token family lives without use.
    pub(crate) session_duration: Duration,
    /// Audiences accepted in externally issued tokens, besides per-issuer lists.
    pub(crate) trusted_audiences: Vec<String>,
    /// Web origins that get CORS headers on the OAuth endpoints.
    pub(crate) allowed_origins: Vec<String>,
    /// Issuers whose JWTs are accepted.
    pub(crate) trusted_issuers: Vec<TrustedIssuerConfig>,
    /// The token `POST /oauth/register` requires, if any.
    pub(crate) registration_token: Option<SecretString>,
    /// Whether registration without the token is allowed.
    pub(crate) allow_public_registration: bool,
    /// Custom redirect URI schemes accepted at registration.
    pub(crate) trusted_schemes: Vec<String>,
    /// Whether `https` client ids name Client ID Metadata Documents.
    pub(crate) enable_cimd: bool,
    /// Whether loopback `http` redirect URIs are accepted.
    pub(crate) allow_localhost_redirects: bool,
    /// The bound on attempts per address.
    pub(crate) rate_limit: AuthRateLimitConfig,
}

/// The upstream OpenID provider.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamSettings {
    /// Its issuer URL.
    pub(crate) issuer: String,
    /// muster's client id there.
    pub(crate) client_id: String,
    /// muster's client secret there.
    pub(crate) client_secret: Option<SecretString>,
    /// The Dex connector to use.
    pub(crate) connector_id: String,
}

impl Settings {
    /// The settings of `config`, reading `*File` secrets relative to the working directory.
    ///
    /// # Errors
    ///
    /// When a required setting is missing or a secret file cannot be read.
    pub(crate) fn from_config(config: &OAuthServerConfig) -> Result<Self, OAuthSetupError> {
        if let Some(problem) = config.problems().into_iter().next() {
            let key = problem
                .path
                .strip_prefix("aggregator.oauth.server.")
                .unwrap_or(&problem.path)
                .to_owned();
            return Err(OAuthSetupError::Setting {
                key,
                rule: problem.rule,
            });
        }
        let base_url = config.base_url.trim_end_matches('/').to_owned();
        let resource = match config.resource_identifier.trim() {
            "" => base_url.clone(),
            r => r.trim_end_matches('/').to_owned(),
        };
        let session_duration = muster_gotmpl::duration::parse_std(config.session_duration.trim())
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| OAuthSetupError::Setting {
                key: "sessionDuration".to_owned(),
                rule: format!(
                    "must be a positive duration such as `720h`, got `{}`",
                    config.session_duration
                ),
            })?;
        let client_secret = secret(
            config.dex.client_secret.as_ref(),
            config.dex.client_secret_file.as_deref(),
            "dex.clientSecretFile",
        )?;
        let registration_token = secret(
            config.registration_token.as_ref(),
            config.registration_token_file.as_deref(),
            "registrationTokenFile",
        )?;
        Ok(Self {
            base_url,
            resource,
            upstream: UpstreamSettings {
                issuer: config.dex.issuer_url.trim_end_matches('/').to_owned(),
                client_id: config.dex.client_id.clone(),
                client_secret,
                connector_id: config.dex.connector_id.clone(),
            },
            session_duration,
            trusted_audiences: config.trusted_audiences.clone(),
            allowed_origins: config.allowed_origins.clone(),
            trusted_issuers: config.trusted_issuers.clone(),
            registration_token,
            allow_public_registration: config.allow_public_client_registration,
            trusted_schemes: config
                .trusted_public_registration_schemes
                .iter()
                .map(|s| s.trim_end_matches(':').to_ascii_lowercase())
                .collect(),
            enable_cimd: config.enable_cimd,
            allow_localhost_redirects: config.allow_localhost_redirect_uris,
            rate_limit: config.rate_limit,
        })
    }

    /// The URL of an endpoint of muster's, e.g. `endpoint("/oauth/token")`.
    pub(crate) fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Whether `requested` (an RFC 8707 `resource` parameter) names muster: the resource
    /// identifier itself or a path under it.
    pub(crate) fn is_own_resource(&self, requested: &str) -> bool {
        let requested = requested.trim_end_matches('/');
        requested == self.resource
            || requested
                .strip_prefix(self.resource.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

/// The inline secret, else the trimmed content of its file, else none.
pub(crate) fn secret(
    inline: Option<&SecretString>,
    file: Option<&Path>,
    key: &str,
) -> Result<Option<SecretString>, OAuthSetupError> {
    if let Some(value) = inline.filter(|v| !v.expose_secret().is_empty()) {
        return Ok(Some(value.clone()));
    }
    let Some(path) = file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).map_err(|source| OAuthSetupError::SecretFile {
        key: key.to_owned(),
        path: path.display().to_string(),
        source,
    })?;
    Ok(Some(SecretString::from(text.trim().to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: serde_json::Value) -> OAuthServerConfig {
        let mut base = serde_json::json!({
            "enabled": true,
            "baseUrl": "https://muster.example.com/",
            "dex": { "issuerUrl": "https://dex.example.com", "clientId": "muster" }
        });
        if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn defaults() {
        let s = Settings::from_config(&config(serde_json::json!({}))).unwrap();
        assert_eq!(s.base_url, "https://muster.example.com");
        assert_eq!(s.resource, "https://muster.example.com");
        assert_eq!(s.session_duration, Duration::from_secs(720 * 3600));
        assert!(s.enable_cimd && s.allow_localhost_redirects && !s.allow_public_registration);
        assert!(s.is_own_resource("https://muster.example.com/mcp"));
        assert!(s.is_own_resource("https://muster.example.com/"));
        assert!(!s.is_own_resource("https://muster.example.com.evil"));
        assert!(!s.is_own_resource("https://other.example.com"));
    }

    #[test]
    fn secrets_from_files_and_bad_settings() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        std::fs::write(&file, "s3cret\n").unwrap();
        let s = Settings::from_config(&config(serde_json::json!({
            "dex": { "issuerUrl": "https://dex.example.com", "clientId": "muster",
                     "clientSecretFile": file }
        })))
        .unwrap();
        assert_eq!(s.upstream.client_secret.unwrap().expose_secret(), "s3cret");
        let err = Settings::from_config(&config(serde_json::json!({ "sessionDuration": "soon" })))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("aggregator.oauth.server.sessionDuration")
        );
        let err = Settings::from_config(&config(serde_json::json!({ "baseUrl": "" }))).unwrap_err();
        assert!(err.to_string().contains("baseUrl"));
    }
}
