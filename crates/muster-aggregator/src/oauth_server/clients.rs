//! OAuth clients: dynamic registration (RFC 7591) and Client ID Metadata Documents (an
//! `https` URL as `client_id`, MCP 2025-11-25), with the redirect URI rules both follow.

use serde::Deserialize;

use super::error::OAuthError;
use super::fetch;
use super::jwks::refuse_private;
use super::settings::Settings;
use super::store::Client;

/// Most redirect URIs one client may register.
const MAX_REDIRECT_URIS: usize = 16;
/// Longest redirect URI accepted.
const MAX_URI_LEN: usize = 2048;

/// A registration request (the fields muster reads).
#[derive(Debug, Deserialize)]
pub(crate) struct Registration {
    #[serde(default)]
    pub(crate) redirect_uris: Vec<String>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    pub(crate) client_name: Option<String>,
    #[serde(default)]
    pub(crate) grant_types: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) response_types: Option<Vec<String>>,
}

/// Checks every redirect URI of a client against the settings.
pub(crate) fn check_redirect_uris(settings: &Settings, uris: &[String]) -> Result<(), OAuthError> {
    let invalid = |d: String| {
        OAuthError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            d,
        )
    };
    if uris.is_empty() {
        return Err(invalid(
            "redirect_uris: at least one redirect URI is required".into(),
        ));
    }
    if uris.len() > MAX_REDIRECT_URIS {
        return Err(invalid(format!(
            "redirect_uris: at most {MAX_REDIRECT_URIS} are accepted"
        )));
    }
    for uri in uris {
        if uri.len() > MAX_URI_LEN {
            return Err(invalid(format!(
                "redirect_uris: longer than {MAX_URI_LEN} characters"
            )));
        }
        let parsed = url::Url::parse(uri)
            .map_err(|e| invalid(format!("redirect_uris: `{uri}` is not a URL: {e}")))?;
        if parsed.fragment().is_some() {
            return Err(invalid(format!(
                "redirect_uris: `{uri}` must not have a fragment"
            )));
        }
        match parsed.scheme() {
            "https" => {}
            "http" if is_loopback(&parsed) => {
                if !settings.allow_localhost_redirects {
                    return Err(invalid(format!(
                        "redirect_uris: `{uri}`: loopback redirect URIs are not allowed \
                         (allowLocalhostRedirectURIs)"
                    )));
                }
            }
            "http" => {
                return Err(invalid(format!(
                    "redirect_uris: `{uri}`: http is accepted for loopback hosts only"
                )));
            }
            scheme => {
                if !settings.trusted_schemes.iter().any(|s| s == scheme) {
                    return Err(invalid(format!(
                        "redirect_uris: `{uri}`: the scheme `{scheme}` is not in \
                         trustedPublicRegistrationSchemes"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Whether the URL's host is `localhost` or a loopback address.
fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Whether `redirect_uri` is one of `client`'s, exactly, or a loopback URI differing only in
/// its port (RFC 8252 §7.3: native apps pick a free port at sign-in).
pub(crate) fn redirect_allowed(client: &Client, redirect_uri: &str) -> bool {
    if client.redirect_uris.iter().any(|r| r == redirect_uri) {
        return true;
    }
    let Ok(wanted) = url::Url::parse(redirect_uri) else {
        return false;
    };
    if wanted.scheme() != "http" || !is_loopback(&wanted) {
        return false;
    }
    client.redirect_uris.iter().any(|r| {
        url::Url::parse(r).is_ok_and(|mut registered| {
            is_loopback(&registered)
                && registered.host() == wanted.host()
                && registered.set_port(wanted.port()).is_ok()
                && registered == wanted
        })
    })
}

/// Whether `client_id` names a Client ID Metadata Document.
pub(crate) fn is_metadata_url(client_id: &str) -> bool {
    client_id.starts_with("https://")
}

#[derive(Deserialize)]
struct MetadataDocument {
    client_id: String,
    #[serde(default)]
    redirect_uris: Vec<String>,
}

/// The client a metadata document at `url` describes: fetched (public addresses only),
/// its `client_id` must equal the URL, and its redirect URIs obey the rules.
pub(crate) async fn fetch_metadata_client(
    settings: &Settings,
    http: &reqwest::Client,
    url: &str,
) -> Result<Client, OAuthError> {
    let invalid =
        |d: String| OAuthError::new(axum::http::StatusCode::BAD_REQUEST, "invalid_client", d);
    refuse_private(url)
        .await
        .map_err(|e| invalid(format!("client metadata document: {e}")))?;
    let document: MetadataDocument = fetch::json(http.get(url))
        .await
        .map_err(|e| invalid(format!("client metadata document {url}: {e}")))?;
    if document.client_id != url {
        return Err(invalid(format!(
            "client metadata document {url} names another client_id"
        )));
    }
    check_redirect_uris(settings, &document.redirect_uris)?;
    Ok(Client {
        id: url.to_owned(),
        secret_digest: None,
        redirect_uris: document.redirect_uris,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_ports_may_differ() {
        let client = Client {
            id: "c".into(),
            secret_digest: None,
            redirect_uris: vec!["http://127.0.0.1:1234/cb".into(), "https://app/cb".into()],
        };
        assert!(redirect_allowed(&client, "http://127.0.0.1:1234/cb"));
        assert!(redirect_allowed(&client, "http://127.0.0.1:5555/cb"));
        assert!(!redirect_allowed(&client, "http://127.0.0.1:5555/other"));
        assert!(!redirect_allowed(&client, "http://localhost:5555/cb"));
        assert!(redirect_allowed(&client, "https://app/cb"));
        assert!(!redirect_allowed(&client, "https://app/cb2"));
    }
}
