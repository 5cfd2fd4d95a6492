//! Per-backend task: writes the backend's status into its definition whenever it changes and
//! records an event for every state transition.

use muster_core::event::message::Details;
use muster_core::resource::ObjectKey;
use muster_core::store::StoreError;
use tokio_util::sync::CancellationToken;

use super::Services;
use crate::backend::{Backend, ServiceState};

pub(super) fn spawn(services: Services, name: String, backend: Backend, stop: CancellationToken) {
    tokio::spawn(async move {
        let key = ObjectKey::new(&services.inner.namespace, &name);
        let mut changes = backend.changes();
        let mut last_state = backend.snapshot().state;
        let mut last_written = None;
        loop {
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
            }
        }
    });
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
