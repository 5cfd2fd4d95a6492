//! Settings every backend shares: backoff, health probe, protocol, Secret reader.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use muster_core::secret::RedactorSet;

use super::backoff::Backoff;
use super::connector::Connector;
use super::secrets::SecretResolver;
use muster_gotmpl::duration::{DurationError, parse_std};

/// Environment variable with the first reconnect wait (Go duration, default `30s`).
pub const ENV_INITIAL_BACKOFF: &str = "MUSTER_MCPSERVER_INITIAL_BACKOFF";
/// Environment variable setting the interval of the recovery loop: the health ping of
/// connected servers and the new start of stdio servers whose process died (Go duration).
pub const ENV_RETRY_INTERVAL: &str = "MUSTER_ORCHESTRATOR_RETRY_INTERVAL";
/// Environment variable with the longest reconnect wait (Go duration, default `2m`).
pub const ENV_MAX_BACKOFF: &str = "MUSTER_MCPSERVER_MAX_BACKOFF";

/// Environment variable that turns the lean hop of `tools/call` to streamable-HTTP servers
/// off (`false`) or on (`true`, the default): with it off, every call goes through rmcp's
/// client.
pub const ENV_LEAN_CALLS: &str = "MUSTER_MCPSERVER_LEAN_CALLS";

/// Environment variable that chooses the lifecycle muster asks servers for: `auto` (the
/// default: a session with a streamable-HTTP server that offers one, else 2026-07-28 where
/// the server has it, else `initialize`), `discover` (2026-07-28 wherever the server has it)
/// or `initialize` (only the `initialize` handshake: a session of a version up to
/// 2025-11-25).
pub const ENV_PROTOCOL: &str = "MUSTER_MCPSERVER_PROTOCOL";

/// Default of [`BackendOptions::max_result_bytes`] (16 MiB).
pub const DEFAULT_MAX_RESULT_BYTES: usize = 16 * 1024 * 1024;

/// Which lifecycle the client asks a server for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolMode {
    /// Ask `server/discover` first. A streamable-HTTP server that also lists a version of
    /// the `initialize` handshake gets that handshake and keeps a session: one request costs
    /// such a server less inside a session than on its own. Any other server that answers
    /// the discover gets 2026-07-28; one that refuses it gets `initialize` with the newest
    /// version it knows.
    #[default]
    Auto,
    /// 2026-07-28 (`server/discover`, stateless requests) wherever the server has it, else
    /// `initialize` with the newest version the server knows.
    Discover,
    /// Only the `initialize` handshake (up to 2025-11-25).
    Initialize,
}

/// A variable of the environment whose value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// The value is not a non-negative Go duration (`300ms`, `1.5s`, `2m`, `1h30m`).
    #[error("{variable}: {source}")]
    Duration {
        /// The variable.
        variable: &'static str,
        /// Why its value does not parse.
        #[source]
        source: DurationError,
    },
    /// Neither `true` nor `false`.
    #[error("{variable}: expected true or false, got {value:?}")]
    Bool {
        /// The variable.
        variable: &'static str,
        /// The value given.
        value: String,
    },
    /// An interval of zero, where the variable needs a positive one.
    #[error("{variable}: the interval must be longer than zero, got {value:?}")]
    Zero {
        /// The variable.
        variable: &'static str,
        /// The value given.
        value: String,
    },
    /// None of the values the variable takes.
    #[error("{variable}: expected {expected}, got {value:?}")]
    Choice {
        /// The variable.
        variable: &'static str,
        /// The values it takes.
        expected: &'static str,
        /// The value given.
        value: String,
    },
}

impl OptionsError {
    /// The variable whose value is refused.
    pub fn variable(&self) -> &'static str {
        match self {
            OptionsError::Duration { variable, .. }
            | OptionsError::Zero { variable, .. }
            | OptionsError::Bool { variable, .. }
            | OptionsError::Choice { variable, .. } => variable,
        }
    }
}

