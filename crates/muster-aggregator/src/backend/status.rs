//! The MCPServer status computed from a backend snapshot: the state mapping table and the
//! `Ready` condition. Pure functions.

use chrono::{DateTime, SecondsFormat, Utc};
use muster_core::resource::mcp_server::{McpServerState, McpServerStatus, ServerType};
use muster_core::resource::{Condition, ConditionStatus};

use super::state::{BackendSnapshot, ServiceState};

/// The `type` of the condition muster writes.
pub const READY_CONDITION: &str = "Ready";

/// Maps a service state to `status.state` for a server of `server_type`.
///
/// | service state | remote | stdio |
/// |---|---|---|
/// | running, connected, stopping | Connected | Running |
/// | auth_required | Auth Required | Running |
/// | starting | Connecting | Starting |
/// | stopped, unknown, disconnected | Disconnected | Stopped |
/// | failed, unreachable | Failed | Failed |
pub const fn crd_state(state: ServiceState, server_type: ServerType) -> McpServerState {
    let remote = server_type.is_remote();
    match state {
        ServiceState::Running | ServiceState::Connected | ServiceState::Stopping => {
            if remote {
                McpServerState::Connected
            } else {
                McpServerState::Running
            }
        }
        ServiceState::AuthRequired => {
            if remote {
                McpServerState::AuthRequired
            } else {
                McpServerState::Running
            }
        }
        ServiceState::Starting => {
            if remote {
                McpServerState::Connecting
            } else {
                McpServerState::Starting
            }
        }
        ServiceState::Stopped | ServiceState::Unknown | ServiceState::Disconnected => {
            if remote {
                McpServerState::Disconnected
            } else {
                McpServerState::Stopped
            }
        }
        ServiceState::Failed | ServiceState::Unreachable => McpServerState::Failed,
    }
}

/// Formats a time the way the `Ready` message and the status fields show it.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The `Ready` condition of a snapshot: `True` while the server is reachable, the reason is
/// the state in one word (`Suspended` for a suspended server), the message explains it and,
/// for a failed server with a retry scheduled, ends with `Next attempt at <RFC3339>.`.
pub fn ready_condition(snapshot: &BackendSnapshot) -> Condition {
    let state = crd_state(snapshot.state, snapshot.server_type);
    let stopped = matches!(
        state,
        McpServerState::Stopped | McpServerState::Disconnected
    );
    let reason = if snapshot.suspended && stopped {
        "Suspended"
    } else {
        state.reason()
    };
    Condition {
        type_: READY_CONDITION.to_owned(),
        status: if state.is_ready() {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        },
        reason: reason.to_owned(),
        message: ready_message(snapshot, state, reason),
        last_transition_time: Some(snapshot.state_since),
        observed_generation: None,
    }
}

fn ready_message(snapshot: &BackendSnapshot, state: McpServerState, reason: &str) -> String {
    if reason == "Suspended" {
        return "The server is suspended (spec.suspended); muster keeps it stopped.".to_owned();
    }
    match state {
        McpServerState::Running => {
            if snapshot.state == ServiceState::AuthRequired {
                "The server process is running and asks for authentication.".to_owned()
            } else {
                "The server process is running.".to_owned()
            }
        }
        McpServerState::Connected => "muster is connected to the server.".to_owned(),
        McpServerState::AuthRequired => format!(
            "The server is reachable and requires authentication: each session signs in with \
             core_auth_login (server {}).",
            snapshot.name
        ),
        McpServerState::AwaitingSession => {
            "The server is reachable and served per session; no session is connected.".to_owned()
        }
        McpServerState::Connecting => "Connecting to the server.".to_owned(),
        McpServerState::Starting => "Starting the server process.".to_owned(),
        McpServerState::Disconnected => "Not connected.".to_owned(),
        McpServerState::Stopped => "The server process is stopped.".to_owned(),
        McpServerState::Failed => failed_message(snapshot),
    }
}

fn failed_message(snapshot: &BackendSnapshot) -> String {
    let base = snapshot
        .last_error
        .as_deref()
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .unwrap_or("The server failed");
    let base = base.trim_end_matches('.');
    match snapshot.next_retry_after {
        Some(at) => format!("{base}. Next attempt at {}.", rfc3339(at)),
        None => format!("{base}."),
    }
}

/// The whole `status` of the MCPServer a snapshot belongs to. `lastRestartedAt` is the
/// reconciler's and stays unset here.
pub fn compute_status(snapshot: &BackendSnapshot) -> McpServerStatus {
    McpServerStatus {
        state: Some(crd_state(snapshot.state, snapshot.server_type)),
        health: Some(snapshot.health),
        last_error: snapshot.last_error.clone(),
        last_connected: snapshot.last_connected,
        restart_count: snapshot.restart_count,
        last_restarted_at: None,
        consecutive_failures: snapshot.consecutive_failures,
        last_attempt: snapshot.last_attempt,
        next_retry_after: snapshot.next_retry_after,
        last_failure_http_status: snapshot.last_failure_http_status,
        conditions: vec![ready_condition(snapshot)],
    }
}

#[cfg(test)]
mod tests;
