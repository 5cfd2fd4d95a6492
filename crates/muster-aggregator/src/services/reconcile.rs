//! `Reconcile<McpServer>`: applies the desired set of servers to the running services.

use muster_core::event::message::Details;
use std::sync::Arc;

use async_trait::async_trait;
use muster_core::reconcile::{Action, Reconcile, ReconcileError};
use muster_core::resource::mcp_server::{Health, McpServerSpec, McpServerState, McpServerStatus};
use muster_core::resource::{McpServer, Object};

use super::Services;
use crate::backend::ServiceState;

/// The MCPServer reconciler: starts new servers with `autoStart`, restarts servers whose
/// runtime-relevant settings changed or that carry a new `restartRequestedAt`, stops
/// suspended and deleted ones. Idempotent.
#[derive(Debug, Clone)]
pub struct McpServerReconciler {
    services: Services,
}

impl McpServerReconciler {
    /// A reconciler driving `services`.
    pub fn new(services: Services) -> Self {
        Self { services }
    }
}

/// Whether a service is not running and not trying to.
fn is_stopped(state: ServiceState) -> bool {
    matches!(
        state,
        ServiceState::Stopped | ServiceState::Disconnected | ServiceState::Unknown
    )
}

/// Whether a change of spec needs the server restarted: anything but the description,
/// `suspended`, `restartRequestedAt`, and `autoStart` going off.
fn runtime_changed(old: &McpServerSpec, new: &McpServerSpec) -> bool {
    old.transport != new.transport
        || old.tool_prefix != new.tool_prefix
        || old.family != new.family
        || old.timeout != new.timeout
        || old.progress_max_duration != new.progress_max_duration
        || (!old.auto_start && new.auto_start)
}

impl McpServerReconciler {
    fn spawn_start(&self, name: &str) {
        if let Some(backend) = self.services.backend(name) {
            tokio::spawn(async move {
                if let Err(e) = backend.start().await {
                    tracing::info!(error = %e, "server did not start");
                }
            });
        }
    }

    async fn refuse(
        &self,
        obj: &Object<McpServer>,
        message: String,
    ) -> Result<Action, ReconcileError> {
        self.services
            .remove(&self.services.service_name(&obj.key()))
            .await;
        let status = McpServerStatus {
            state: Some(McpServerState::Failed),
            health: Some(Health::Unhealthy),
            last_error: Some(message),
            ..McpServerStatus::default()
        };
        if obj.status.as_ref() != Some(&status) {
            self.services
                .inner
                .store
                .set_status(&obj.key(), status)
                .await?;
        }
        Ok(Action::await_change())
    }
}

#[async_trait]
impl Reconcile<McpServer> for McpServerReconciler {
    async fn apply(&self, obj: Arc<Object<McpServer>>) -> Result<Action, ReconcileError> {
        let service = self.services.service_name(&obj.key());
        let name = service.as_str();
        let spec = &obj.spec;
        if let Err(violations) = self.services.runnable(&obj) {
            return self.refuse(&obj, violations.to_string()).await;
        }
        let wants_running = !spec.suspended;
        let existing = self.services.backends().get(name).cloned();
        match existing {
            None => {
                self.services
                    .create(name, spec.clone(), spec.restart_requested_at);
                if spec.auto_start && wants_running {
                    self.spawn_start(name);
                }
            }
            Some(running) => {
                let backend = &running.backend;
                let active = backend.snapshot().state.is_active();
                if runtime_changed(backend.spec(), spec) {
                    self.services
                        .event(name, "MCPServerRestarting", &Details::default());
                    self.services
                        .create(name, spec.clone(), running.restart_processed);
                    if wants_running && (active || spec.auto_start) {
                        self.spawn_start(name);
                    }
                } else if !wants_running && !is_stopped(backend.snapshot().state) {
                    backend.stop().await;
                } else if wants_running && backend.spec().suspended && spec.auto_start {
                    self.spawn_start(name);
                }
                if let Some(requested) = spec.restart_requested_at
                    && running.restart_processed != Some(requested)
                {
                    if let Some(r) = self.services.backends().get_mut(name) {
                        r.restart_processed = Some(requested);
                    }
                    if wants_running {
                        let backend = backend.clone();
                        tokio::spawn(async move {
                            if let Err(e) = backend.restart().await {
                                tracing::info!(error = %e, "requested restart failed");
                            }
                        });
                    }
                }
            }
        }
        Ok(Action::await_change())
    }

    async fn cleanup(&self, obj: Arc<Object<McpServer>>) -> Result<Action, ReconcileError> {
        let service = self.services.service_name(&obj.key());
        if self.services.remove(&service).await {
            self.services
                .event(&service, "MCPServerStopped", &Details::default());
        }
        Ok(Action::await_change())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_runtime_settings_restart() {
        let base = McpServerSpec::stdio("echo", ["a".to_owned()]);
        let mut described = base.clone();
        described.description = Some("new words".into());
        assert!(!runtime_changed(&base, &described));
        let mut prefixed = base.clone();
        prefixed.tool_prefix = Some("p".into());
        assert!(runtime_changed(&base, &prefixed));
        let mut auto = base.clone();
        auto.auto_start = true;
        assert!(runtime_changed(&base, &auto));
        assert!(
            !runtime_changed(&auto, &base),
            "autoStart going off does not restart"
        );
    }
}
