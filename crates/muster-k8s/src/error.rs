//! Errors of muster-k8s.

/// Why a Kubernetes-mode operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The API server could not be reached or answered with an error.
    #[error("Kubernetes API: {0}")]
    Api(#[from] kube::Error),
    /// An object could not be converted between its API and its muster form.
    #[error("{0}")]
    Codec(String),
    /// The API server is reachable but lacks muster's custom resources.
    #[error(
        "the Kubernetes API server does not serve {0}: install muster's CRDs first \
         (`muster crd | kubectl apply -f -`)"
    )]
    CrdsMissing(String),
}
