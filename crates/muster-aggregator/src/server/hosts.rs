//! The DNS-rebinding guard: which `Host` and `Origin` values the MCP endpoints accept.
//!
//! A web page can make a browser send requests to `http://localhost:8090` under a name the
//! attacker controls (DNS rebinding), or from its own origin. The guard refuses both: the
//! `Host` must be a loopback name or a configured one, and an `Origin`, when present, must
//! name such a host too (the MCP transport specification's rule: absent or allowed, else
//! `403`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::uri::{Authority, Scheme, Uri};

use muster_gotmpl::strconv::quote as go_quote;

/// The loopback names every guard accepts.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The hosts the MCP endpoints accept in the `Host` header and in `Origin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHosts {
    /// Any host (the guard is off).
    Any,
    /// Only these `host` or `host:port` entries; a host without a port matches any port.
    Only(Vec<String>),
}

impl Default for AllowedHosts {
    /// The loopback names: `localhost`, `127.0.0.1`, `::1`.
    fn default() -> Self {
        Self::loopback()
    }
}

impl AllowedHosts {
    /// The loopback names: `localhost`, `127.0.0.1`, `::1`.
    pub fn loopback() -> Self {
        Self::Only(LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect())
    }

    /// The loopback names plus the configured entries; a `*` entry accepts any host. No
    /// entry at all means loopback only.
    pub fn from_entries<I, S>(entries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
        for entry in entries {
            let entry = entry.into().trim().to_owned();
            if entry == "*" {
                return Self::Any;
            }
            if !entry.is_empty() && !hosts.contains(&entry) {
                hosts.push(entry);
            }
        }
        Self::Only(hosts)
    }

    /// Whether a request with this `Host` value is accepted.
    pub fn allows(&self, host: &str) -> bool {
        let Self::Only(entries) = self else {
            return true;
        };
        split(host).is_some_and(|(name, port)| self::matches(entries, &name, port))
    }

    /// Whether a request with this `Origin` value is accepted: `http` or `https` with an
    /// allowed host. The opaque origin `null` (sandboxed frames, `file:` pages) is refused.
    pub fn allows_origin(&self, origin: &str) -> bool {
        let Self::Only(entries) = self else {
            return true;
        };
        let Ok(uri) = origin.trim().parse::<Uri>() else {
            return false;
        };
        let (Some(scheme), Some(authority)) = (uri.scheme(), uri.authority()) else {
            return false;
        };
        let default_port = if *scheme == Scheme::HTTP {
            80
        } else if *scheme == Scheme::HTTPS {
            443
        } else {
            return false;
        };
        if authority.as_str().contains('@') {
            return false;
        }
        let host = unbracket(authority.host());
        let port = authority.port_u16().unwrap_or(default_port);
        self::matches(entries, &host, Some(port))
    }
}

/// Whether `name` (lowercase, unbracketed) with `port` matches one of `entries`.
fn matches(entries: &[String], name: &str, port: Option<u16>) -> bool {
    entries
        .iter()
        .filter_map(|e| split(e))
        .any(|(allowed, allowed_port)| {
            allowed == name && allowed_port.is_none_or(|p| Some(p) == port)
        })
}

fn unbracket(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// `(lowercase host without brackets, port)` of a `Host` value or an allowed entry.
fn split(value: &str) -> Option<(String, Option<u16>)> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    // A bare IPv6 address (as in the `::1` entry) is not an authority; take it whole.
    if value.matches(':').count() > 1 && !value.starts_with('[') {
        return Some((value.to_ascii_lowercase(), None));
    }
    let authority = Authority::try_from(value).ok()?;
    if authority.as_str().contains('@') {
        return None;
    }
    Some((unbracket(authority.host()), authority.port_u16()))
}

/// Why a request was refused: the `403` body.
fn refusal(headers: &HeaderMap, uri: &Uri, hosts: &AllowedHosts) -> Option<String> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| uri.authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_default();
    if !hosts.allows(&host) {
        tracing::warn!(host, "refused request with a disallowed Host header");
        return Some(format!(
            "Forbidden: invalid Host header {}",
            go_quote(&host)
        ));
    }
    for origin in headers.get_all(header::ORIGIN) {
        let origin = String::from_utf8_lossy(origin.as_bytes());
        if !hosts.allows_origin(&origin) {
            tracing::warn!(%origin, "refused request with a disallowed Origin header");
            return Some(format!(
                "Forbidden: invalid Origin header {}",
                go_quote(&origin)
            ));
        }
    }
    None
}

