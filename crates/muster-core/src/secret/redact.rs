//! [`Redactor`]: replaces known secret values in text with [`REDACTED`].

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;
use url::Url;

use crate::resource::mcp_server::{McpServerSpec, Transport};

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Values shorter than this are not redacted: a one-, two- or three-character value (`1`,
/// `on`, `dev`) is too short to be a credential and so common that cutting it out of every
/// message would make messages unreadable.
pub const MIN_SECRET_LEN: usize = 4;

/// The compiled form of a set of values.
#[derive(Default)]
struct Needles {
    values: BTreeSet<String>,
    matcher: Option<AhoCorasick>,
}

impl Needles {
    fn rebuild(&mut self) {
        self.matcher = if self.values.is_empty() {
            None
        } else {
            // Leftmost-longest: of two overlapping values the longer one is cut out whole.
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&self.values)
                .ok()
        };
    }

    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.matcher {
            Some(m) if m.is_match(text) => {
                Cow::Owned(m.replace_all(text, &vec![REDACTED; self.values.len()]))
            }
            _ => Cow::Borrowed(text),
        }
    }
}

/// A set of secret values and the means to cut them out of text. Cheap to clone; clones
/// share the set, so a value added later (a header read from a Secret at connect time) is
/// redacted by every clone.
///
/// ```
/// use muster_core::resource::mcp_server::McpServerSpec;
/// use muster_core::secret::Redactor;
///
/// let spec = McpServerSpec::streamable_http("https://robot:hunter22@api.example.com/mcp?token=abc123");
/// let redactor = Redactor::for_spec(&spec);
/// assert_eq!(
///     redactor.redact("error sending request for url (https://robot:hunter22@api.example.com/mcp?token=abc123)"),
///     "error sending request for url (https://[redacted]:[redacted]@api.example.com/mcp?[redacted])",
/// );
/// ```
#[derive(Clone, Default)]
pub struct Redactor {
    needles: Arc<RwLock<Needles>>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("values", &self.len())
            .finish()
    }
}

impl Redactor {
    /// A redactor that knows no value yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A redactor of `values` (each shorter than [`MIN_SECRET_LEN`] is ignored).
    pub fn from_values<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let redactor = Self::new();
        redactor.extend(values);
        redactor
    }

    /// The secret values of an MCPServer spec: every `env` value of a stdio server; every
    /// `headers` value of a remote one (and its credential after an auth scheme such as
    /// `Bearer`); the user, password and query of its URL ([`url_secrets`]).
    pub fn for_spec(spec: &McpServerSpec) -> Self {
        let mut values: Vec<String> = Vec::new();
        match &spec.transport {
            Transport::Stdio(stdio) => values.extend(stdio.env.values().cloned()),
            Transport::StreamableHttp(remote) | Transport::Sse(remote) => {
                values.extend(url_secrets(&remote.url));
                for value in remote.headers.values() {
                    values.extend(header_secrets(value));
                }
            }
        }
        Self::from_values(values)
    }

    /// Adds `value` (ignored when shorter than [`MIN_SECRET_LEN`]).
    pub fn add(&self, value: &str) {
        self.extend([value]);
    }

    /// Adds the value of a header, and its credential after an auth scheme.
    pub fn add_header_value(&self, value: &str) {
        self.extend(header_secrets(value));
    }

    /// Adds every value of `values`.
    pub fn extend<I, S>(&self, values: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut needles = self.needles.write().unwrap_or_else(PoisonError::into_inner);
        let before = needles.values.len();
        for value in values {
            let value = value.as_ref().trim();
            if value.chars().count() >= MIN_SECRET_LEN {
                needles.values.insert(value.to_owned());
            }
        }
        if needles.values.len() != before {
            needles.rebuild();
        }
    }

    /// How many values it redacts.
    pub fn len(&self) -> usize {
        self.needles
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values
            .len()
    }

    /// Whether it redacts nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `text` with every known value replaced by [`REDACTED`]; borrowed when nothing matched.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.needles
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .redact(text)
    }

    /// [`redact`](Self::redact) into an owned string.
    pub fn redact_string(&self, text: impl Into<String>) -> String {
        let text = text.into();
        match self.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(redacted) => redacted,
        }
    }

    /// Redacts every string (keys too) inside `value`.
    pub fn redact_json(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut v) in entries {
                    self.redact_json(&mut v);
                    map.insert(self.redact_string(key), v);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn weak(&self) -> Weak<RwLock<Needles>> {
        Arc::downgrade(&self.needles)
    }
}

/// A header value and, after an auth scheme (`Bearer x`, `Basic x`, `Token x`), the
/// credential alone: servers and proxies echo either.
fn header_secrets(value: &str) -> Vec<String> {
    let value = value.trim();
    let mut out = vec![value.to_owned()];
    if let Some((scheme, credential)) = value.split_once(' ')
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        out.push(credential.trim().to_owned());
    }
    out
}

