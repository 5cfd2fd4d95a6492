//! The HTTP headers of a remote server: `spec.headers`, then `spec.headersFrom` read from
//! Secrets (an entry wins over a `headers` entry of the same name).

use futures::future::BoxFuture;
use std::collections::HashMap;

use http::{HeaderName, HeaderValue};
use muster_core::resource::mcp_server::RemoteTransport;
use muster_core::secret::{ExposeSecret, Redactor};

use super::failure::{Failure, FailureKind};
use super::options::BackendOptions;
use super::secrets::SecretError;

/// The message of a server with `headersFrom` and no Secret reader.
pub const NO_SECRET_READER: &str =
    "headersFrom needs a Secret reader, which filesystem mode does not have";

fn header_name(name: &str) -> Result<HeaderName, Failure> {
    HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
        Failure::new(
            FailureKind::Permanent,
            format!("invalid header name {name:?}"),
        )
    })
}

/// Every header to send, Secret values marked sensitive and added to `redactor`.
pub(crate) fn resolve_headers<'a>(
    remote: &'a RemoteTransport,
    options: &'a BackendOptions,
    redactor: &'a Redactor,
) -> BoxFuture<'a, Result<HashMap<HeaderName, HeaderValue>, Failure>> {
    Box::pin(resolve_headers_inner(remote, options, redactor))
}

async fn resolve_headers_inner(
    remote: &RemoteTransport,
    options: &BackendOptions,
    redactor: &Redactor,
) -> Result<HashMap<HeaderName, HeaderValue>, Failure> {
    let mut headers = HashMap::new();
    for (name, value) in &remote.headers {
        let value = HeaderValue::from_str(value).map_err(|_| {
            Failure::new(
                FailureKind::Permanent,
                format!("invalid value of header {name:?}"),
            )
        })?;
        headers.insert(header_name(name)?, value);
    }
    if remote.headers_from.is_empty() {
        return Ok(headers);
    }
    let Some(secrets) = &options.secrets else {
        return Err(Failure::new(FailureKind::Permanent, NO_SECRET_READER));
    };
    for entry in &remote.headers_from {
        let source = &entry.value_from;
        let value = secrets
            .resolve(&options.namespace, &source.name, &source.key)
            .await
            .map_err(|e| {
                let kind = match e {
                    SecretError::Refused { .. } => FailureKind::Permanent,
                    _ => FailureKind::Transient,
                };
                Failure::new(kind, format!("header {}: {e}", entry.name))
            })?;
        // The resolver has dropped the trailing newline already: exactly one goes.
        let value = value.expose_secret();
        redactor.add_header_value(value);
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            Failure::new(
                FailureKind::Permanent,
                format!(
                    "header {}: the value in Secret {}/{} key {:?} is not a valid header value",
                    entry.name, options.namespace, source.name, source.key
                ),
            )
        })?;
        value.set_sensitive(true);
        headers.insert(header_name(&entry.name)?, value);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use muster_core::resource::mcp_server::{HeaderFrom, SecretKeySource};

    use super::super::secrets::MemorySecrets;
    use super::*;

    fn remote_with_secret_header() -> RemoteTransport {
        RemoteTransport {
            url: "http://127.0.0.1:1/mcp".to_owned(),
            headers: [
                ("x-tenant".to_owned(), "acme".to_owned()),
                ("authorization".to_owned(), String::new()),
            ]
            .into(),
            headers_from: vec![HeaderFrom {
                name: "Authorization".to_owned(),
                value_from: SecretKeySource {
                    type_: "Secret".to_owned(),
                    name: "token".to_owned(),
                    key: "value".to_owned(),
                },
            }],
            auth: None,
        }
    }

    #[tokio::test]
    async fn without_a_secret_reader_headers_from_fails() {
        let e = resolve_headers(
            &remote_with_secret_header(),
            &BackendOptions::default(),
            &Redactor::new(),
        )
        .await
        .unwrap_err();
        assert_eq!(e.message, NO_SECRET_READER);
        assert_eq!(e.kind, FailureKind::Permanent);
    }

    #[tokio::test]
    async fn secret_values_win_and_are_sensitive() {
        let secrets = MemorySecrets::new().with("team", "token", "value", "Bearer s3cret\n");
        let options = BackendOptions::default()
            .with_namespace("team")
            .with_secrets(Arc::new(secrets));
        let redactor = Redactor::new();
        let headers = resolve_headers(&remote_with_secret_header(), &options, &redactor)
            .await
            .unwrap();
        assert_eq!(redactor.redact("sent Bearer s3cret"), "sent [redacted]");
        let auth = &headers[&HeaderName::from_static("authorization")];
        assert_eq!(auth, "Bearer s3cret");
        assert!(auth.is_sensitive());
        assert_eq!(headers[&HeaderName::from_static("x-tenant")], "acme");
    }

    #[tokio::test]
    async fn exactly_one_trailing_newline_goes() {
        let secrets = MemorySecrets::new().with("team", "token", "value", "Bearer s3cret\n\n");
        let options = BackendOptions::default()
            .with_namespace("team")
            .with_secrets(Arc::new(secrets));
        let e = resolve_headers(&remote_with_secret_header(), &options, &Redactor::new())
            .await
            .unwrap_err();
        assert!(
            e.message.contains("is not a valid header value"),
            "{}",
            e.message
        );
    }

    #[tokio::test]
    async fn a_missing_secret_is_retried() {
        let options = BackendOptions::default().with_secrets(Arc::new(MemorySecrets::new()));
        let e = resolve_headers(&remote_with_secret_header(), &options, &Redactor::new())
            .await
            .unwrap_err();
        assert_eq!(e.kind, FailureKind::Transient);
        assert_eq!(
            e.message,
            "header Authorization: Secret default/token not found"
        );
    }
}
