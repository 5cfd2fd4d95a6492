//! The headers of a POST to a server: its session's, shared by every request of the
//! session, and the request's own, without copying the session's for each request.

use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};

/// The headers of one POST: the session's, then the request's own. A header the request
/// [sets](Self::insert) replaces the session's of that name; one it
/// [adds](Self::append) goes after them, as on a copy of the session's headers.
#[derive(Debug, Clone, Default)]
pub(crate) struct PostHeaders {
    session: Arc<HeaderMap>,
    own: HeaderMap,
    /// The names the request sets: the session's values of these are not sent.
    replaced: Vec<HeaderName>,
}

impl PostHeaders {
    /// The session's headers alone.
    pub(crate) fn new(session: Arc<HeaderMap>) -> Self {
        Self {
            session,
            own: HeaderMap::new(),
            replaced: Vec::new(),
        }
    }

    /// Sets `name` to `value`, in place of every value it had.
    pub(crate) fn insert(&mut self, name: HeaderName, value: HeaderValue) {
        if !self.replaced.contains(&name) {
            self.replaced.push(name.clone());
        }
        self.own.insert(name, value);
    }

    /// Adds `value` to the values of `name`.
    pub(crate) fn append(&mut self, name: HeaderName, value: HeaderValue) {
        self.own.append(name, value);
    }

    /// How many headers there are, about (the session's replaced ones counted too).
    pub(crate) fn len_hint(&self) -> usize {
        self.session.len() + self.own.len()
    }

    /// Every header sent, the session's first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&HeaderName, &HeaderValue)> {
        self.session
            .iter()
            .filter(|(name, _)| !self.replaced.contains(name))
            .chain(self.own.iter())
    }

    /// The headers as one map.
    pub(crate) fn into_map(self) -> HeaderMap {
        let mut map = Arc::unwrap_or_clone(self.session);
        for name in &self.replaced {
            map.remove(name);
        }
        for (name, value) in &self.own {
            map.append(name.clone(), value.clone());
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &'static str, value: &'static str) -> (HeaderName, HeaderValue) {
        (
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        )
    }

    /// The headers as sorted `name: value` lines, values of one name in order.
    fn lines<'a>(headers: impl Iterator<Item = (&'a HeaderName, &'a HeaderValue)>) -> Vec<String> {
        let mut lines: Vec<String> = headers
            .map(|(n, v)| format!("{n}: {}", v.to_str().unwrap()))
            .collect();
        lines.sort_by(|a, b| a.split(':').next().cmp(&b.split(':').next()));
        lines
    }

    #[test]
    fn the_request_s_headers_replace_or_follow_the_session_s_as_on_a_copy() {
        let mut session = HeaderMap::new();
        for (name, value) in [
            header("mcp-session-id", "s1"),
            header("authorization", "Bearer old"),
            header("x-multi", "a"),
            header("x-multi", "b"),
            header("accept", "application/json, text/event-stream"),
        ] {
            session.append(name, value);
        }
        let session = Arc::new(session);
        let mut copy = (*session).clone();
        let mut post = PostHeaders::new(session);
        for (name, value) in [header("authorization", "Bearer new"), header("x-set", "1")] {
            copy.insert(name.clone(), value.clone());
            post.insert(name, value);
        }
        for (name, value) in [header("x-multi", "c"), header("x-extra", "e")] {
            copy.append(name.clone(), value.clone());
            post.append(name, value);
        }
        assert_eq!(lines(post.iter()), lines(copy.iter()));
        assert_eq!(post.len_hint(), copy.len() + 1);
        assert_eq!(lines(post.into_map().iter()), lines(copy.iter()));
    }

    #[test]
    fn without_headers_of_its_own_a_request_sends_the_session_s() {
        let mut session = HeaderMap::new();
        session.insert(
            HeaderName::from_static("mcp-session-id"),
            HeaderValue::from_static("s1"),
        );
        let post = PostHeaders::new(Arc::new(session.clone()));
        assert_eq!(lines(post.iter()), lines(session.iter()));
        assert_eq!(post.into_map(), session);
    }
}
