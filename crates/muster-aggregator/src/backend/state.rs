//! The service state of a backend, in the original's lowercase vocabulary, and the snapshot
//! readers take of it.

use std::fmt;

use chrono::{DateTime, Utc};
use muster_core::resource::mcp_server::{Health, ServerType};

/// The state of a backend's service, as `core_service_*` report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServiceState {
    /// Never started.
    Unknown,
    /// Connecting or spawning.
    Starting,
    /// A stdio server's process is up and initialized.
    Running,
    /// A remote server is connected and initialized.
    Connected,
    /// Being stopped.
    Stopping,
    /// A stdio server was stopped.
    Stopped,
    /// The last attempt failed.
    Failed,
    /// Three or more attempts in a row failed.
    Unreachable,
    /// The server answered 401: reachable, waiting for someone to sign in.
    AuthRequired,
    /// A remote server was disconnected on purpose.
    Disconnected,
}

impl ServiceState {
    /// Every state, in the order `core_service_*` documents them.
    pub const ALL: [Self; 10] = [
        Self::Unknown,
        Self::Starting,
        Self::Running,
        Self::Stopping,
        Self::Stopped,
        Self::Failed,
        Self::Unreachable,
        Self::AuthRequired,
        Self::Connected,
        Self::Disconnected,
    ];

    /// The lowercase spelling, e.g. `auth_required`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Connected => "connected",
            Self::Stopping => "stopping",
            Self::Stopped => "stopped",
            Self::Failed => "failed",
            Self::Unreachable => "unreachable",
            Self::AuthRequired => "auth_required",
            Self::Disconnected => "disconnected",
        }
    }

    /// `running` or `connected`: the server answers calls.
    pub const fn is_active(self) -> bool {
        matches!(self, Self::Running | Self::Connected)
    }

    /// `failed` or `unreachable`.
    pub const fn is_failed(self) -> bool {
        matches!(self, Self::Failed | Self::Unreachable)
    }

    /// The state an initialized connection has for this server type.
    pub const fn active_for(server_type: ServerType) -> Self {
        if server_type.is_remote() {
            Self::Connected
        } else {
            Self::Running
        }
    }

    /// The state a deliberately stopped server has for this server type.
    pub const fn stopped_for(server_type: ServerType) -> Self {
        if server_type.is_remote() {
            Self::Disconnected
        } else {
            Self::Stopped
        }
    }
}

impl fmt::Display for ServiceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A consistent copy of a backend's service data.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BackendSnapshot {
    /// The MCPServer name.
    pub name: String,
    /// `stdio`, `streamable-http` or `sse`.
    pub server_type: ServerType,
    /// The service state.
    pub state: ServiceState,
    /// Health from the last probe.
    pub health: Health,
    /// Error of the most recent operation, without credentials.
    pub last_error: Option<String>,
    /// Failed attempts in a row (remote servers).
    pub consecutive_failures: u32,
    /// When the last connection attempt was made.
    pub last_attempt: Option<DateTime<Utc>>,
    /// When the next automatic attempt is due; `None` while none is scheduled.
    pub next_retry_after: Option<DateTime<Utc>>,
    /// HTTP status of the last failed attempt, when it got one.
    pub last_failure_http_status: Option<u16>,
    /// When the server was last connected.
    pub last_connected: Option<DateTime<Utc>>,
    /// How many times [`Backend::restart`](super::Backend::restart) ran.
    pub restart_count: u32,
    /// Connection attempts since the service was created (the first one included).
    pub connect_attempts: u64,
    /// Failed attempts and lost connections since the service was created.
    pub connect_failures: u64,
    /// Whether an initialized client is ready for calls.
    pub client_ready: bool,
    /// When the state last changed.
    pub state_since: DateTime<Utc>,
    /// Whether the server is suspended (`spec.suspended`).
    pub suspended: bool,
    /// The child's process id, for stdio servers with a live process.
    pub pid: Option<u32>,
    /// The protocol version agreed with the server.
    pub protocol_version: Option<String>,
    /// Whether muster is bringing back on its own a server whose connection (or process)
    /// was lost while it was active: set when the loss is seen and an automatic attempt is
    /// planned, cleared when an attempt succeeds, when recovery gives up (a failure that is
    /// not retried, or the server turning unreachable) and when the server is stopped.
    pub recovering: bool,
}

impl BackendSnapshot {
    /// The snapshot of a backend that was never started.
    pub fn initial(name: impl Into<String>, server_type: ServerType, now: DateTime<Utc>) -> Self {
        Self {
            name: name.into(),
            server_type,
            state: ServiceState::Unknown,
            health: Health::Unknown,
            last_error: None,
            consecutive_failures: 0,
            last_attempt: None,
            next_retry_after: None,
            last_failure_http_status: None,
            last_connected: None,
            restart_count: 0,
            connect_attempts: 0,
            connect_failures: 0,
            client_ready: false,
            state_since: now,
            suspended: false,
            pid: None,
            protocol_version: None,
            recovering: false,
        }
    }
}
