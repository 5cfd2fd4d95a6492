//! Why a connection attempt failed, and what follows from it: auth required, a transient
//! failure retried with backoff, or a permanent one.

use std::error::Error as StdError;

#[cfg(feature = "http-client")]
use rmcp::transport::streamable_http_client::{HttpStatusError, StreamableHttpError};

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

/// The `HTTP <status>` at the start of the text of rmcp's `UnexpectedServerResponse`, the
/// only place its streamable-HTTP client keeps the status of a 4xx answer.
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

/// Whether an I/O error of `kind` is the network failing (the same attempt may succeed later).
fn network_kind(kind: std::io::ErrorKind) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        kind,
        ConnectionRefused
            | ConnectionReset
            | ConnectionAborted
            | NotConnected
            | BrokenPipe
            | TimedOut
            | UnexpectedEof
            | AddrNotAvailable
            | HostUnreachable
            | NetworkUnreachable
            | NetworkDown
            | Interrupted
    )
}

/// An error and its sources, outermost first, looking through the wrappers that keep their
/// cause out of `source()` (rmcp's `StreamableHttpError::Client`, custom `std::io::Error`s).
pub(crate) fn chain<'a>(error: &'a (dyn StdError + 'static)) -> Vec<&'a (dyn StdError + 'static)> {
    let mut out = Vec::new();
    let mut pending = vec![error];
    while let Some(e) = pending.pop() {
        if out.len() >= 32 {
            break;
        }
        out.push(e);
        #[cfg(feature = "http-client")]
        if let Some(StreamableHttpError::Client(inner)) =
            e.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            pending.push(inner);
            continue;
        }
        #[cfg(feature = "http-client")]
        if let Some(StreamableHttpError::Client(inner)) =
            e.downcast_ref::<StreamableHttpError<std::io::Error>>()
        {
            pending.push(inner);
            continue;
        }
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            pending.push(inner);
            continue;
        }
        if let Some(source) = e.source() {
            pending.push(source);
        }
    }
    out
}

/// `error` and its causes as one line, `: `-separated; a cause whose text the line already
/// holds (an error that prints its source too) is said once.
pub(crate) fn with_causes(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Gathers [`FailureFacts`] from an error and its sources, by their types.
pub(crate) fn facts_of(error: &(dyn StdError + 'static)) -> FailureFacts {
    let mut facts = FailureFacts::default();
    for e in chain(error) {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            facts.network |= network_kind(io.kind());
        }
        if e.is::<tokio::time::error::Elapsed>() {
            facts.network = true;
        }
        #[cfg(feature = "http-client")]
        {
            if let Some(status) = e.downcast_ref::<HttpStatusError>() {
                facts.http_status = facts.http_status.or(Some(status.status));
            }
            if let Some(http) = e.downcast_ref::<StreamableHttpError<std::io::Error>>() {
                streamable_facts(http, &mut facts);
            }
            if let Some(http) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                streamable_facts(http, &mut facts);
            }
            if let Some(r) = e.downcast_ref::<reqwest::Error>() {
                facts.network |= r.is_connect() || r.is_timeout() || r.is_request() || r.is_body();
                facts.http_status = facts.http_status.or(r.status().map(|s| s.as_u16()));
            }
            if e.is::<rustls::Error>() {
                facts.tls = true;
            }
        }
    }
    facts
}

#[cfg(feature = "http-client")]
fn streamable_facts<E: StdError + Send + Sync + 'static>(
    error: &StreamableHttpError<E>,
    facts: &mut FailureFacts,
) {
    match error {
        StreamableHttpError::AuthRequired(_) => facts.auth_required = true,
        StreamableHttpError::UnexpectedServerResponse(text) => {
            facts.http_status = facts.http_status.or(http_status_in(text));
        }
        // `#[error(transparent)]`: the status is not among the sources.
        StreamableHttpError::HttpStatus(status) => {
            facts.http_status = facts.http_status.or(Some(status.status));
        }
        StreamableHttpError::SessionExpired => {
            facts.http_status = facts.http_status.or(Some(404));
        }
        StreamableHttpError::UnexpectedEndOfStream
        | StreamableHttpError::TransportChannelClosed
        | StreamableHttpError::ControlRequestTimeout
        | StreamableHttpError::SessionRecoveryTimeout => facts.network = true,
        _ => {}
    }
}

/// What a person reads about a failed attempt: the cause in plain words (the innermost error
/// of the chain, where the network or TLS failed) and what to check, never the names of the
/// Rust types it travelled through.
pub(crate) fn describe(error: &(dyn StdError + 'static), facts: FailureFacts) -> String {
    let errors = chain(error);
    #[cfg(feature = "http-client")]
    let url = errors
        .iter()
        .find_map(|e| e.downcast_ref::<reqwest::Error>())
        .and_then(|r| r.url().map(|u| u.as_str().to_owned()));
    #[cfg(not(feature = "http-client"))]
    let url: Option<String> = None;
    let innermost = errors.last().map(|e| e.to_string()).unwrap_or_default();
    // The first error that is not rmcp's wrapper naming the transport's Rust type.
    let outermost = errors
        .iter()
        .find(|e| !e.is::<rmcp::transport::DynamicTransportError>())
        .map_or_else(|| innermost.clone(), |e| e.to_string());
    let at = url.map(|u| format!(" {u}")).unwrap_or_default();
    if facts.tls {
        return format!(
            "TLS with{at} failed: {innermost}; check the server's certificate, or trust its \
             CA with extra CA certificates"
        );
    }
    if let Some(status) = facts.http_status {
        return if outermost.contains(&format!("HTTP {status}")) {
            format!("the server{at} answered: {outermost}")
        } else {
            format!("the server{at} answered HTTP {status}: {outermost}")
        };
    }
    if facts.network {
        return format!(
            "cannot reach the server{at}: {innermost}; check that the server is running and \
             that its address is right"
        );
    }
    outermost
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

    #[cfg(feature = "http-client")]
    #[test]
    fn facts_come_from_the_types_of_the_chain() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let facts = facts_of(&StreamableHttpError::<std::io::Error>::Client(refused));
        assert_eq!(
            facts,
            FailureFacts {
                network: true,
                ..FailureFacts::default()
            }
        );
        let not_found = StreamableHttpError::<std::io::Error>::UnexpectedServerResponse(
            "HTTP 404 Not Found: nope".into(),
        );
        assert_eq!(facts_of(&not_found).http_status, Some(404));
        let busy =
            StreamableHttpError::<std::io::Error>::HttpStatus(HttpStatusError::new(503, None));
        assert_eq!(facts_of(&busy).http_status, Some(503));
        // A message that merely mentions a timeout is not a network failure.
        let text = std::io::Error::other("the tool's timeout argument is invalid");
        assert_eq!(facts_of(&text), FailureFacts::default());
        let wrapped = std::io::Error::other(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert!(facts_of(&wrapped).network);
    }

    #[cfg(feature = "http-client")]
    #[test]
    fn descriptions_say_what_to_check() {
        let refused = StreamableHttpError::<std::io::Error>::Client(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "Connection refused (os error 111)",
        ));
        let text = describe(&refused, facts_of(&refused));
        assert_eq!(
            text,
            "cannot reach the server: Connection refused (os error 111); check that the server is \
             running and that its address is right"
        );
    }
}
