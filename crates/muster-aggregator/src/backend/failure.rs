//! Why a connection attempt failed, and what follows from it: auth required, a transient
//! failure retried with backoff, or a permanent one.

use std::error::Error as StdError;

/// What a failed attempt means for the lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// The endpoint answered 401: reachable, not a failure.
    AuthRequired,
    /// The same attempt may succeed later (network errors, timeouts, HTTP 4xx/5xx).
    Transient,
    /// Retrying cannot help (TLS errors, a broken configuration, a bad command).
    Permanent,
}

/// A failed connection attempt, as the lifecycle records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// What it means.
    pub(crate) kind: FailureKind,
    /// The HTTP status the endpoint answered with, when it answered.
    pub(crate) http_status: Option<u16>,
    /// What went wrong, without credentials.
    pub(crate) message: String,
}

impl Failure {
    /// A failure of `kind` with `message` and no HTTP status.
    pub(crate) fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            http_status: None,
            message: message.into(),
        }
    }

    /// Sets the HTTP status.
    #[must_use]
    pub(crate) fn with_http_status(mut self, status: Option<u16>) -> Self {
        self.http_status = status;
        self
    }
}

/// What is known about an error, gathered from its chain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FailureFacts {
    /// The HTTP status the endpoint answered with.
    pub(crate) http_status: Option<u16>,
    /// The server asked for authorization (401, with or without a challenge).
    pub(crate) auth_required: bool,
    /// A network-level failure: refused, reset, DNS, timeout, closed, EOF.
    pub(crate) network: bool,
    /// A TLS or certificate failure.
    pub(crate) tls: bool,
}

/// Decides what a failure means. Pure; the table in the tests is the specification.
///
/// 401 means auth required; TLS errors are permanent; an HTTP answer other than 401 (404 of a
/// route not served yet, 5xx of a gateway) and network failures are transient; anything else
/// (a JSON-RPC error to `initialize`, a broken configuration) is permanent.
pub(crate) fn classify(facts: FailureFacts) -> FailureKind {
    if facts.auth_required || facts.http_status == Some(401) {
        return FailureKind::AuthRequired;
    }
    if facts.tls {
        return FailureKind::Permanent;
    }
    match facts.http_status {
        Some(400..=599) => FailureKind::Transient,
        _ if facts.network => FailureKind::Transient,
        _ => FailureKind::Permanent,
    }
}

/// Finds `HTTP <status>` in a message, as transports print failed answers.
pub(crate) fn http_status_in(text: &str) -> Option<u16> {
    let mut rest = text;
    while let Some(pos) = rest.find("HTTP ") {
        let after = &rest[pos + 5..];
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        if digits.len() == 3
            && let Ok(status) = digits.parse::<u16>()
            && (100..=599).contains(&status)
        {
            return Some(status);
        }
        rest = after;
    }
    None
}

const NETWORK_MARKERS: &[&str] = &[
    "connection refused",
    "connection reset",
    "connection closed",
    "connection aborted",
    "broken pipe",
    "timed out",
    "timeout",
    "dns error",
    "failed to lookup address",
    "name or service not known",
    "no route to host",
    "network is unreachable",
    "error sending request",
    "unexpected end of",
    "eof",
    "transport closed",
    "stream ended",
    "tcp connect error",
];

const TLS_MARKERS: &[&str] = &[
    "certificate",
    "x509",
    "tls handshake",
    "invalid peer certificate",
];

/// Gathers [`FailureFacts`] from the messages of an error chain.
pub(crate) fn facts_from_text(messages: &[String]) -> FailureFacts {
    let mut facts = FailureFacts::default();
    for m in messages {
        let lower = m.to_ascii_lowercase();
        if facts.http_status.is_none() {
            facts.http_status = http_status_in(m);
        }
        facts.network |= NETWORK_MARKERS.iter().any(|k| lower.contains(k));
        facts.tls |= TLS_MARKERS.iter().any(|k| lower.contains(k));
        facts.auth_required |= lower.contains("auth required");
    }
    facts
}

/// The messages of an error and its sources, outermost first.
pub(crate) fn chain_messages(error: &(dyn StdError + 'static)) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = Some(error);
    while let Some(e) = current {
        out.push(e.to_string());
        current = e.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_table() {
        use FailureKind::*;
        let f = |http_status, auth_required, network, tls| FailureFacts {
            http_status,
            auth_required,
            network,
            tls,
        };
        let table = [
            (f(Some(401), false, false, false), AuthRequired),
            (f(None, true, false, false), AuthRequired),
            (f(Some(404), false, false, false), Transient),
            (f(Some(403), false, false, false), Transient),
            (f(Some(503), false, false, false), Transient),
            (f(Some(504), false, true, false), Transient),
            (f(Some(429), false, false, false), Transient),
            (f(None, false, true, false), Transient),
            (f(None, false, true, true), Permanent),
            (f(None, false, false, true), Permanent),
            (f(None, false, false, false), Permanent),
            (f(Some(302), false, false, false), Permanent),
        ];
        for (facts, want) in table {
            assert_eq!(classify(facts), want, "{facts:?}");
        }
    }

    #[test]
    fn http_status_in_messages() {
        let table = [
            (
                "unexpected server response: HTTP 404 Not Found: nope",
                Some(404),
            ),
            ("HTTP 503", Some(503)),
            ("Transport fatal HTTP 504, when send", Some(504)),
            ("HTTP/1.1 then HTTP 401 Unauthorized", Some(401)),
            ("HTTP 1234", None),
            ("HTTP 99", None),
            ("no status here", None),
        ];
        for (text, want) in table {
            assert_eq!(http_status_in(text), want, "{text}");
        }
    }

    #[test]
    fn facts_from_messages() {
        let facts = facts_from_text(&[
            "Send message error Transport [x] error: error sending request".to_owned(),
            "tcp connect error: Connection refused (os error 111)".to_owned(),
        ]);
        assert_eq!(
            facts,
            FailureFacts {
                network: true,
                ..FailureFacts::default()
            }
        );
        let facts = facts_from_text(&["invalid peer certificate: UnknownIssuer".to_owned()]);
        assert!(facts.tls);
        let facts = facts_from_text(&["Auth required".to_owned()]);
        assert!(facts.auth_required);
    }
}
