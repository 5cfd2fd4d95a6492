//! Random tokens, their digests, PKCE and constant-time comparison.
//!
//! Tokens muster issues are 256 random bits in base64url. Stores keep only their SHA-256
//! digests, so a store dump holds nothing a client could present.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// A new random token: 32 bytes from the operating system, base64url without padding.
///
/// # Panics
///
/// When the operating system has no randomness to give, which leaves nothing safe to do.
pub(crate) fn random_token() -> String {
    let mut bytes = [0u8; 32];
    #[allow(
        clippy::expect_used,
        reason = "without OS randomness no token can be safe"
    )]
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The key a token is stored under: the hex SHA-256 of its text.
pub(crate) fn digest(token: &str) -> String {
    let hash = Sha256::digest(token.as_bytes());
    let mut out = String::with_capacity(64);
    for byte in hash {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The PKCE `S256` challenge of `verifier`.
pub(crate) fn s256_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Whether `verifier` is a valid RFC 7636 verifier (43 to 128 unreserved characters) whose
/// `S256` challenge is `challenge`.
pub(crate) fn pkce_matches(challenge: &str, verifier: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    well_formed && constant_time_eq(&s256_challenge(verifier), challenge)
}

/// Compares two strings in time independent of where they differ.
pub(crate) fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_unique_and_url_safe() {
        let a = random_token();
        assert_ne!(a, random_token());
        assert_eq!(a.len(), 43);
        assert!(
            a.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(digest(&a).len(), 64);
        assert_ne!(digest(&a), a);
    }

    #[test]
    fn pkce_s256() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert_eq!(s256_challenge(verifier), challenge);
        assert!(pkce_matches(challenge, verifier));
        assert!(!pkce_matches(
            challenge,
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXX"
        ));
        assert!(!pkce_matches(challenge, "short"));
    }
}
