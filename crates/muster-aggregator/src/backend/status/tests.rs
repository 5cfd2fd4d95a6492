use chrono::TimeZone;
use muster_core::resource::mcp_server::Health;

use super::*;

fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 9, 21, h, m, s).unwrap()
}

fn snapshot(state: ServiceState, server_type: ServerType) -> BackendSnapshot {
    let mut s = BackendSnapshot::initial("kagi", server_type, at(12, 0, 0));
    s.state = state;
    s
}

#[test]
fn state_mapping_table() {
    use McpServerState as C;
    use ServiceState as S;
    let table = [
        (S::Running, C::Connected, C::Running),
        (S::Connected, C::Connected, C::Running),
        (S::AuthRequired, C::AuthRequired, C::Running),
        (S::Starting, C::Connecting, C::Starting),
        (S::Stopping, C::Connected, C::Running),
        (S::Stopped, C::Disconnected, C::Stopped),
        (S::Unknown, C::Disconnected, C::Stopped),
        (S::Disconnected, C::Disconnected, C::Stopped),
        (S::Failed, C::Failed, C::Failed),
        (S::Unreachable, C::Failed, C::Failed),
    ];
    for (state, remote, stdio) in table {
        assert_eq!(
            crd_state(state, ServerType::StreamableHttp),
            remote,
            "{state}"
        );
        assert_eq!(crd_state(state, ServerType::Sse), remote, "{state}");
        assert_eq!(crd_state(state, ServerType::Stdio), stdio, "{state}");
    }
}

#[test]
fn ready_condition_table() {
    use ServerType::{Stdio, StreamableHttp as Http};
    use ServiceState as S;
    let table = [
        (
            S::Running,
            Stdio,
            ConditionStatus::True,
            "Running",
            "The server process is running.",
        ),
        (
            S::Connected,
            Http,
            ConditionStatus::True,
            "Connected",
            "muster is connected to the server.",
        ),
        (
            S::AuthRequired,
            Http,
            ConditionStatus::True,
            "AuthRequired",
            "The server is reachable and requires authentication: each session signs in with \
             core_auth_login (server kagi).",
        ),
        (
            S::Starting,
            Http,
            ConditionStatus::False,
            "Connecting",
            "Connecting to the server.",
        ),
        (
            S::Starting,
            Stdio,
            ConditionStatus::False,
            "Starting",
            "Starting the server process.",
        ),
        (
            S::Disconnected,
            Http,
            ConditionStatus::False,
            "Disconnected",
            "Not connected.",
        ),
        (
            S::Unknown,
            Stdio,
            ConditionStatus::False,
            "Stopped",
            "The server process is stopped.",
        ),
        (
            S::Failed,
            Stdio,
            ConditionStatus::False,
            "Failed",
            "The server failed.",
        ),
    ];
    for (state, ty, status, reason, message) in table {
        let c = ready_condition(&snapshot(state, ty));
        assert_eq!(c.type_, "Ready");
        assert_eq!(
            (c.status, c.reason.as_str(), c.message.as_str()),
            (status, reason, message),
            "{state} {ty}"
        );
        assert_eq!(c.last_transition_time, Some(at(12, 0, 0)));
    }
}

#[test]
fn failed_with_retry_names_the_next_attempt() {
    let mut s = snapshot(ServiceState::Failed, ServerType::StreamableHttp);
    s.last_error = Some("connection refused".to_owned());
    s.next_retry_after = Some(at(12, 43, 0));
    let c = ready_condition(&s);
    assert_eq!(c.reason, "Failed");
    assert_eq!(
        c.message,
        "connection refused. Next attempt at 2026-09-21T12:43:00Z."
    );

    s.last_error = Some("HTTP 503 Service Unavailable.".to_owned());
    assert_eq!(
        ready_condition(&s).message,
        "HTTP 503 Service Unavailable. Next attempt at 2026-09-21T12:43:00Z."
    );

    s.next_retry_after = None;
    assert_eq!(ready_condition(&s).message, "HTTP 503 Service Unavailable.");
}

#[test]
fn suspended_servers_say_so() {
    for (ty, state) in [
        (ServerType::Stdio, ServiceState::Stopped),
        (ServerType::Sse, ServiceState::Disconnected),
        (ServerType::Stdio, ServiceState::Unknown),
    ] {
        let mut s = snapshot(state, ty);
        s.suspended = true;
        let c = ready_condition(&s);
        assert_eq!(
            (c.status, c.reason.as_str()),
            (ConditionStatus::False, "Suspended")
        );
    }
    let mut running = snapshot(ServiceState::Running, ServerType::Stdio);
    running.suspended = true;
    assert_eq!(ready_condition(&running).reason, "Running");
}

#[test]
fn compute_status_copies_every_field() {
    let mut s = snapshot(ServiceState::Unreachable, ServerType::Sse);
    s.health = Health::Unhealthy;
    s.last_error = Some("server unreachable after 3 consecutive failures: HTTP 504".to_owned());
    s.consecutive_failures = 3;
    s.last_attempt = Some(at(12, 41, 0));
    s.next_retry_after = Some(at(12, 43, 0));
    s.last_failure_http_status = Some(504);
    s.last_connected = Some(at(11, 0, 0));
    s.restart_count = 2;
    let status = compute_status(&s);
    assert_eq!(status.state, Some(McpServerState::Failed));
    assert_eq!(status.health, Some(Health::Unhealthy));
    assert_eq!(status.consecutive_failures, 3);
    assert_eq!(status.last_attempt, Some(at(12, 41, 0)));
    assert_eq!(status.next_retry_after, Some(at(12, 43, 0)));
    assert_eq!(status.last_failure_http_status, Some(504));
    assert_eq!(status.last_connected, Some(at(11, 0, 0)));
    assert_eq!(status.restart_count, 2);
    assert_eq!(status.last_restarted_at, None);
    assert_eq!(status.conditions.len(), 1);
    assert_eq!(
        status.conditions[0].message,
        "server unreachable after 3 consecutive failures: HTTP 504. \
         Next attempt at 2026-09-21T12:43:00Z."
    );
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["state"], "Failed");
    assert_eq!(json["lastFailureHTTPStatus"], 504);
    assert_eq!(json["nextRetryAfter"], "2026-09-21T12:43:00Z");
}
