//! The DNS-rebinding guard: which `Host` values the MCP endpoints accept.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::uri::Authority;

use crate::naming::go_quote;

/// The hosts the MCP endpoints accept in the `Host` header.
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
        Self::Only(vec!["localhost".into(), "127.0.0.1".into(), "::1".into()])
    }

    /// From configured entries; a `*` entry (or no entry at all) accepts any host.
    pub fn from_entries<I, S>(entries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let entries: Vec<String> = entries
            .into_iter()
            .map(Into::into)
            .map(|e| e.trim().to_owned())
            .filter(|e| !e.is_empty())
            .collect();
        if entries.is_empty() || entries.iter().any(|e| e == "*") {
            Self::Any
        } else {
            Self::Only(entries)
        }
    }

    /// Whether a request with this `Host` value is accepted.
    pub fn allows(&self, host: &str) -> bool {
        let Self::Only(entries) = self else {
            return true;
        };
        let Some((name, port)) = split(host) else {
            return false;
        };
        entries
            .iter()
            .filter_map(|e| split(e))
            .any(|(allowed, allowed_port)| {
                allowed == name && allowed_port.is_none_or(|p| Some(p) == port)
            })
    }
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
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    Some((host, authority.port_u16()))
}

/// Refuses requests whose `Host` (or, without one, URI authority) is not allowed.
pub(super) async fn guard(
    State(hosts): State<AllowedHosts>,
    request: Request,
    next: Next,
) -> Response {
    if hosts == AllowedHosts::Any {
        return next.run(request).await;
    }
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_default();
    if hosts.allows(&host) {
        return next.run(request).await;
    }
    tracing::warn!(host, "refused request with a disallowed Host header");
    (
        StatusCode::FORBIDDEN,
        format!("Forbidden: invalid Host header {}", go_quote(&host)),
    )
        .into_response()
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
            ("127.0.0.2", false),
            ("", false),
        ];
        for (host, allowed) in table {
            assert_eq!(hosts.allows(host), allowed, "{host}");
        }
    }

    #[test]
    fn configured_entries() {
        let hosts = AllowedHosts::from_entries(["example.com", "api.example.com:8443"]);
        let table = [
            ("example.com", true),
            ("example.com:1234", true),
            ("api.example.com:8443", true),
            ("api.example.com:8080", false),
            ("api.example.com", false),
            ("localhost", false),
        ];
        for (host, allowed) in table {
            assert_eq!(hosts.allows(host), allowed, "{host}");
        }
        assert_eq!(AllowedHosts::from_entries(["a", "*"]), AllowedHosts::Any);
        assert_eq!(
            AllowedHosts::from_entries(Vec::<String>::new()),
            AllowedHosts::Any
        );
        assert!(AllowedHosts::Any.allows("anything:1"));
    }
}