/// Refuses requests whose `Host` (or, without one, URI authority) or `Origin` is not
/// allowed.
pub(super) async fn guard(
    State(hosts): State<Arc<AllowedHosts>>,
    request: Request,
    next: Next,
) -> Response {
    if *hosts == AllowedHosts::Any {
        return next.run(request).await;
    }
    match refusal(request.headers(), request.uri(), &hosts) {
        None => next.run(request).await,
        Some(body) => (StatusCode::FORBIDDEN, body).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_by_default() {
        let hosts = AllowedHosts::default();
        let table = [
            ("localhost", true),
            ("localhost:8090", true),
            ("LOCALHOST:8090", true),
            ("127.0.0.1:18000", true),
            ("[::1]:8090", true),
            ("[::1]", true),
            ("muster.muster-system.svc:8090", false),
            ("evil.example", false),
            ("attacker.example:8090", false),
            ("127.0.0.2", false),
            ("user@localhost", false),
            ("", false),
        ];
        for (host, allowed) in table {
            assert_eq!(hosts.allows(host), allowed, "{host}");
        }
        assert_eq!(
            AllowedHosts::from_entries(Vec::<String>::new()),
            AllowedHosts::loopback()
        );
        assert_eq!(
            AllowedHosts::from_entries([" ", ""]),
            AllowedHosts::loopback()
        );
    }

    #[test]
    fn configured_entries_add_to_loopback() {
        let hosts = AllowedHosts::from_entries(["example.com", "api.example.com:8443"]);
        let table = [
            ("example.com", true),
            ("example.com:1234", true),
            ("api.example.com:8443", true),
            ("api.example.com:8080", false),
            ("api.example.com", false),
            ("localhost", true),
            ("127.0.0.1:8090", true),
            ("[::1]:8090", true),
            ("evil.example", false),
        ];
        for (host, allowed) in table {
            assert_eq!(hosts.allows(host), allowed, "{host}");
        }
        assert_eq!(AllowedHosts::from_entries(["a", "*"]), AllowedHosts::Any);
        assert!(AllowedHosts::Any.allows("anything:1"));
        assert!(AllowedHosts::Any.allows_origin("null"));
    }

    #[test]
    fn origins() {
        let hosts = AllowedHosts::from_entries(["app.example.com:8443"]);
        let table = [
            ("http://localhost:8090", true),
            ("http://127.0.0.1", true),
            ("https://[::1]:8090", true),
            ("http://LOCALHOST:3000", true),
            ("https://app.example.com:8443", true),
            ("https://app.example.com", false),
            ("http://attacker.example", false),
            ("http://attacker.example:8090", false),
            ("http://localhost.attacker.example", false),
            ("null", false),
            ("file://", false),
            ("chrome-extension://abc", false),
            ("localhost:8090", false),
            ("http://user@localhost", false),
            ("", false),
        ];
        for (origin, allowed) in table {
            assert_eq!(hosts.allows_origin(origin), allowed, "{origin}");
        }
    }

    #[test]
    fn refusal_names_the_header() {
        let hosts = AllowedHosts::default();
        let uri: Uri = "/mcp".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "localhost:8090".parse().unwrap());
        assert_eq!(refusal(&headers, &uri, &hosts), None);
        headers.insert(header::ORIGIN, "http://localhost:8090".parse().unwrap());
        assert_eq!(refusal(&headers, &uri, &hosts), None);
        headers.insert(header::ORIGIN, "http://attacker.example".parse().unwrap());
        assert_eq!(
            refusal(&headers, &uri, &hosts).as_deref(),
            Some(r#"Forbidden: invalid Origin header "http://attacker.example""#)
        );
        headers.insert(header::HOST, "attacker.example".parse().unwrap());
        assert_eq!(
            refusal(&headers, &uri, &hosts).as_deref(),
            Some(r#"Forbidden: invalid Host header "attacker.example""#)
        );
    }
}
