//! The observed state of an MCPServer.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::Condition;

/// `status` of an MCPServer, written by muster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    /// Infrastructure state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<McpServerState>,
    /// Health.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<Health>,
    /// Error of the most recent operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the server was last connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_connected: Option<DateTime<Utc>>,
    /// How many times the server was restarted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub restart_count: u32,
    /// The `spec.restartRequestedAt` value most recently processed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_restarted_at: Option<DateTime<Utc>>,
    /// Connection attempts that failed in a row; Failed from the third on.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub consecutive_failures: u32,
    /// When the last connection attempt was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt: Option<DateTime<Utc>>,
    /// When muster tries again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_after: Option<DateTime<Utc>>,
    /// HTTP status of the last failed attempt, when it got one.
    #[serde(
        rename = "lastFailureHTTPStatus",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_failure_http_status: Option<u16>,
    /// Standard conditions; muster writes `Ready`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `status.state`: infrastructure state (reachability and authentication).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum McpServerState {
    /// The process is starting (stdio).
    Starting,
    /// The process is running (stdio).
    Running,
    /// Attempting to connect (remote).
    Connecting,
    /// Reachable and authenticated (remote).
    Connected,
    /// Reachable; a person signs in through muster before it connects.
    #[serde(rename = "Auth Required")]
    AuthRequired,
    /// Reachable and served per session; no session is connected.
    #[serde(rename = "Awaiting Session")]
    AwaitingSession,
    /// Not reachable, or broken for every caller.
    Failed,
    /// The process is stopped (stdio).
    Stopped,
    /// Not connected, intentionally (remote).
    Disconnected,
}

impl McpServerState {
    /// Every state, in the order of the lifecycle table of the MCP servers guide.
    pub const ALL: [Self; 9] = [
        Self::Starting,
        Self::Running,
        Self::Stopped,
        Self::Connecting,
        Self::Connected,
        Self::Disconnected,
        Self::Failed,
        Self::AuthRequired,
        Self::AwaitingSession,
    ];

    /// The spelling in `status.state`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "Starting",
            Self::Running => "Running",
            Self::Connecting => "Connecting",
            Self::Connected => "Connected",
            Self::AuthRequired => "Auth Required",
            Self::AwaitingSession => "Awaiting Session",
            Self::Failed => "Failed",
            Self::Stopped => "Stopped",
            Self::Disconnected => "Disconnected",
        }
    }

    /// The state in one word, as used for the `Ready` condition's reason.
    pub const fn reason(self) -> &'static str {
        match self {
            Self::AuthRequired => "AuthRequired",
            Self::AwaitingSession => "AwaitingSession",
            other => other.as_str(),
        }
    }

    /// Whether the `Ready` condition is true in this state.
    pub const fn is_ready(self) -> bool {
        matches!(
            self,
            Self::Running | Self::Connected | Self::AuthRequired | Self::AwaitingSession
        )
    }
}

impl std::fmt::Display for McpServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `status.health`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// Not known yet.
    Unknown,
    /// The last probe succeeded.
    Healthy,
    /// The last probe failed.
    Unhealthy,
    /// A probe is running.
    Checking,
}
