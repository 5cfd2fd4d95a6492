//! CA certificates trusted in addition to the system's, for every outgoing HTTPS
//! connection: remote MCP servers, OpenID providers, JWKS (`--extra-ca-file`).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

mod lazy_verifier;

/// A PEM bundle of extra CA certificates, and the TLS configuration of the clients that trust
/// them next to the system's. Cheap to clone (clones share the configuration); empty by
/// default.
#[derive(Clone, Default)]
pub struct ExtraRoots(Arc<Roots>);

#[derive(Default)]
struct Roots {
    certs: Vec<CertificateDer<'static>>,
    /// Built on first use and shared by every client. Its verifier loads the system's CA
    /// store on the first TLS handshake (some milliseconds of CPU, paid once, and never by
    /// a muster that only speaks plain HTTP).
    tls: OnceLock<Option<rustls::ClientConfig>>,
}

impl std::fmt::Debug for ExtraRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ExtraRoots({} certificates)", self.0.certs.len())
    }
}

/// Why a CA file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ExtraRootsError {
    /// The file could not be read.
    #[error("cannot read CA file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file holds no usable PEM certificate.
    #[error("CA file {path} holds no PEM certificate: {reason}")]
    Parse {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

impl ExtraRoots {
    /// The certificates of the PEM file at `path` (one or more `CERTIFICATE` blocks).
    ///
    /// # Errors
    ///
    /// When the file cannot be read or holds no certificate.
    pub fn from_pem_file(path: &Path) -> Result<Self, ExtraRootsError> {
        let bytes = std::fs::read(path).map_err(|source| ExtraRootsError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let parse = |reason: String| ExtraRootsError::Parse {
            path: path.display().to_string(),
            reason,
        };
        let certs = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| parse(e.to_string()))?;
        if certs.is_empty() {
            return Err(parse("no CERTIFICATE block".to_owned()));
        }
        Ok(Self(Arc::new(Roots {
            certs,
            tls: OnceLock::new(),
        })))
    }

    /// How many certificates there are.
    pub fn len(&self) -> usize {
        self.0.certs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.certs.is_empty()
    }

    /// `builder` trusting the system's CA certificates and these, through the TLS
    /// configuration these roots share. When that configuration cannot be built, `builder`
    /// is left to build its own, so its `build()` reports why.
    pub fn apply(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        match self.tls_config() {
            Some(config) => builder.tls_backend_preconfigured(config.clone()),
            None if self.is_empty() => builder,
            None => builder.tls_certs_merge(
                self.0
                    .certs
                    .iter()
                    .filter_map(|der| reqwest::Certificate::from_der(der).ok()),
            ),
        }
    }

    /// The shared TLS configuration, built on first use; `None` when it cannot be built.
    fn tls_config(&self) -> Option<&rustls::ClientConfig> {
        self.0
            .tls
            .get_or_init(|| client_config(&self.0.certs).ok())
            .as_ref()
    }
}

/// What reqwest builds for a client by default, with `extra` trusted too: the platform's
/// verifier (loaded on the first handshake), the process's default crypto provider (else
/// aws-lc-rs), TLS 1.2 and 1.3, ALPN `h2` then `http/1.1`.
fn client_config(extra: &[CertificateDer<'static>]) -> Result<rustls::ClientConfig, String> {
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let verifier = lazy_verifier::LazyPlatformVerifier::new(Arc::clone(&provider), extra.to_vec());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_share_one_configuration_built_on_first_use() {
        let roots = ExtraRoots::default();
        assert!(roots.0.tls.get().is_none());
        let clone = roots.clone();
        for _ in 0..3 {
            clone
                .apply(reqwest::Client::builder())
                .build()
                .expect("a client builds on the shared configuration");
        }
        let config = roots
            .0
            .tls
            .get()
            .expect("built by the clone's first client");
        let config = config.as_ref().expect("the platform verifier loads");
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn a_file_without_certificates_is_refused_naming_it() {
        let dir = std::env::temp_dir().join(format!("muster-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("empty.pem");
        std::fs::write(&file, "no PEM in here\n").expect("write");
        let error = ExtraRoots::from_pem_file(&file).expect_err("refused");
        assert!(
            error.to_string().contains("empty.pem") && error.to_string().contains("no PEM"),
            "{error}"
        );
        let missing = ExtraRoots::from_pem_file(&dir.join("missing.pem")).expect_err("refused");
        assert!(
            missing.to_string().contains("cannot read CA file"),
            "{missing}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