/// Settings of backends; one value is usually shared by all of them. Cheap to clone.
#[derive(Clone)]
#[non_exhaustive]
pub struct BackendOptions {
    /// The reconnect backoff of remote servers.
    pub backoff: Backoff,
    /// How often connected servers are pinged; `None` turns the probe off.
    pub health_interval: Option<Duration>,
    /// The pause between stop and start of a restart.
    pub restart_delay: Duration,
    /// How long a stdio server may take to exit after `SIGTERM` before it is killed.
    pub stop_grace: Duration,
    /// How many bytes of a stdio server's stderr are kept for `lastError`.
    pub stderr_tail_bytes: usize,
    /// Which lifecycle to ask servers for.
    pub protocol: ProtocolMode,
    /// Reads `headersFrom` values; `None` in filesystem mode.
    pub secrets: Option<Arc<dyn SecretResolver>>,
    /// The namespace of the MCPServer, where `headersFrom` Secrets live.
    pub namespace: String,
    /// Opens the connection in place of the spec's transport (in-process servers, tests).
    pub connector: Option<Arc<dyn Connector>>,
    /// Every backend registers its [`Redactor`](muster_core::secret::Redactor) here, so
    /// text that is not tied to one server (the process's log lines) can be redacted too.
    pub redactions: RedactorSet,
    /// The largest message (one stdio line, one HTTP body or SSE event) a server may send;
    /// a larger response fails its call at once (default 16 MiB).
    pub max_result_bytes: usize,
    /// Where stdio servers' process groups are recorded while they run, so a muster started
    /// after a killed one reaps what it left; `None` records nothing.
    #[cfg(feature = "stdio")]
    pub process_registry: Option<super::reaper::ProcessRegistry>,
    /// CA certificates trusted for HTTPS servers in addition to the system's
    /// (`--extra-ca-file`).
    #[cfg(feature = "http-client")]
    pub extra_roots: crate::tls::ExtraRoots,
    /// The access token of a remote server's requests (a session's sign-in), read on every
    /// request; `None` sends only the spec's headers.
    #[cfg(feature = "http-client")]
    pub bearer: Option<Arc<dyn super::bearer::BearerSource>>,
    /// Whether `tools/call` to streamable-HTTP and legacy SSE servers may take the lean hop
    /// beside rmcp's client (default `true`).
    pub lean_calls: bool,
}

impl Default for BackendOptions {
    fn default() -> Self {
        Self {
            backoff: Backoff::default(),
            health_interval: Some(Duration::from_secs(30)),
            restart_delay: Duration::from_millis(200),
            stop_grace: Duration::from_secs(2),
            stderr_tail_bytes: 4096,
            protocol: ProtocolMode::Auto,
            secrets: None,
            namespace: muster_core::DEFAULT_NAMESPACE.to_owned(),
            connector: None,
            redactions: RedactorSet::new(),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            #[cfg(feature = "stdio")]
            process_registry: None,
            #[cfg(feature = "http-client")]
            extra_roots: crate::tls::ExtraRoots::default(),
            bearer: None,
            lean_calls: true,
        }
    }
}

impl fmt::Debug for BackendOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendOptions")
            .field("backoff", &self.backoff)
            .field("health_interval", &self.health_interval)
            .field("restart_delay", &self.restart_delay)
            .field("stop_grace", &self.stop_grace)
            .field("stderr_tail_bytes", &self.stderr_tail_bytes)
            .field("protocol", &self.protocol)
            .field("secrets", &self.secrets.is_some())
            .field("namespace", &self.namespace)
            .field("connector", &self.connector)
            .field("redactions", &self.redactions)
            .field("max_result_bytes", &self.max_result_bytes)
            .finish_non_exhaustive()
    }
}

impl BackendOptions {
    /// Trusts `roots` for HTTPS servers in addition to the system's CAs.
    #[cfg(feature = "http-client")]
    #[must_use]
    pub fn with_extra_roots(mut self, roots: crate::tls::ExtraRoots) -> Self {
        self.extra_roots = roots;
        self
    }