/// The secret parts of a URL: its user and password (as written and percent-decoded), its
/// whole query and each query value (as written and decoded). A URL that does not parse
/// gives nothing.
pub fn url_secrets(url: &str) -> Vec<String> {
    let Ok(parsed) = Url::parse(url) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut push_both = |raw: &str| {
        out.push(raw.to_owned());
        if let Ok(decoded) = percent_decode(raw) {
            out.push(decoded);
        }
    };
    if !parsed.username().is_empty() {
        push_both(parsed.username());
    }
    if let Some(password) = parsed.password() {
        push_both(password);
    }
    if let Some(query) = parsed.query() {
        push_both(query);
        for pair in query.split('&') {
            if let Some((_, value)) = pair.split_once('=') {
                push_both(value);
            }
        }
    }
    out
}

fn percent_decode(raw: &str) -> Result<String, std::string::FromUtf8Error> {
    let hex = |b: u8| {
        char::from(b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let escaped = (b == b'%')
            .then(|| Some((hex(*bytes.get(i + 1)?)?, hex(*bytes.get(i + 2)?)?)))
            .flatten();
        match (b, escaped) {
            (_, Some((high, low))) => {
                out.push(high * 16 + low);
                i += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                i += 1;
            }
            (b, None) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
}

/// The redactors of every live server, for text that is not tied to one server (log lines of
/// the whole process). Holds them weakly: a removed server's values leave the set with it.
#[derive(Clone, Default)]
pub struct RedactorSet {
    members: Arc<Mutex<Vec<Weak<RwLock<Needles>>>>>,
}

impl fmt::Debug for RedactorSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedactorSet")
            .field("members", &self.live().len())
            .finish()
    }
}

impl RedactorSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `redactor` for as long as it (or a clone of it) lives.
    pub fn register(&self, redactor: &Redactor) {
        let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        members.retain(|m| m.strong_count() > 0);
        members.push(redactor.weak());
    }

    fn live(&self) -> Vec<Arc<RwLock<Needles>>> {
        let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        members.retain(|m| m.strong_count() > 0);
        members.iter().filter_map(Weak::upgrade).collect()
    }

    /// `text` with the values of every live redactor replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for needles in self.live() {
            let needles = needles.read().unwrap_or_else(PoisonError::into_inner);
            if let Cow::Owned(r) = needles.redact(&out) {
                out = Cow::Owned(r);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::resource::mcp_server::{RemoteTransport, StdioTransport};

    use super::*;

    #[test]
    fn values_are_cut_out_longest_first() {
        let r = Redactor::from_values(["s3cret", "s3cret-and-more", "x", ""]);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r.redact("a s3cret-and-more b s3cret c x"),
            "a [redacted] b [redacted] c x"
        );
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
        let clone = r.clone();
        r.add("later-value");
        assert_eq!(clone.redact("later-value"), "[redacted]");
        assert!(!format!("{r:?}").contains("s3cret"));
    }

    #[test]
    fn stdio_env_values() {
        let spec = McpServerSpec::with_transport(Transport::Stdio(StdioTransport {
            command: "server".into(),
            args: vec![],
            env: BTreeMap::from([
                ("API_TOKEN".into(), "tok-123456".into()),
                ("DEBUG".into(), "1".into()),
            ]),
        }));
        let r = Redactor::for_spec(&spec);
        assert_eq!(
            r.redact("boom: token tok-123456, DEBUG=1"),
            "boom: token [redacted], DEBUG=1"
        );
    }

    #[test]
    fn remote_url_and_headers() {
        let spec = McpServerSpec::with_transport(Transport::StreamableHttp(RemoteTransport {
            url: "https://user%40corp:p%40ss@api.example.com/mcp?token=ab%2Fcd&x=1".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer abc.def.ghi".into())]),
            ..RemoteTransport::default()
        }));
        let r = Redactor::for_spec(&spec);
        for (text, want) in [
            (
                "GET https://user%40corp:p%40ss@api.example.com/mcp?token=ab%2Fcd&x=1 failed",
                "GET https://[redacted]:[redacted]@api.example.com/mcp?[redacted] failed",
            ),
            (
                "user user@corp pass p@ss",
                "user [redacted] pass [redacted]",
            ),
            ("token ab/cd", "token [redacted]"),
            ("got header Bearer abc.def.ghi", "got header [redacted]"),
            ("jwt abc.def.ghi", "jwt [redacted]"),
        ] {
            assert_eq!(r.redact(text), want, "{text}");
        }
    }

    #[test]
    fn json_strings_and_keys() {
        let r = Redactor::from_values(["hunter22"]);
        let mut v = serde_json::json!({"error": "pw hunter22", "hunter22": [1, "hunter22"]});
        r.redact_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"error": "pw [redacted]", "[redacted]": [1, "[redacted]"]})
        );
    }

    #[test]
    fn a_set_holds_live_redactors_only() {
        let set = RedactorSet::new();
        let a = Redactor::from_values(["alpha-secret"]);
        set.register(&a);
        {
            let b = Redactor::from_values(["beta-secret"]);
            set.register(&b);
            assert_eq!(
                set.redact("alpha-secret beta-secret"),
                "[redacted] [redacted]"
            );
        }
        assert_eq!(
            set.redact("alpha-secret beta-secret"),
            "[redacted] beta-secret"
        );
    }

    #[test]
    fn url_secrets_of_plain_urls() {
        assert!(url_secrets("http://localhost:8090/mcp").is_empty());
        assert!(url_secrets("not a url").is_empty());
        assert_eq!(
            url_secrets("http://h/p?k=v%20w"),
            ["k=v%20w", "k=v w", "v%20w", "v w"]
        );
    }
}
