//! The parts of `aggregator.oauth.server` beyond the upstream provider: externally issued
//! tokens muster accepts, where grants are stored, and the bound on sign-in attempts.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::secret::SecretString;

/// One entry of `aggregator.oauth.server.trustedIssuers`: an issuer whose JWTs muster
/// accepts as bearers on `/mcp`, validated against the issuer's JWKS.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct TrustedIssuerConfig {
    /// The issuer: the `iss` claim, compared exactly.
    pub issuer: String,
    /// Where the issuer's signing keys are (default: `jwks_uri` of the issuer's
    /// `/.well-known/openid-configuration`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub jwks_url: String,
    /// Allow a JWKS URL that resolves to a loopback, private or link-local address
    /// (default false: refused, so a configuration cannot be turned into a probe of the
    /// internal network).
    #[serde(rename = "allowPrivateIPJWKS")]
    pub allow_private_ip_jwks: bool,
    /// Audiences accepted in `aud` (default: muster's resource identifier and
    /// `trustedAudiences`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_audiences: Vec<String>,
    /// Claims that must be present with exactly these (string) values.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub allowed_claims: BTreeMap<String, String>,
    /// The claim naming the subject (default `sub`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subject_claim: String,
    /// Accepted values of the JOSE `typ` header; `""` accepts a token without one
    /// (default `JWT`, `at+jwt` and none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_typ_headers: Option<Vec<String>>,
}

/// Where muster keeps grants, clients and pending sign-ins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OAuthStorageType {
    /// In the process (lost on restart, not shared by replicas).
    #[default]
    Memory,
    /// In Valkey or Redis.
    Valkey,
}

/// `aggregator.oauth.server.storage`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct OAuthStorageConfig {
    /// `memory` (default) or `valkey`.
    #[serde(rename = "type")]
    pub kind: OAuthStorageType,
    /// The Valkey/Redis connection, for `type: valkey`.
    pub valkey: ValkeyConfig,
}

/// `aggregator.oauth.server.storage.valkey`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ValkeyConfig {
    /// `host:port` or a `redis://` URL.
    pub url: String,
    /// Password (never serialized).
    #[serde(skip_serializing)]
    #[schemars(with = "Option<String>")]
    pub password: Option<SecretString>,
    /// File holding the password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
    /// Prefix of every key (default `muster:`).
    pub key_prefix: String,
    /// Database number (default 0).
    pub db: u32,
}

impl Default for ValkeyConfig {
    fn default() -> Self {
        Self {
            url: String::new(),
            password: None,
            password_file: None,
            key_prefix: "muster:".to_owned(),
            db: 0,
        }
    }
}

/// `aggregator.oauth.server.rateLimit`: how many requests one client address may make to
/// the sign-in endpoints, and how many bearers it may present that fail validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct AuthRateLimitConfig {
    /// Sustained rate per client address, per minute (default 120).
    pub per_minute: u32,
    /// Burst above the sustained rate (default 30).
    pub burst: u32,
}

impl Default for AuthRateLimitConfig {
    fn default() -> Self {
        Self {
            per_minute: 120,
            burst: 30,
        }
    }
}
