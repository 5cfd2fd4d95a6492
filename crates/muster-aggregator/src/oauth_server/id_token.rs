//! The checks of an ID token muster received from its provider's token endpoint.
//!
//! The token comes straight from the provider over TLS, which authenticates it (OpenID
//! Connect Core §3.1.3.7): muster checks issuer, audience, expiry and nonce, and reads the
//! claims it keeps.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;

use super::secrets::constant_time_eq;

/// The claims muster keeps from an ID token.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct IdTokenClaims {
    /// The issuer.
    pub(crate) iss: String,
    /// The subject.
    pub(crate) sub: String,
    /// The email, when given.
    #[serde(default)]
    pub(crate) email: Option<String>,
    #[serde(default)]
    aud: serde_json::Value,
    #[serde(default)]
    exp: Option<i64>,
    #[serde(default)]
    nonce: Option<String>,
}

/// The claims of `token` when it is an ID token of `issuer` for `client_id`, unexpired,
/// carrying `nonce`; else why not.
pub(crate) fn check(
    token: &str,
    issuer: &str,
    client_id: &str,
    nonce: Option<&str>,
) -> Result<IdTokenClaims, String> {
    let payload = token
        .split('.')
        .nth(1)
        .ok_or_else(|| "the ID token is not a JWT".to_owned())?;
    let bytes = URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| "the ID token's payload is not base64url".to_owned())?;
    let claims: IdTokenClaims = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the ID token's claims are unreadable: {e}"))?;
    if claims.iss.trim_end_matches('/') != issuer {
        return Err(format!("the ID token's issuer is `{}`", claims.iss));
    }
    let audience_ok = match &claims.aud {
        serde_json::Value::String(a) => a == client_id,
        serde_json::Value::Array(list) => list.iter().any(|a| a.as_str() == Some(client_id)),
        _ => false,
    };
    if !audience_ok {
        return Err("the ID token is not for muster's client id".into());
    }
    if let Some(exp) = claims.exp
        && exp < chrono::Utc::now().timestamp() - 30
    {
        return Err("the ID token has expired".into());
    }
    if let Some(expected) = nonce
        && !claims
            .nonce
            .as_deref()
            .is_some_and(|n| constant_time_eq(n, expected))
    {
        return Err("the ID token's nonce does not match the sign-in".into());
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(claims: serde_json::Value) -> String {
        format!(
            "eyJhbGciOiJub25lIn0.{}.x",
            URL_SAFE_NO_PAD.encode(claims.to_string())
        )
    }

    #[test]
    fn checks() {
        let exp = chrono::Utc::now().timestamp() + 60;
        let good = token(serde_json::json!({
            "iss": "https://idp", "sub": "u", "aud": "muster", "exp": exp, "nonce": "n1"
        }));
        assert_eq!(
            check(&good, "https://idp", "muster", Some("n1"))
                .unwrap()
                .sub,
            "u"
        );
        assert!(check(&good, "https://other", "muster", Some("n1")).is_err());
        assert!(check(&good, "https://idp", "other", Some("n1")).is_err());
        assert!(check(&good, "https://idp", "muster", Some("n2")).is_err());
        let old = token(serde_json::json!({
            "iss": "https://idp", "sub": "u", "aud": ["muster"], "exp": 1000
        }));
        assert!(
            check(&old, "https://idp", "muster", None)
                .unwrap_err()
                .contains("expired")
        );
        assert!(check("garbage", "https://idp", "muster", None).is_err());
    }
}
