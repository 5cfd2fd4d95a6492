//! Per-backend task: writes the backend's status into its definition whenever it changes and
//! records an event for every state transition.

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
    let detail = error.map(|e| format!(": {e}")).unwrap_or_default();
    match to {
        ServiceState::Starting => {
            services.event(
                name,
                "MCPServerStarting",
                false,
                format!("MCPServer {name} starting"),
            );
        }
        ServiceState::Running | ServiceState::Connected => {
            services.event(
                name,
                "MCPServerStarted",
                false,
                format!("MCPServer {name} service started successfully"),
            );
            services.event(
                name,
                "MCPServerToolsDiscovered",
                false,
                format!("MCPServer {name} tools discovered"),
            );
        }
        ServiceState::Failed | ServiceState::Unreachable => {
            services.event(
                name,
                "MCPServerFailed",
                true,
                format!("MCPServer {name} failed{detail}"),
            );
            if from.is_active() {
                services.event(
                    name,
                    "MCPServerToolsUnavailable",
                    true,
                    format!("MCPServer {name} tools unavailable"),
                );
            }
        }
        ServiceState::AuthRequired => {
            services.event(
                name,
                "MCPServerAuthRequired",
                false,
                format!("MCPServer {name} requires authentication"),
            );
        }
        ServiceState::Stopped | ServiceState::Disconnected => {
            services.event(
                name,
                "MCPServerStopped",
                false,
                format!("MCPServer {name} stopped"),
            );
        }
        _ => {}
    }
}
