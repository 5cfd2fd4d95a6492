//! Per-backend task: writes the backend's status into its definition whenever it changes and
//! records an event for every state transition, and for a tool prefix it comes to share with
//! another server.

use std::time::Duration;

use chrono::{DateTime, Utc};
use muster_core::event::message::Details;
use muster_core::resource::{Condition, ConditionStatus};
use muster_core::store::StoreError;
use tokio_util::sync::CancellationToken;

use super::{Services, per_session};
use muster_core::resource::mcp_server::Health;

use crate::backend::health::PROBE_LOST;
use crate::backend::{Backend, BackendSnapshot, ServiceState};

pub(super) fn spawn(services: Services, name: String, backend: Backend, stop: CancellationToken) {
    tokio::spawn(async move {
        let key = services.key_of(&name);
        let mut changes = backend.changes();
        let mut membership = services.inner.membership.subscribe();
        let mut sessions = services.inner.session_connections.subscribe();
        let mut exchanges = services.inner.exchange_failures.subscribe();
        let first = backend.snapshot();
        let mut last_state = first.state;
        let mut last_health = first.health;
        let mut last_recovering = first.recovering;
        let mut last_written = None;
        let mut collision: Option<(String, DateTime<Utc>)> = None;
        let mut retry = WriteRetry::default();
        loop {
            let now = services
                .inner
                .registry
                .prefix_collisions()
                .into_iter()
                .find(|c| c.involves(&name))
                .map(|c| c.message());
            if now.as_deref() != collision.as_ref().map(|(m, _)| m.as_str()) {
                if let Some(message) = &now {
                    services.warning(&name, PREFIX_COLLISION_EVENT, message.clone());
                }
                collision = now.map(|m| (m, Utc::now()));
            }
            let snapshot = backend.snapshot();
            if snapshot.state != last_state {
                transition_event(
                    &services,
                    &name,
                    last_state,
                    snapshot.state,
                    snapshot.last_error.as_deref(),
                );
                last_state = snapshot.state;
            }
            if health_check_failed(last_health, &snapshot) {
                let error = snapshot.last_error.as_deref();
                services.event(&name, "MCPServerHealthCheckFailed", &with_error(error));
            }
            last_health = snapshot.health;
            if let Some(reason) = recovery_event(last_recovering, &snapshot) {
                let error = (reason == RECOVERY_FAILED)
                    .then_some(snapshot.last_error.as_deref())
                    .flatten();
                services.event(&name, reason, &with_error(error));
            }
            last_recovering = snapshot.recovering;
            let mut status = backend.status();
            status.last_restarted_at = services
                .backends()
                .get(&name)
                .and_then(|r| r.restart_processed);
            let connected = sessions.borrow_and_update().get(&name).copied();
            let broken = exchanges.borrow_and_update().get(&name).cloned();
            per_session::apply(
                &mut status,
                backend.spec(),
                connected.unwrap_or(0),
                broken.as_ref(),
            );
            if let Some((message, since)) = &collision {
                status.conditions.push(prefix_condition(message, *since));
            }
            if last_written.as_ref() != Some(&status) {
                match services.inner.store.set_status(&key, status.clone()).await {
                    Ok(_) => {
                        last_written = Some(status);
                        retry.succeeded();
                    }
                    // The definition is gone; its cleanup stops this task.
                    Err(StoreError::NotFound { .. }) => retry.succeeded(),
                    Err(e) => {
                        tracing::warn!(server = %name, error = %e, "writing the server status failed");
                        retry.failed();
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => break,
                changed = changes.changed() => if changed.is_err() { break },
                changed = membership.changed() => if changed.is_err() { break },
                changed = sessions.changed() => if changed.is_err() { break },
                changed = exchanges.changed() => if changed.is_err() { break },
                () = retry.wait() => {}
            }
        }
    });
}

/// When a failed status write is tried again: after 1 s, doubling up to 30 s, until one
/// succeeds. A status that could not be written is not left stale until the next change.
#[derive(Debug, Default)]
struct WriteRetry {
    delay: Option<Duration>,
}

impl WriteRetry {
    const FIRST: Duration = Duration::from_secs(1);
    const MAX: Duration = Duration::from_secs(30);

    fn succeeded(&mut self) {
        self.delay = None;
    }

    fn failed(&mut self) {
        self.delay = Some(self.delay.map_or(Self::FIRST, |d| (d * 2).min(Self::MAX)));
    }

    /// Ends after the delay when a write failed; never otherwise.
    async fn wait(&self) {
        match self.delay {
            Some(delay) => tokio::time::sleep(delay).await,
            None => std::future::pending().await,
        }
    }
}

/// The reason of the event about a shared tool prefix.
pub(super) const PREFIX_COLLISION_EVENT: &str = "MCPServerToolPrefixCollision";

/// The `type` of the condition about a shared tool prefix.
pub const TOOL_PREFIX_CONDITION: &str = "ToolPrefixConflict";

/// The condition a server sharing its tool prefix carries: `True` while it does.
fn prefix_condition(message: &str, since: DateTime<Utc>) -> Condition {
    Condition {
        type_: TOOL_PREFIX_CONDITION.to_owned(),
        status: ConditionStatus::True,
        reason: "ToolPrefixCollision".to_owned(),
        message: message.to_owned(),
        last_transition_time: Some(since),
        observed_generation: None,
    }
}

fn with_error(error: Option<&str>) -> Details {
    Details {
        error: error.map(str::to_owned),
        ..Details::default()
    }
}

const RECOVERY_FAILED: &str = "MCPServerRecoveryFailed";

/// Whether `now` is the healthy → unhealthy transition the health probe found: a ping that
/// failed while the server stayed connected, or a connection the probe found dead.
fn health_check_failed(before: Health, now: &BackendSnapshot) -> bool {
    before == Health::Healthy
        && now.health == Health::Unhealthy
        && (now.state.is_active() || now.last_error.as_deref() == Some(PROBE_LOST))
}

/// The recovery event between two snapshots, if any: started when a lost connection is to
/// be brought back, succeeded when it is back, failed when recovery gave up (a deliberate
/// stop ends it silently).
fn recovery_event(before: bool, now: &BackendSnapshot) -> Option<&'static str> {
    match (before, now.recovering) {
        (false, true) => Some("MCPServerRecoveryStarted"),
        (true, false) if now.state.is_active() => Some("MCPServerRecoverySucceeded"),
        (true, false) if now.state.is_failed() => Some(RECOVERY_FAILED),
        _ => None,
    }
}

fn transition_event(
    services: &Services,
    name: &str,
    from: ServiceState,
    to: ServiceState,
    error: Option<&str>,
) {
    let none = Details::default();
    let failure = Details {
        error: error.map(str::to_owned),
        ..Details::default()
    };
    match to {
        ServiceState::Starting => services.event(name, "MCPServerStarting", &none),
        ServiceState::Running | ServiceState::Connected => {
            services.event(name, "MCPServerStarted", &none);
            services.event(name, "MCPServerToolsDiscovered", &none);
        }
        ServiceState::Failed | ServiceState::Unreachable => {
            services.event(name, "MCPServerFailed", &failure);
            if from.is_active() {
                services.event(name, "MCPServerToolsUnavailable", &failure);
            }
        }
        ServiceState::AuthRequired => services.event(name, "MCPServerAuthRequired", &none),
        ServiceState::Stopped | ServiceState::Disconnected => {
            services.event(name, "MCPServerStopped", &none);
        }
        _ => {}
    }
}
