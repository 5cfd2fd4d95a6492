//! Encryption at rest of what a shared store keeps (`aggregator.oauth.server.encryptionKey`):
//! AES-256-GCM with a random 96-bit nonce per value, the entry's key as associated data so a
//! sealed value cannot be moved to another entry.
//!
//! A sealed value is `v1.` followed by the unpadded URL-safe base64 of nonce and ciphertext.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

/// The prefix of a sealed value.
const SEALED: &str = "v1.";
/// Length of the GCM nonce.
const NONCE_LEN: usize = 12;

/// Why a key or a value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SealError {
    /// The configured key is not 32 bytes in base64 or hex.
    #[error(
        "must be 32 bytes, written as base64 (44 characters, e.g. from `openssl rand -base64 32`) \
         or as 64 hexadecimal digits"
    )]
    BadKey,
    /// A stored value is sealed but no key is configured.
    #[error("the stored entry is encrypted; set aggregator.oauth.server.encryptionKey")]
    NoKey,
    /// A stored value is not sealed although a key is configured.
    #[error("the stored entry is not encrypted although an encryption key is set")]
    NotSealed,
    /// A stored value does not open with the key (another key, tampered, or moved).
    #[error("the stored entry does not decrypt with the configured key")]
    Corrupt,
    /// No random nonce could be drawn, or the value is too large for AES-GCM.
    #[error("cannot encrypt the entry: {0}")]
    Seal(&'static str),
}

/// Seals and opens stored values with one key.
#[derive(Clone)]
pub(crate) struct Sealer {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer([redacted])")
    }
}

impl Sealer {
    /// The sealer of a key written as base64 (standard or URL-safe) or hex.
    pub(crate) fn from_text(text: &str) -> Result<Self, SealError> {
        let text = text.trim();
        let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            hex(text).ok_or(SealError::BadKey)?
        } else {
            STANDARD
                .decode(text)
                .or_else(|_| URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')))
                .map_err(|_| SealError::BadKey)?
        };
        let cipher = Aes256Gcm::new_from_slice(&bytes).map_err(|_| SealError::BadKey)?;
        Ok(Self { cipher })
    }

    /// `plain` sealed for the entry `entry`.
    pub(crate) fn seal(&self, entry: &str, plain: &[u8]) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| SealError::Seal("no random nonce"))?;
        let payload = Payload {
            msg: plain,
            aad: entry.as_bytes(),
        };
        let sealed = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), payload)
            .map_err(|_| SealError::Seal("value too large"))?;
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(format!("{SEALED}{}", URL_SAFE_NO_PAD.encode(out)))
    }

    /// The plain value of `stored`, sealed for `entry`.
    pub(crate) fn open(&self, entry: &str, stored: &str) -> Result<Vec<u8>, SealError> {
        let body = stored.strip_prefix(SEALED).ok_or(SealError::NotSealed)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| SealError::Corrupt)?;
        if bytes.len() < NONCE_LEN {
            return Err(SealError::Corrupt);
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let payload = Payload {
            msg: sealed,
            aad: entry.as_bytes(),
        };
        self.cipher
            .decrypt(Nonce::from_slice(nonce), payload)
            .map_err(|_| SealError::Corrupt)
    }
}

/// Whether a stored value is sealed.
pub(crate) fn is_sealed(stored: &str) -> bool {
    stored.starts_with(SEALED)
}

fn hex(text: &str) -> Option<Vec<u8>> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

    #[test]
    fn sealed_values_open_only_for_their_entry_and_key() {
        let sealer = Sealer::from_text(KEY).unwrap();
        let sealed = sealer.seal("muster:oauth:family:f", b"{\"a\":1}").unwrap();
        assert!(is_sealed(&sealed));
        assert!(!sealed.contains("\"a\""));
        assert_eq!(
            sealer.open("muster:oauth:family:f", &sealed).unwrap(),
            b"{\"a\":1}"
        );
        assert_eq!(
            sealer.open("muster:oauth:family:g", &sealed),
            Err(SealError::Corrupt)
        );
        let other =
            Sealer::from_text("3031323334353637383961626364656630313233343536373839616263646566")
                .unwrap();
        // The same 32 bytes in hex: opens.
        assert!(other.open("muster:oauth:family:f", &sealed).is_ok());
        let different = Sealer::from_text(&STANDARD.encode([7u8; 32])).unwrap();
        assert_eq!(
            different.open("muster:oauth:family:f", &sealed),
            Err(SealError::Corrupt)
        );
        assert_eq!(
            sealer.open("muster:oauth:family:f", "{\"a\":1}"),
            Err(SealError::NotSealed)
        );
        assert_ne!(
            sealer.seal("k", b"x").unwrap(),
            sealer.seal("k", b"x").unwrap(),
            "fresh nonce"
        );
    }

    #[test]
    fn keys_of_the_wrong_size_or_form_are_refused() {
        for bad in ["", "short", &STANDARD.encode([1u8; 16]), &"g".repeat(64)] {
            assert_eq!(
                Sealer::from_text(bad).unwrap_err(),
                SealError::BadKey,
                "{bad}"
            );
        }
    }
}
