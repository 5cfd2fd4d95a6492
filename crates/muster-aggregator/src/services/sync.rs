//! Per-backend task: writes the backend's status into its definition whenever it changes and
//! records an event for every state transition, and for a tool prefix it comes to share with
//! another server.

use chrono::{DateTime, Utc};
use muster_core::event::message::Details;
use muster_core::resource::{Condition, ConditionStatus, ObjectKey};
use muster_core::store::StoreError;
use tokio_util::sync::CancellationToken;

use super::Services;
use crate::backend::{Backend, ServiceState};

pub(super) fn spawn(services: Services, name: String, backend: Backend, stop: CancellationToken) {
    tokio::spawn(async move {
        let key = ObjectKey::new(&services.inner.namespace, &name);
        let mut changes = backend.changes();
        let mut membership = services.inner.membership.subscribe();
        let mut last_state = backend.snapshot().state;
        let mut last_written = None;
        let mut collision: Option<(String, DateTime<Utc>)> = None;
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
            let mut status = backend.status();
            status.last_restarted_at = services
                .backends()
                .get(&name)
                .and_then(|r| r.restart_processed);
            if let Some((message, since)) = &collision {
                status.conditions.push(prefix_condition(message, *since));
            }
            if last_written.as_ref() != Some(&status) {
                match services.inner.store.set_status(&key, status.clone()).await {
                    Ok(_) => last_written = Some(status),
                    // The definition is gone; its cleanup stops this task.
                    Err(StoreError::NotFound { .. }) => {}
                    Err(e) => {
                        tracing::warn!(server = %name, error = %e, "writing the server status failed")
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => break,
                changed = changes.changed() => if changed.is_err() { break },
                changed = membership.changed() => if changed.is_err() { break },
            }
        }
    });
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
