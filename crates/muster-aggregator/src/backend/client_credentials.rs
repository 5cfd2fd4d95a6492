//! The OAuth clients a remote server's spec names in Secrets:
//! `spec.auth.tokenExchange.clientCredentialsSecretRef` and
//! `spec.auth.authorizationServer.clientCredentialsSecretRef`.
//!
//! They are read through the same [`SecretResolver`](super::SecretResolver) as `headersFrom`
//! (so with its rules: protected Secrets and types, the admission policy in force, one
//! trailing newline dropped), each time the server connects and each time a sign-in uses
//! them, so a rotated Secret takes effect at the next use. A missing Secret or key fails the
//! connect and is retried on the reconnect backoff until it exists.

use std::fmt;

use muster_core::resource::mcp_server::{ClientCredentialsSecretRef, RemoteTransport};
use muster_core::secret::{ExposeSecret, Redactor, SecretString};

use super::failure::{Failure, FailureKind};
use super::headers::NO_SECRET_READER;
use super::options::BackendOptions;
use super::secrets::SecretError;

/// The field of the token exchange's client.
pub(crate) const TOKEN_EXCHANGE_FIELD: &str = "spec.auth.tokenExchange.clientCredentialsSecretRef";
/// The field of the pinned authorization server's client.
pub(crate) const AUTHORIZATION_SERVER_FIELD: &str =
    "spec.auth.authorizationServer.clientCredentialsSecretRef";

