//! The CRD status of a backend through the public functions: state mapping and `Ready`.

use chrono::{TimeZone, Utc};
use muster_aggregator::backend::{BackendSnapshot, ServiceState, compute_status, crd_state};
use muster_core::resource::ConditionStatus;
use muster_core::resource::mcp_server::{McpServerState, ServerType};

#[test]
fn mapping_table() {
    use McpServerState as C;
    use ServiceState as S;
    let table = [
        (S::Unknown, C::Disconnected, C::Stopped),
        (S::Starting, C::Connecting, C::Starting),
        (S::Running, C::Connected, C::Running),
        (S::Connected, C::Connected, C::Running),
        (S::Stopping, C::Connected, C::Running),
        (S::Stopped, C::Disconnected, C::Stopped),
        (S::Failed, C::Failed, C::Failed),
        (S::Unreachable, C::Failed, C::Failed),
        (S::AuthRequired, C::AuthRequired, C::Running),
        (S::Disconnected, C::Disconnected, C::Stopped),
    ];
    for (s, remote, stdio) in table {
        assert_eq!(crd_state(s, ServerType::Sse), remote, "{s}");
        assert_eq!(crd_state(s, ServerType::StreamableHttp), remote, "{s}");
        assert_eq!(crd_state(s, ServerType::Stdio), stdio, "{s}");
    }
}

#[test]
fn ready_condition_of_a_failed_server_with_a_retry() {
    let now = Utc.with_ymd_and_hms(2026, 9, 21, 12, 41, 0).unwrap();
    let mut s = BackendSnapshot::initial("remote", ServerType::StreamableHttp, now);
    s.state = ServiceState::Failed;
    s.last_error = Some("HTTP 404 Not Found".to_owned());
    s.last_failure_http_status = Some(404);
    s.consecutive_failures = 1;
    s.next_retry_after = Some(Utc.with_ymd_and_hms(2026, 9, 21, 12, 43, 0).unwrap());
    let status = compute_status(&s);
    let ready = &status.conditions[0];
    assert_eq!(ready.type_, "Ready");
    assert_eq!(ready.status, ConditionStatus::False);
    assert_eq!(ready.reason, "Failed");
    assert_eq!(
        ready.message,
        "HTTP 404 Not Found. Next attempt at 2026-09-21T12:43:00Z."
    );
}
