//! How the outcome of a connection attempt changes a backend's service data. Pure functions.

use std::time::Duration;

use chrono::{DateTime, Utc};
use muster_core::resource::mcp_server::Health;

use super::backoff::Backoff;
use super::failure::{Failure, FailureKind};
use super::state::{BackendSnapshot, ServiceState};

/// From this many consecutive failures on, a server is `unreachable`.
pub(crate) const UNREACHABLE_AFTER: u32 = 3;

/// Records the start of an attempt at `now`.
pub(crate) fn attempt_started(s: &mut BackendSnapshot, now: DateTime<Utc>) {
    s.state = ServiceState::Starting;
    s.health = Health::Unknown;
    s.connect_attempts = s.connect_attempts.saturating_add(1);
    s.last_attempt = Some(now);
    s.next_retry_after = None;
    s.client_ready = false;
}

/// Records a successful attempt at `now`.
pub(crate) fn attempt_succeeded(s: &mut BackendSnapshot, now: DateTime<Utc>) {
    s.state = ServiceState::active_for(s.server_type);
    s.health = Health::Healthy;
    s.consecutive_failures = 0;
    s.next_retry_after = None;
    s.last_failure_http_status = None;
    s.last_error = None;
    s.last_connected = Some(now);
    s.client_ready = true;
    s.recovering = false;
}

/// Records that the connection of an active server was lost at `now`; muster recovers it
/// on its own when `restart_planned` (a stdio server is started anew by the recovery loop)
/// or when a retry of a remote server is scheduled. Returns that retry's wait.
pub(crate) fn connection_lost(
    s: &mut BackendSnapshot,
    failure: &Failure,
    backoff: Backoff,
    restart_planned: bool,
    now: DateTime<Utc>,
) -> Option<Duration> {
    let delay = attempt_failed(s, failure, backoff, now);
    s.recovering = restart_planned || delay.is_some();
    delay
}

/// Records a failed attempt (or a lost connection) at `now`; returns the wait before the
/// next automatic attempt, when one is scheduled.
///
/// - 401: `auth_required`, reachable, not counted, nothing scheduled.
/// - transient failure of a remote server: counted; `failed`, from the third in a row
///   `unreachable`; retried after the backoff.
/// - anything else (every stdio failure, permanent remote failures): `failed`, not retried.
pub(crate) fn attempt_failed(
    s: &mut BackendSnapshot,
    failure: &Failure,
    backoff: Backoff,
    now: DateTime<Utc>,
) -> Option<Duration> {
    s.client_ready = false;
    s.pid = None;
    let remote = s.server_type.is_remote();
    if !matches!(failure.kind, FailureKind::AuthRequired) {
        s.connect_failures = s.connect_failures.saturating_add(1);
    }
    let delay = record_failure(s, failure, backoff, remote, now);
    if delay.is_none() || s.state == ServiceState::Unreachable {
        s.recovering = false;
    }
    delay
}