    /// The defaults, with the backoff read from `MUSTER_MCPSERVER_INITIAL_BACKOFF` and
    /// `MUSTER_MCPSERVER_MAX_BACKOFF`, the recovery loop's interval from
    /// `MUSTER_ORCHESTRATOR_RETRY_INTERVAL`, the lean hop from `MUSTER_MCPSERVER_LEAN_CALLS`
    /// and the lifecycle from `MUSTER_MCPSERVER_PROTOCOL`, when they are set.
    pub fn from_env() -> Result<Self, OptionsError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, OptionsError> {
        let mut options = Self::default();
        let read = |variable: &'static str| -> Result<Option<Duration>, OptionsError> {
            match var(variable).filter(|v| !v.trim().is_empty()) {
                None => Ok(None),
                Some(v) => parse_std(v.trim())
                    .map(Some)
                    .map_err(|source| OptionsError::Duration { variable, source }),
            }
        };
        if let Some(initial) = read(ENV_INITIAL_BACKOFF)? {
            options.backoff.initial = initial;
        }
        if let Some(max) = read(ENV_MAX_BACKOFF)? {
            options.backoff.max = max;
        }
        if let Some(interval) = read(ENV_RETRY_INTERVAL)? {
            if interval.is_zero() {
                return Err(OptionsError::Zero {
                    variable: ENV_RETRY_INTERVAL,
                    value: var(ENV_RETRY_INTERVAL).unwrap_or_default(),
                });
            }
            options.health_interval = Some(interval);
        }
        match var(ENV_LEAN_CALLS).as_deref().map(str::trim) {
            None | Some("" | "true") => {}
            Some("false") => options.lean_calls = false,
            Some(other) => {
                return Err(OptionsError::Bool {
                    variable: ENV_LEAN_CALLS,
                    value: other.to_owned(),
                });
            }
        }
        match var(ENV_PROTOCOL).as_deref().map(str::trim) {
            None | Some("" | "auto") => {}
            Some("initialize") => options.protocol = ProtocolMode::Initialize,
            Some("discover") => options.protocol = ProtocolMode::Discover,
            Some(other) => {
                return Err(OptionsError::Choice {
                    variable: ENV_PROTOCOL,
                    expected: "auto, discover or initialize",
                    value: other.to_owned(),
                });
            }
        }
        Ok(options)
    }

    /// Sets the reconnect backoff.
    #[must_use]
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Sets the health probe interval; `None` turns it off.
    #[must_use]
    pub fn with_health_interval(mut self, interval: Option<Duration>) -> Self {
        self.health_interval = interval;
        self
    }

    /// Sets the Secret reader for `headersFrom`.
    #[must_use]
    pub fn with_secrets(mut self, secrets: Arc<dyn SecretResolver>) -> Self {
        self.secrets = Some(secrets);
        self
    }

    /// Authorizes every request of remote servers with the current token of `source`.
    #[cfg(feature = "http-client")]
    #[must_use]
    pub fn with_bearer(mut self, source: Arc<dyn super::bearer::BearerSource>) -> Self {
        self.bearer = Some(source);
        self
    }

    /// Sets the MCPServer's namespace.
    #[must_use]
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Sets the largest message a server may send.
    #[must_use]
    pub fn with_max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// Records stdio servers' process groups in `registry`.
    #[cfg(feature = "stdio")]
    #[must_use]
    pub fn with_process_registry(mut self, registry: super::reaper::ProcessRegistry) -> Self {
        self.process_registry = Some(registry);
        self
    }

    /// Sets the lifecycle asked for.
    #[must_use]
    pub fn with_protocol(mut self, protocol: ProtocolMode) -> Self {
        self.protocol = protocol;
        self
    }

    /// Connects through `connector` in place of the spec's transport.
    #[must_use]
    pub fn with_connector(mut self, connector: Arc<dyn Connector>) -> Self {
        self.connector = Some(connector);
        self
    }

    /// Registers every backend's secret values with `redactions`.
    #[must_use]
    pub fn with_redactions(mut self, redactions: RedactorSet) -> Self {
        self.redactions = redactions;
        self
    }

    /// Sets how long a stdio server may take to exit after `SIGTERM`.
    #[must_use]
    pub fn with_stop_grace(mut self, grace: Duration) -> Self {
        self.stop_grace = grace;
        self
    }

    /// Sets the pause between stop and start of a restart.
    #[must_use]
    pub fn with_restart_delay(mut self, delay: Duration) -> Self {
        self.restart_delay = delay;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_from_variables() {
        let o = BackendOptions::from_vars(|v| match v {
            ENV_INITIAL_BACKOFF => Some("1s".to_owned()),
            ENV_MAX_BACKOFF => Some("500ms".to_owned()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            o.backoff,
            Backoff::new(Duration::from_secs(1), Duration::from_millis(500))
        );
    }

    #[test]
    fn lean_calls_from_variables() {
        let with = |value: &'static str| {
            BackendOptions::from_vars(move |v| (v == ENV_LEAN_CALLS).then(|| value.to_owned()))
        };
        assert!(with("true").unwrap().lean_calls);
        assert!(!with("false").unwrap().lean_calls);
        let e = with("off").unwrap_err();
        assert_eq!(e.variable(), ENV_LEAN_CALLS);
        assert_eq!(
            e.to_string(),
            "MUSTER_MCPSERVER_LEAN_CALLS: expected true or false, got \"off\""
        );
    }

    #[test]
    fn the_protocol_from_variables() {
        let with = |value: &'static str| {
            BackendOptions::from_vars(move |v| (v == ENV_PROTOCOL).then(|| value.to_owned()))
        };
        assert_eq!(with("auto").unwrap().protocol, ProtocolMode::Auto);
        assert_eq!(
            with(" initialize ").unwrap().protocol,
            ProtocolMode::Initialize
        );
        assert_eq!(with("discover").unwrap().protocol, ProtocolMode::Discover);
        let e = with("2025-06-18").unwrap_err();
        assert_eq!(e.variable(), ENV_PROTOCOL);
        assert_eq!(
            e.to_string(),
            "MUSTER_MCPSERVER_PROTOCOL: expected auto, discover or initialize, got \"2025-06-18\""
        );
    }

    #[test]
    fn defaults_without_variables() {
        let o = BackendOptions::from_vars(|_| None).unwrap();
        assert_eq!(o.backoff, Backoff::default());
        assert_eq!(o.backoff.delay(3), Duration::from_secs(120));
        assert_eq!(o.health_interval, Some(Duration::from_secs(30)));
        assert!(o.lean_calls);
        assert_eq!(o.protocol, ProtocolMode::Auto);
    }

    #[test]
    fn the_retry_interval_sets_the_recovery_loop() {
        let o = BackendOptions::from_vars(|v| (v == ENV_RETRY_INTERVAL).then(|| "1s".to_owned()))
            .unwrap();
        assert_eq!(o.health_interval, Some(Duration::from_secs(1)));
        let e = BackendOptions::from_vars(|v| (v == ENV_RETRY_INTERVAL).then(|| "0".to_owned()))
            .unwrap_err();
        assert_eq!(e.variable(), ENV_RETRY_INTERVAL);
        assert!(e.to_string().contains("longer than zero"), "{e}");
    }

    #[test]
    fn a_bad_value_names_the_variable() {
        let e = BackendOptions::from_vars(|v| (v == ENV_MAX_BACKOFF).then(|| "2x".to_owned()))
            .unwrap_err();
        assert_eq!(e.variable(), ENV_MAX_BACKOFF);
        assert_eq!(
            e.to_string(),
            "MUSTER_MCPSERVER_MAX_BACKOFF: time: unknown unit \"x\" in duration \"2x\""
        );
    }
}
