//! The DNS-rebinding guard: which `Host` and `Origin` values the MCP endpoints accept.
//!
//! A web page can make a browser send requests to `http://localhost:8090` under a name the
//! attacker controls (DNS rebinding), or from its own origin. The guard refuses both: the
//! `Host` must be a loopback name or a configured one, and an `Origin`, when present, must
//! name such a host too (the MCP transport specification's rule: absent or allowed, else
//! `403`).

use std::borrow::Cow;

use axum::http::{HeaderMap, header};
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
        origin_parts(origin).is_some_and(|(host, port)| self::matches(entries, &host, Some(port)))
    }
}

/// `(lowercase host without brackets, port)` of an `Origin`: `http` or `https` with a host
/// and no userinfo; the opaque origin `null` (sandboxed frames, `file:` pages) has none.
fn origin_parts(origin: &str) -> Option<(String, u16)> {
    let uri = origin.trim().parse::<Uri>().ok()?;
    let (scheme, authority) = (uri.scheme()?, uri.authority()?);
    let default_port = if *scheme == Scheme::HTTP {
        80
    } else if *scheme == Scheme::HTTPS {
        443
    } else {
        return None;
    };
    if authority.as_str().contains('@') {
        return None;
    }
    Some((
        unbracket(authority.host()),
        authority.port_u16().unwrap_or(default_port),
    ))
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

/// `(host, port)` of a plain `name[:port]` value, read in place: a host of letters, digits,
/// dots and dashes, and a port that is a number below 65 536. `None` for anything else
/// (brackets, userinfo, other characters), which [`split`] reads, with the same result for
/// plain values.
fn split_plain(value: &str) -> Option<(&str, Option<u16>)> {
    let (name, port) = match value.rsplit_once(':') {
        Some((name, port)) => {
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (name, Some(port.parse::<u16>().ok()?))
        }
        None => (value, None),
    };
    let plain = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'-';
    (!name.is_empty() && name.bytes().all(plain)).then_some((name, port))
}

/// An [`AllowedHosts`] made ready for checking requests: its entries split once.
#[derive(Debug)]
pub(super) struct HostCheck {
    /// `None`: any host.
    entries: Option<Vec<(String, Option<u16>)>>,
}

impl HostCheck {
    pub(super) fn new(hosts: &AllowedHosts) -> Self {
        Self {
            entries: match hosts {
                AllowedHosts::Any => None,
                AllowedHosts::Only(entries) => {
                    Some(entries.iter().filter_map(|e| split(e)).collect())
                }
            },
        }
    }

    fn allows(entries: &[(String, Option<u16>)], name: &str, port: Option<u16>) -> bool {
        entries.iter().any(|(allowed, allowed_port)| {
            allowed.eq_ignore_ascii_case(name) && allowed_port.is_none_or(|p| Some(p) == port)
        })
    }

    /// Whether a `Host` value is allowed: read in place when it is a plain `name[:port]`
    /// (every client's), through [`split`] otherwise.
    fn allows_host(entries: &[(String, Option<u16>)], host: &str) -> bool {
        match split_plain(host.trim()) {
            Some((name, port)) => Self::allows(entries, name, port),
            None => split(host).is_some_and(|(name, port)| Self::allows(entries, &name, port)),
        }
    }

    /// Why a request was refused: the `403` body; `None` when it is allowed.
    pub(super) fn refusal(&self, headers: &HeaderMap, uri: &Uri) -> Option<String> {
        let entries = self.entries.as_deref()?;
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(Cow::Borrowed)
            .or_else(|| uri.authority().map(|a| Cow::Owned(a.as_str().to_owned())))
            .unwrap_or_default();
        if !Self::allows_host(entries, &host) {
            tracing::warn!(host = %host, "refused request with a disallowed Host header");
            return Some(format!(
                "Forbidden: invalid Host header {}",
                go_quote(&host)
            ));
        }
        for origin in headers.get_all(header::ORIGIN) {
            let origin = String::from_utf8_lossy(origin.as_bytes());
            if !origin_parts(&origin)
                .is_some_and(|(name, port)| Self::allows(entries, &name, Some(port)))
            {
                tracing::warn!(%origin, "refused request with a disallowed Origin header");
                return Some(format!(
                    "Forbidden: invalid Origin header {}",
                    go_quote(&origin)
                ));
            }
        }
        None
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
    fn plain_host_values_read_in_place_as_split_reads_them() {
        let values = [
            "localhost",
            "LocalHost:8090",
            "127.0.0.1:0",
            "127.0.0.1:65535",
            "example.com:08090",
            "a-b.example",
            "[::1]:8090",
            "user@localhost:1",
            "localhost:",
            "localhost:99999",
            "local host",
            ":80",
            "",
        ];
        for value in values {
            if let Some((name, port)) = split_plain(value) {
                assert_eq!(
                    split(value),
                    Some((name.to_ascii_lowercase(), port)),
                    "{value}"
                );
            }
        }
        assert_eq!(
            split_plain("LocalHost:8090"),
            Some(("LocalHost", Some(8090)))
        );
        assert_eq!(split_plain("localhost"), Some(("localhost", None)));
        for other in [
            "[::1]:8090",
            "user@localhost:1",
            "localhost:",
            "localhost:99999",
            ":80",
        ] {
            assert_eq!(split_plain(other), None, "{other}");
        }
    }

    #[test]
    fn refusal_names_the_header() {
        let check = HostCheck::new(&AllowedHosts::default());
        let refusal = |headers: &HeaderMap, uri: &Uri| check.refusal(headers, uri);
        let uri: Uri = "/mcp".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "localhost:8090".parse().unwrap());
        assert_eq!(refusal(&headers, &uri), None);
        headers.insert(header::ORIGIN, "http://localhost:8090".parse().unwrap());
        assert_eq!(refusal(&headers, &uri), None);
        headers.insert(header::ORIGIN, "http://attacker.example".parse().unwrap());
        assert_eq!(
            refusal(&headers, &uri).as_deref(),
            Some(r#"Forbidden: invalid Origin header "http://attacker.example""#)
        );
        headers.insert(header::HOST, "attacker.example".parse().unwrap());
        assert_eq!(
            refusal(&headers, &uri).as_deref(),
            Some(r#"Forbidden: invalid Host header "attacker.example""#)
        );
        let any = HostCheck::new(&AllowedHosts::Any);
        assert_eq!(any.refusal(&headers, &uri), None);
    }
}
