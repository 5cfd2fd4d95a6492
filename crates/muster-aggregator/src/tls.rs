//! CA certificates trusted in addition to the system's, for every outgoing HTTPS
//! connection: remote MCP servers, OpenID providers, JWKS (`--extra-ca-file`).

use std::path::Path;
use std::sync::Arc;

/// A PEM bundle of extra CA certificates. Cheap to clone; empty by default.
#[derive(Clone, Default)]
pub struct ExtraRoots(Arc<Vec<reqwest::Certificate>>);

impl std::fmt::Debug for ExtraRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ExtraRoots({} certificates)", self.0.len())
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
        let certs =
            reqwest::Certificate::from_pem_bundle(&bytes).map_err(|e| parse(e.to_string()))?;
        if certs.is_empty() {
            return Err(parse("no CERTIFICATE block".to_owned()));
        }
        Ok(Self(Arc::new(certs)))
    }

    /// How many certificates there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `builder` trusting these certificates too.
    pub fn apply(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        if self.0.is_empty() {
            builder
        } else {
            builder.tls_certs_merge(self.0.iter().cloned())
        }
    }
}
