//! Externally issued JWTs (portals, agent gateways, a workload identity provider) accepted
//! as bearers: the issuer must be configured in `trustedIssuers`, the signature must verify
//! against the issuer's JWKS with an asymmetric algorithm, and `iss`, `aud`, `exp`, `nbf`,
//! the `typ` header and the required claims must hold.

use std::collections::HashMap;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use muster_core::config::TrustedIssuerConfig;
use muster_core::tool::CallerIdentity;
use serde_json::Value;

use super::jwks::Jwks;
use super::principal;

/// Clock skew tolerated on `exp` and `nbf`, in seconds.
const LEEWAY_SECONDS: u64 = 30;

/// Algorithms accepted: asymmetric only (an `HS*` token would be "signed" with a public
/// key, `none` is not signed at all).
const ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The configured trusted issuers, by issuer.
#[derive(Debug, Default)]
pub(crate) struct TrustedIssuers {
    issuers: HashMap<String, Issuer>,
}

#[derive(Debug)]
struct Issuer {
    config: TrustedIssuerConfig,
    audiences: Vec<String>,
    jwks: Jwks,
}

impl TrustedIssuers {
    /// The issuers of `configs`; tokens must be for one of `default_audiences` unless an
    /// issuer lists its own.
    pub(crate) fn new(
        configs: &[TrustedIssuerConfig],
        default_audiences: &[String],
        http: &reqwest::Client,
    ) -> Self {
        let issuers = configs
            .iter()
            .map(|c| {
                let issuer = c.issuer.trim_end_matches('/').to_owned();
                let url = if c.jwks_url.is_empty() {
                    format!("{issuer}/.well-known/jwks.json")
                } else {
                    c.jwks_url.clone()
                };
                let audiences = if c.allowed_audiences.is_empty() {
                    default_audiences.to_vec()
                } else {
                    c.allowed_audiences.clone()
                };
                let entry = Issuer {
                    config: c.clone(),
                    audiences,
                    jwks: Jwks::new(url, c.allow_private_ip_jwks, http.clone()),
                };
                (issuer, entry)
            })
            .collect();
        Self { issuers }
    }

    /// The caller of `token` when it is a valid JWT of a trusted issuer; `Ok(None)` when it
    /// is not a JWT at all; `Err` when it is one but does not pass.
    pub(crate) async fn validate(&self, token: &str) -> Result<Option<CallerIdentity>, String> {
        if token.split('.').count() != 3 {
            return Ok(None);
        }
        let Some(unverified_iss) = unverified_issuer(token) else {
            return Ok(None);
        };
        let Some(issuer) = self.issuers.get(unverified_iss.trim_end_matches('/')) else {
            return Err("the token's issuer is not trusted".to_owned());
        };
        issuer.validate(token).await.map(Some)
    }
}

impl Issuer {
    async fn validate(&self, token: &str) -> Result<CallerIdentity, String> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| format!("the token's header is not acceptable: {e}"))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(format!("the algorithm {:?} is not accepted", header.alg));
        }
        let typ = header.typ.clone().unwrap_or_default();
        let accepted = match &self.config.accepted_typ_headers {
            Some(list) => list.iter().any(|t| t.eq_ignore_ascii_case(&typ)),
            None => ["", "JWT", "at+jwt"]
                .iter()
                .any(|t| t.eq_ignore_ascii_case(&typ)),
        };
        if !accepted {
            return Err(format!("the token type `{typ}` is not accepted"));
        }
        let keys = self.jwks.keys(header.kid.as_deref()).await?;
        let jwk = match &header.kid {
            Some(kid) => keys.find(kid),
            None if keys.keys.len() == 1 => keys.keys.first(),
            None => None,
        }
        .ok_or_else(|| "no key of the issuer matches the token".to_owned())?;
        let key =
            DecodingKey::from_jwk(jwk).map_err(|e| format!("the issuer's key is unusable: {e}"))?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.set_issuer(&[self.config.issuer.as_str()]);
        validation.set_audience(&self.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, &key, &validation)
            .map_err(|e| format!("the token is not valid: {e}"))?;
        let claims = data.claims;
        for (name, wanted) in &self.config.allowed_claims {
            if !claim_has(claims.get(name), wanted) {
                return Err(format!(
                    "the claim `{name}` does not have the required value"
                ));
            }
        }
        let subject_claim = match self.config.subject_claim.as_str() {
            "" => "sub",
            c => c,
        };
        let subject = claims
            .get(subject_claim)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("the token has no `{subject_claim}` claim"))?;
        let audience = claims
            .get("azp")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| match claims.get("aud") {
                Some(Value::String(a)) => Some(a.clone()),
                Some(Value::Array(list)) => list.first().and_then(Value::as_str).map(str::to_owned),
                _ => None,
            });
        let email = claims
            .get("email")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut identity = principal::identity(&self.config.issuer, subject, email, audience);
        identity.actor = actor_chain(claims.get("act"));
        Ok(principal::with_bearer(identity, token))
    }
}

/// The `iss` of a JWT's payload, read without checking anything.
fn unverified_issuer(token: &str) -> Option<String> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Map<String, Value> = serde_json::from_slice(&bytes).ok()?;
    claims.get("iss")?.as_str().map(str::to_owned)
}

/// Whether the claim equals `wanted`, or is a list holding it.
fn claim_has(value: Option<&Value>, wanted: &str) -> bool {
    match value {
        Some(Value::String(s)) => s == wanted,
        Some(Value::Array(list)) => list.iter().any(|v| v.as_str() == Some(wanted)),
        Some(Value::Bool(b)) => b.to_string() == wanted,
        Some(Value::Number(n)) => n.to_string() == wanted,
        _ => false,
    }
}

/// The subjects of a nested `act` claim (RFC 8693 §4.1), outermost first, at most 8.
fn actor_chain(mut act: Option<&Value>) -> Vec<String> {
    let mut chain = Vec::new();
    while let Some(Value::Object(actor)) = act {
        if chain.len() == 8 {
            break;
        }
        if let Some(sub) = actor.get("sub").and_then(Value::as_str) {
            chain.push(sub.to_owned());
        }
        act = actor.get("act");
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actors_and_claims() {
        let act = serde_json::json!({"sub": "agent", "act": {"sub": "gateway"}});
        assert_eq!(actor_chain(Some(&act)), ["agent", "gateway"]);
        assert!(actor_chain(None).is_empty());
        assert!(claim_has(Some(&serde_json::json!(["a", "b"])), "b"));
        assert!(!claim_has(Some(&serde_json::json!("a")), "b"));
        assert!(!claim_has(None, "b"));
    }
}
