//! The headers the lean path reads of a `POST`, found in one pass over the request's
//! headers instead of a lookup (a hash and a probe) for each.

use axum::http::{HeaderMap, HeaderValue, header};

use super::super::sessions::SESSION_HEADER;
use super::stateless::PROTOCOL_VERSION_HEADER;

/// What a request's headers tell the lean path. Of a header given more than once, the
/// first value counts, as a lookup finds it; `Accept` counts with every value.
#[derive(Debug, Default)]
pub(super) struct RequestHeaders<'a> {
    /// Whether `Accept` names `application/json`.
    accepts_json: bool,
    /// Whether `Accept` names `text/event-stream`.
    accepts_sse: bool,
    content_type: Option<&'a HeaderValue>,
    content_length: Option<&'a HeaderValue>,
    session: Option<&'a HeaderValue>,
    protocol_version: Option<&'a HeaderValue>,
}

impl<'a> RequestHeaders<'a> {
    /// The headers of `headers` the lean path reads.
    pub(super) fn of(headers: &'a HeaderMap) -> Self {
        let mut found = Self::default();
        for (name, value) in headers {
            if name == header::ACCEPT {
                let (json, sse) = accepted(value);
                found.accepts_json |= json;
                found.accepts_sse |= sse;
            } else if name == header::CONTENT_TYPE {
                found.content_type.get_or_insert(value);
            } else if name == header::CONTENT_LENGTH {
                found.content_length.get_or_insert(value);
            } else if name == SESSION_HEADER {
                found.session.get_or_insert(value);
            } else if name == PROTOCOL_VERSION_HEADER {
                found.protocol_version.get_or_insert(value);
            }
        }
        found
    }

    /// Whether `Accept` names both `application/json` and `text/event-stream`.
    pub(super) fn accepts_json_and_sse(&self) -> bool {
        self.accepts_json && self.accepts_sse
    }

    /// Whether `Accept` names `text/event-stream`.
    pub(super) fn accepts_sse(&self) -> bool {
        self.accepts_sse
    }

    /// Whether `Content-Type` is `application/json` (with or without parameters).
    pub(super) fn is_json(&self) -> bool {
        self.content_type.is_some_and(|v| {
            // What clients send, recognized without taking it apart.
            v.as_bytes() == b"application/json"
                || v.to_str().is_ok_and(|v| {
                    v.split(';')
                        .next()
                        .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
                })
        })
    }

    /// `Content-Length`, when it is a number.
    pub(super) fn content_length(&self) -> Option<usize> {
        self.content_length?.to_str().ok()?.trim().parse().ok()
    }

    /// `Mcp-Session-Id`, when it is present, visible ASCII and not empty.
    pub(super) fn session(&self) -> Option<&'a str> {
        self.session
            .and_then(|v| v.to_str().ok())
            .filter(|s| !s.is_empty())
    }

    /// Whether `MCP-Protocol-Version` is absent or one of `versions`.
    pub(super) fn version_is_absent_or_in(&self, versions: &[&str]) -> bool {
        match self.protocol_version {
            None => true,
            Some(value) => value.to_str().is_ok_and(|v| versions.contains(&v)),
        }
    }
}

/// Whether one `Accept` value names `application/json`, and whether it names
/// `text/event-stream`.
fn accepted(value: &HeaderValue) -> (bool, bool) {
    // What MCP clients send, recognized without taking it apart.
    if value.as_bytes() == b"application/json, text/event-stream" {
        return (true, true);
    }
    let Ok(value) = value.to_str() else {
        return (false, false);
    };
    let (mut json, mut sse) = (false, false);
    for item in value.split(',') {
        let essence = item.split(';').next().unwrap_or("").trim();
        json |= essence.eq_ignore_ascii_case("application/json");
        sse |= essence.eq_ignore_ascii_case("text/event-stream");
    }
    (json, sse)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn one_pass_finds_what_lookups_find() {
        let map = headers(&[
            ("content-type", "application/json; charset=utf-8"),
            ("accept", "text/event-stream"),
            ("mcp-session-id", "s-1"),
            ("content-length", " 42 "),
            ("accept", "application/json;q=0.9"),
            ("mcp-protocol-version", "2025-06-18"),
            ("content-type", "text/plain"),
            ("mcp-session-id", "s-2"),
        ]);
        let found = RequestHeaders::of(&map);
        assert!(found.accepts_json_and_sse() && found.accepts_sse());
        assert!(found.is_json(), "the first Content-Type counts");
        assert_eq!(found.content_length(), Some(42));
        assert_eq!(found.session(), Some("s-1"));
        assert!(found.version_is_absent_or_in(&["2025-06-18"]));
        assert!(!found.version_is_absent_or_in(&["2025-11-25"]));
    }

    #[test]
    fn absent_or_odd_headers_read_as_absent() {
        let none = HeaderMap::new();
        let found = RequestHeaders::of(&none);
        assert!(!found.accepts_json_and_sse() && !found.accepts_sse() && !found.is_json());
        assert_eq!((found.content_length(), found.session()), (None, None));
        assert!(found.version_is_absent_or_in(&[]));
        let map = headers(&[
            ("accept", "application/json"),
            ("content-length", "x"),
            ("mcp-session-id", ""),
        ]);
        let found = RequestHeaders::of(&map);
        assert!(!found.accepts_json_and_sse());
        assert_eq!((found.content_length(), found.session()), (None, None));
    }

    #[test]
    fn accept_needs_both_types() {
        let accepts = |values: &[&'static str]| {
            let pairs: Vec<_> = values.iter().map(|v| ("accept", *v)).collect();
            RequestHeaders::of(&headers(&pairs)).accepts_json_and_sse()
        };
        assert!(!accepts(&["application/json"]));
        assert!(accepts(&["application/json, text/event-stream"]));
        // Taken apart when written otherwise: order, case, parameters, several values.
        assert!(accepts(&["text/event-stream, application/json"]));
        assert!(accepts(&["Application/JSON;q=0.9 ,TEXT/EVENT-STREAM"]));
        assert!(accepts(&["application/json", "text/event-stream"]));
        assert!(!accepts(&["application/json, text/event-streams"]));
        assert!(!accepts(&["application/json, text/html"]));
        assert!(!accepts(&["application/jsonl, text/event-stream"]));
        assert!(!accepts(&[]));
    }

    #[test]
    fn json_bodies_are_recognized_however_their_type_is_written() {
        let is = |value: &'static str| {
            RequestHeaders::of(&headers(&[("content-type", value)])).is_json()
        };
        assert!(is("application/json"));
        assert!(is("application/json; charset=utf-8"));
        assert!(is(" Application/JSON "));
        assert!(!is("application/jsonl"));
        assert!(!is("text/plain"));
    }
}
