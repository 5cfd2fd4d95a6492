//! A certificate verifier that loads the system's CA store on the first TLS handshake, not
//! when a client is built: a muster whose servers all speak plain HTTP never parses the
//! store (some milliseconds of CPU at start and its certificates kept in memory).

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// The platform's verifier (system CA store, plus `extra` roots), built when first needed.
pub(super) struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
    extra: Vec<CertificateDer<'static>>,
    verifier: OnceLock<Result<rustls_platform_verifier::Verifier, rustls::Error>>,
}

impl std::fmt::Debug for LazyPlatformVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyPlatformVerifier")
            .field("extra_roots", &self.extra.len())
            .field("loaded", &self.verifier.get().is_some())
            .finish()
    }
}

impl LazyPlatformVerifier {
    /// A verifier trusting the system's CA certificates and `extra`, loaded on first use.
    pub(super) fn new(provider: Arc<CryptoProvider>, extra: Vec<CertificateDer<'static>>) -> Self {
        Self {
            provider,
            extra,
            verifier: OnceLock::new(),
        }
    }

    /// Whether the CA store has been loaded.
    #[cfg(test)]
    pub(super) fn is_loaded(&self) -> bool {
        self.verifier.get().is_some()
    }

    /// The platform's verifier, loading it on the first call; the error it could not be
    /// built with (no CA certificate on the system, an unusable extra root) otherwise.
    fn verifier(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        self.verifier
            .get_or_init(|| {
                let provider = Arc::clone(&self.provider);
                let built = if self.extra.is_empty() {
                    rustls_platform_verifier::Verifier::new(provider)
                } else {
                    rustls_platform_verifier::Verifier::new_with_extra_roots(
                        self.extra.iter().cloned(),
                        provider,
                    )
                };
                // The handshake's error then says what failed, not only how.
                built.map_err(|e| {
                    rustls::Error::General(format!("cannot load the trusted CA certificates ({e})"))
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls13_signature(message, cert, dss)
    }

    /// What the platform's verifier supports: the provider's signature algorithms, known
    /// without loading the store (the client hello is built before any certificate arrives).
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::aws_lc_rs::default_provider())
    }

    #[test]
    fn the_store_loads_on_the_first_verification_not_before() {
        let verifier = LazyPlatformVerifier::new(provider(), Vec::new());
        assert_eq!(
            verifier.supported_verify_schemes(),
            provider()
                .signature_verification_algorithms
                .supported_schemes()
        );
        assert!(!verifier.is_loaded(), "the client hello needs no store");
        let name = ServerName::try_from("example.test").expect("a DNS name");
        let garbage = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x01]);
        let verdict = verifier.verify_server_cert(&garbage, &[], &name, &[], UnixTime::now());
        assert!(verdict.is_err(), "not a certificate: {verdict:?}");
        assert!(verifier.is_loaded());
    }

    #[test]
    fn an_unusable_trust_store_is_named_in_the_error() {
        let garbage = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x01]);
        let verifier = LazyPlatformVerifier::new(provider(), vec![garbage.clone()]);
        let name = ServerName::try_from("example.test").expect("a DNS name");
        let verdict = verifier.verify_server_cert(&garbage, &[], &name, &[], UnixTime::now());
        let error = verdict.expect_err("no certificate verifies").to_string();
        assert!(
            error.contains("cannot load the trusted CA certificates"),
            "{error}"
        );
    }

    #[test]
    fn it_supports_what_the_platform_verifier_supports() {
        let Ok(eager) = rustls_platform_verifier::Verifier::new(provider()) else {
            return; // no system CA store on this host: nothing to compare with
        };
        let lazy = LazyPlatformVerifier::new(provider(), Vec::new());
        assert_eq!(
            lazy.supported_verify_schemes(),
            eager.supported_verify_schemes()
        );
    }
}