fn record_failure(
    s: &mut BackendSnapshot,
    failure: &Failure,
    backoff: Backoff,
    remote: bool,
    now: DateTime<Utc>,
) -> Option<Duration> {
    match failure.kind {
        FailureKind::AuthRequired => {
            s.state = ServiceState::AuthRequired;
            s.health = Health::Unknown;
            s.consecutive_failures = 0;
            s.next_retry_after = None;
            s.last_failure_http_status = None;
            s.last_error = None;
            None
        }
        FailureKind::Transient if remote => {
            s.consecutive_failures = s.consecutive_failures.saturating_add(1);
            s.last_failure_http_status = failure.http_status;
            s.health = Health::Unhealthy;
            let delay = backoff.delay(s.consecutive_failures);
            s.next_retry_after = chrono::Duration::from_std(delay).ok().map(|d| now + d);
            if s.consecutive_failures >= UNREACHABLE_AFTER {
                s.state = ServiceState::Unreachable;
                s.last_error = Some(format!(
                    "server unreachable after {} consecutive failures: {}",
                    s.consecutive_failures, failure.message
                ));
            } else {
                s.state = ServiceState::Failed;
                s.last_error = Some(failure.message.clone());
            }
            Some(delay)
        }
        FailureKind::Transient | FailureKind::Permanent => {
            s.state = ServiceState::Failed;
            s.health = Health::Unhealthy;
            s.next_retry_after = None;
            s.last_failure_http_status = if remote { failure.http_status } else { None };
            s.last_error = Some(failure.message.clone());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use muster_core::resource::mcp_server::ServerType;

    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 9, 21, 12, 0, 0).unwrap()
    }

    fn snap(ty: ServerType) -> BackendSnapshot {
        BackendSnapshot::initial("s", ty, now())
    }

    fn transient(status: Option<u16>) -> Failure {
        Failure::new(FailureKind::Transient, "HTTP 503").with_http_status(status)
    }

    #[test]
    fn remote_failures_count_back_off_and_become_unreachable() {
        let mut s = snap(ServerType::StreamableHttp);
        let b = Backoff::default();
        let mut seen = Vec::new();
        for _ in 0..4 {
            attempt_started(&mut s, now());
            let delay = attempt_failed(&mut s, &transient(Some(503)), b, now());
            seen.push((
                s.state,
                s.consecutive_failures,
                delay.map(|d| d.as_secs()),
                s.next_retry_after.map(|t| (t - now()).num_seconds()),
            ));
        }
        use ServiceState::*;
        assert_eq!(
            seen,
            [
                (Failed, 1, Some(30), Some(30)),
                (Failed, 2, Some(60), Some(60)),
                (Unreachable, 3, Some(120), Some(120)),
                (Unreachable, 4, Some(120), Some(120)),
            ]
        );
        assert_eq!(s.last_failure_http_status, Some(503));
        assert_eq!(
            s.last_error.as_deref(),
            Some("server unreachable after 4 consecutive failures: HTTP 503")
        );
        attempt_started(&mut s, now());
        attempt_succeeded(&mut s, now());
        assert_eq!(
            (
                s.state,
                s.consecutive_failures,
                s.next_retry_after,
                s.last_failure_http_status
            ),
            (Connected, 0, None, None)
        );
        assert_eq!(s.health, Health::Healthy);
    }

    #[test]
    fn auth_required_is_reachable_and_resets_the_count() {
        let mut s = snap(ServerType::Sse);
        attempt_failed(&mut s, &transient(None), Backoff::default(), now());
        let auth = Failure::new(FailureKind::AuthRequired, "401").with_http_status(Some(401));
        assert_eq!(
            attempt_failed(&mut s, &auth, Backoff::default(), now()),
            None
        );
        assert_eq!(
            (
                s.state,
                s.consecutive_failures,
                s.next_retry_after,
                s.last_failure_http_status
            ),
            (ServiceState::AuthRequired, 0, None, None)
        );
    }

    #[test]
    fn stdio_and_permanent_failures_are_not_retried() {
        let mut s = snap(ServerType::Stdio);
        let f = Failure::new(FailureKind::Transient, "exited");
        assert_eq!(attempt_failed(&mut s, &f, Backoff::default(), now()), None);
        assert_eq!((s.state, s.consecutive_failures), (ServiceState::Failed, 0));
        assert_eq!(s.last_error.as_deref(), Some("exited"));

        let mut s = snap(ServerType::StreamableHttp);
        let f = Failure::new(FailureKind::Permanent, "invalid peer certificate");
        assert_eq!(attempt_failed(&mut s, &f, Backoff::default(), now()), None);
        assert_eq!(
            (s.state, s.consecutive_failures, s.next_retry_after),
            (ServiceState::Failed, 0, None)
        );
    }

    #[test]
    fn recovery_of_a_lost_connection_ends_with_success_or_gives_up() {
        let lost = Failure::new(FailureKind::Transient, "connection closed");
        let b = Backoff::default();

        let mut s = snap(ServerType::StreamableHttp);
        attempt_succeeded(&mut s, now());
        assert!(connection_lost(&mut s, &lost, b, false, now()).is_some());
        assert!(s.recovering);
        attempt_started(&mut s, now());
        attempt_failed(&mut s, &transient(Some(503)), b, now());
        assert!(s.recovering, "a second failure keeps recovering");
        attempt_started(&mut s, now());
        attempt_failed(&mut s, &transient(Some(503)), b, now());
        assert_eq!(s.state, ServiceState::Unreachable);
        assert!(!s.recovering, "unreachable gives recovery up");

        let mut s = snap(ServerType::Stdio);
        attempt_succeeded(&mut s, now());
        assert_eq!(connection_lost(&mut s, &lost, b, true, now()), None);
        assert!(s.recovering, "a stdio restart is planned");
        attempt_started(&mut s, now());
        attempt_succeeded(&mut s, now());
        assert!(!s.recovering);

        let mut s = snap(ServerType::Stdio);
        connection_lost(&mut s, &lost, b, true, now());
        attempt_started(&mut s, now());
        attempt_failed(
            &mut s,
            &Failure::new(FailureKind::Transient, "exited"),
            b,
            now(),
        );
        assert!(!s.recovering, "a stdio start that fails is not retried");
    }

    #[test]
    fn success_sets_the_active_state_of_the_type() {
        for (ty, state) in [
            (ServerType::Stdio, ServiceState::Running),
            (ServerType::Sse, ServiceState::Connected),
            (ServerType::StreamableHttp, ServiceState::Connected),
        ] {
            let mut s = snap(ty);
            attempt_started(&mut s, now());
            assert_eq!(s.state, ServiceState::Starting);
            attempt_succeeded(&mut s, now());
            assert_eq!(s.state, state);
            assert!(s.client_ready);
            assert_eq!(s.last_connected, Some(now()));
        }
    }
}