/// An OAuth client registered out of band: its id and secret, read from a Secret.
#[derive(Clone)]
pub(crate) struct ClientCredentials {
    /// The client id.
    pub(crate) client_id: String,
    /// The client secret.
    pub(crate) client_secret: SecretString,
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// Every client-credentials reference of `remote` with its field path: the token
/// exchange's (when enabled) and the pinned authorization server's.
pub(crate) fn client_credential_refs(
    remote: &RemoteTransport,
) -> Vec<(&'static str, &ClientCredentialsSecretRef)> {
    let Some(auth) = &remote.auth else {
        return Vec::new();
    };
    let exchange = auth
        .token_exchange
        .as_ref()
        .filter(|t| t.enabled)
        .and_then(|t| t.client_credentials_secret_ref.as_ref())
        .map(|r| (TOKEN_EXCHANGE_FIELD, r));
    let pinned = auth
        .authorization_server
        .as_ref()
        .and_then(|a| a.client_credentials_secret_ref.as_ref())
        .map(|r| (AUTHORIZATION_SERVER_FIELD, r));
    exchange.into_iter().chain(pinned).collect()
}

/// The pinned authorization server's client of `remote`, read now; `None` when it names
/// none.
///
/// # Errors
///
/// As [`read_client_credentials`].
pub(crate) async fn pinned_client(
    remote: &RemoteTransport,
    options: &BackendOptions,
) -> Result<Option<ClientCredentials>, Failure> {
    let reference = remote
        .auth
        .as_ref()
        .and_then(|a| a.authorization_server.as_ref())
        .and_then(|a| a.client_credentials_secret_ref.as_ref());
    match reference {
        Some(r) => read_client_credentials(AUTHORIZATION_SERVER_FIELD, r, options)
            .await
            .map(Some),
        None => Ok(None),
    }
}

/// Reads the client `reference` (at `field`) names. The Secret's namespace defaults to the
/// server's (`options.namespace`); another namespace is read with a warning in the log, for
/// auditing (the validation rules allow it only for a server in muster's own namespace).
///
/// # Errors
///
/// A missing Secret or key and a failing API are [`FailureKind::Transient`] (retried on the
/// backoff); a refused Secret and a missing Secret reader are permanent. Messages name the
/// field and the Secret, never a value.
pub(crate) async fn read_client_credentials(
    field: &str,
    reference: &ClientCredentialsSecretRef,
    options: &BackendOptions,
) -> Result<ClientCredentials, Failure> {
    let Some(secrets) = &options.secrets else {
        return Err(Failure::new(
            FailureKind::Permanent,
            format!("{field}: {NO_SECRET_READER}"),
        ));
    };
    let namespace = reference
        .namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(&options.namespace);
    if namespace != options.namespace {
        tracing::warn!(
            %field,
            secret = %format!("{namespace}/{}", reference.name),
            server_namespace = %options.namespace,
            "reading client credentials from a Secret of another namespace"
        );
    }
    let read = |key: String| async move {
        secrets
            .resolve(namespace, &reference.name, &key)
            .await
            .map_err(|e| {
                let kind = match e {
                    SecretError::Refused { .. } => FailureKind::Permanent,
                    _ => FailureKind::Transient,
                };
                Failure::new(kind, format!("{field}: {e}"))
            })
    };
    let client_id = read(reference.client_id_key().to_owned()).await?;
    let client_secret = read(reference.client_secret_key().to_owned()).await?;
    if client_id.expose_secret().is_empty() {
        return Err(Failure::new(
            FailureKind::Transient,
            format!(
                "{field}: Secret {namespace}/{} key {:?} is empty",
                reference.name,
                reference.client_id_key()
            ),
        ));
    }
    Ok(ClientCredentials {
        client_id: client_id.expose_secret().to_owned(),
        client_secret,
    })
}

/// Loads every client `remote` names, as a connect does: a server whose client Secret is
/// missing does not connect. Each secret goes into `redactor`.
pub(crate) async fn check_client_credentials(
    remote: &RemoteTransport,
    options: &BackendOptions,
    redactor: &Redactor,
) -> Result<(), Failure> {
    for (field, reference) in client_credential_refs(remote) {
        let credentials = read_client_credentials(field, reference, options).await?;
        redactor.add(credentials.client_secret.expose_secret());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use muster_core::resource::mcp_server::{AuthType, AuthorizationServer, McpServerAuth};

    use super::super::secrets::MemorySecrets;
    use super::*;

    fn pinned(reference: ClientCredentialsSecretRef) -> RemoteTransport {
        RemoteTransport {
            url: "https://mcp.example.com/mcp".to_owned(),
            headers: Default::default(),
            headers_from: Vec::new(),
            auth: Some(McpServerAuth {
                type_: Some(AuthType::Oauth),
                authorization_server: Some(AuthorizationServer {
                    issuer: "https://github.com/login/oauth".to_owned(),
                    client_credentials_secret_ref: Some(reference),
                    ..AuthorizationServer::default()
                }),
                ..McpServerAuth::default()
            }),
        }
    }

    fn reference(name: &str) -> ClientCredentialsSecretRef {
        ClientCredentialsSecretRef {
            name: name.to_owned(),
            ..ClientCredentialsSecretRef::default()
        }
    }

    #[tokio::test]
    async fn default_keys_in_the_servers_namespace_one_newline_dropped() {
        let secrets = MemorySecrets::new()
            .with("team", "gh", "client-id", "Iv1.abc\n")
            .with("team", "gh", "client-secret", "s3cret-value\r\n\n");
        let options = BackendOptions::default()
            .with_namespace("team")
            .with_secrets(Arc::new(secrets));
        let got = pinned_client(&pinned(reference("gh")), &options)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.client_id, "Iv1.abc");
        // Exactly one newline goes, however many the value ends with.
        assert_eq!(got.client_secret.expose_secret(), "s3cret-value\r\n");
        assert!(!format!("{got:?}").contains("s3cret"));
    }

    #[tokio::test]
    async fn named_keys_and_namespace() {
        let secrets = MemorySecrets::new()
            .with("vault", "gh", "id", "cid")
            .with("vault", "gh", "secret", "csecret");
        let options = BackendOptions::default().with_secrets(Arc::new(secrets));
        let r = ClientCredentialsSecretRef {
            name: "gh".to_owned(),
            namespace: Some("vault".to_owned()),
            client_id_key: Some("id".to_owned()),
            client_secret_key: Some("secret".to_owned()),
        };
        let got = read_client_credentials(AUTHORIZATION_SERVER_FIELD, &r, &options)
            .await
            .unwrap();
        assert_eq!(got.client_id, "cid");
        assert_eq!(got.client_secret.expose_secret(), "csecret");
    }

    #[tokio::test]
    async fn a_missing_secret_or_key_is_retried_and_named() {
        let options = BackendOptions::default().with_secrets(Arc::new(MemorySecrets::new().with(
            "default",
            "half",
            "client-id",
            "cid",
        )));
        let e = check_client_credentials(&pinned(reference("gone")), &options, &Redactor::new())
            .await
            .unwrap_err();
        assert_eq!(e.kind, FailureKind::Transient);
        assert_eq!(
            e.message,
            "spec.auth.authorizationServer.clientCredentialsSecretRef: Secret default/gone not found"
        );
        let e = check_client_credentials(&pinned(reference("half")), &options, &Redactor::new())
            .await
            .unwrap_err();
        assert_eq!(e.kind, FailureKind::Transient);
        assert!(
            e.message.contains("has no key \"client-secret\""),
            "{}",
            e.message
        );
    }

    #[tokio::test]
    async fn without_a_secret_reader_it_is_permanent() {
        let e = check_client_credentials(
            &pinned(reference("gh")),
            &BackendOptions::default(),
            &Redactor::new(),
        )
        .await
        .unwrap_err();
        assert_eq!(e.kind, FailureKind::Permanent);
        assert!(e.message.starts_with(AUTHORIZATION_SERVER_FIELD));
    }

    #[tokio::test]
    async fn a_loaded_secret_is_redacted() {
        let options = BackendOptions::default().with_secrets(Arc::new(
            MemorySecrets::new()
                .with("default", "gh", "client-id", "cid")
                .with("default", "gh", "client-secret", "very-secret-value"),
        ));
        let redactor = Redactor::new();
        check_client_credentials(&pinned(reference("gh")), &options, &redactor)
            .await
            .unwrap();
        assert_eq!(redactor.redact("x very-secret-value"), "x [redacted]");
    }
}
