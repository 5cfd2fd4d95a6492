//! [`ServiceControl`] over the running services: what the `core_service_*` tools see.

use std::collections::BTreeMap;

use async_trait::async_trait;
use muster_core::resource::mcp_server::McpServerDefinition;
use muster_core::secret::REDACTED;
use serde_json::{Map, Value, json};

use super::Services;
use crate::backend::{Backend, BackendError, ServiceState};
use crate::core_tools::{ServiceControl, ServiceError, ServiceStatus, StartOutcome, StopOutcome};

/// The name of the aggregator's own service entry.
pub const AGGREGATOR_SERVICE: &str = "mcp-aggregator";

/// The keys of `env` or `headers`, each value replaced: a status shows which variables and
/// headers a server gets, never their values.
fn hide_values(map: BTreeMap<String, String>) -> BTreeMap<String, String> {
    map.into_keys().map(|k| (k, REDACTED.to_owned())).collect()
}

fn backend_status(backend: &Backend) -> ServiceStatus {
    let mut snap = backend.snapshot();
    if snap.state == ServiceState::Unknown {
        // A service that was never started is stopped (stdio) or disconnected (remote), as
        // `core_mcpserver_*` say `Stopped` / `Disconnected` of it.
        snap.state = ServiceState::stopped_for(snap.server_type);
    }
    let def = McpServerDefinition::from(backend.spec().clone());
    let mut meta = Map::new();
    meta.insert("name".into(), json!(snap.name));
    meta.insert("type".into(), json!(snap.server_type.as_str()));
    meta.insert("state".into(), json!(snap.state.as_str()));
    meta.insert("health".into(), json!(snap.health));
    meta.insert("autoStart".into(), json!(def.auto_start.unwrap_or(false)));
    for (key, value) in [
        ("command", def.command.map(|v| json!(v))),
        ("args", def.args.map(|v| json!(v))),
        ("url", def.url.map(|v| json!(v))),
        ("env", def.env.map(|v| json!(hide_values(v)))),
        ("headers", def.headers.map(|v| json!(hide_values(v)))),
        ("description", def.description.map(|v| json!(v))),
        ("toolPrefix", def.tool_prefix.map(|v| json!(v))),
        (
            "family",
            def.family.and_then(|v| serde_json::to_value(v).ok()),
        ),
        ("auth", def.auth.and_then(|v| serde_json::to_value(v).ok())),
        ("error", snap.last_error.clone().map(|v| json!(v))),
        ("lastAttempt", snap.last_attempt.map(|v| json!(v))),
        ("nextRetryAfter", snap.next_retry_after.map(|v| json!(v))),
    ] {
        if let Some(v) = value {
            meta.insert(key.into(), v);
        }
    }
    for value in meta.values_mut() {
        backend.redactor().redact_json(value);
    }
    meta.insert("timeout".into(), json!(backend.spec().timeout().as_secs()));
    meta.insert("clientReady".into(), json!(snap.client_ready));
    meta.insert(
        "consecutiveFailures".into(),
        json!(snap.consecutive_failures),
    );
    ServiceStatus {
        name: snap.name.clone(),
        service_type: "MCPServer".to_owned(),
        state: snap.state.as_str().to_owned(),
        health: serde_json::to_value(snap.health)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "unknown".to_owned()),
        error: snap.last_error,
        metadata: Value::Object(meta),
    }
}

impl Services {
    fn aggregator_status(&self) -> ServiceStatus {
        let catalog = self.inner.registry.snapshot();
        let backends: Vec<Backend> = self
            .backends()
            .values()
            .map(|r| r.backend.clone())
            .collect();
        let connected = backends
            .iter()
            .filter(|b| b.snapshot().state.is_active())
            .count();
        let agg = &self.inner.aggregator;
        ServiceStatus {
            name: AGGREGATOR_SERVICE.to_owned(),
            service_type: "Aggregator".to_owned(),
            state: "running".to_owned(),
            health: "healthy".to_owned(),
            error: None,
            metadata: json!({
                "service_type": "aggregator",
                "host": agg.host,
                "port": agg.port,
                "endpoint": agg.endpoint,
                "tools": catalog.tools().len(),
                "resources": catalog.resources().len(),
                "prompts": catalog.prompts().len(),
                "servers_total": backends.len(),
                "servers_connected": connected,
            }),
        }
    }

    /// The backend of `name`, creating the service from its definition on first use.
    async fn backend_or_register(&self, name: &str) -> Result<Backend, ServiceError> {
        if let Some(b) = self.backend(name) {
            return Ok(b);
        }
        let key = self.key_of(name);
        match self.inner.store.get(&key).await {
            Ok(Some(obj)) => {
                self.runnable(&obj)
                    .map_err(|source| ServiceError::Invalid {
                        name: name.to_owned(),
                        source,
                    })?;
                Ok(self.create(name, obj.spec.clone(), obj.spec.restart_requested_at))
            }
            Ok(None) => Err(ServiceError::NotFound {
                name: name.to_owned(),
            }),
            Err(source) => Err(ServiceError::Store {
                name: name.to_owned(),
                source,
            }),
        }
    }
}

#[async_trait]
impl ServiceControl for Services {
    async fn list(&self) -> Vec<ServiceStatus> {
        let mut all: Vec<ServiceStatus> = self.backend_list().iter().map(backend_status).collect();
        all.push(self.aggregator_status());
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    async fn status(&self, name: &str) -> Option<ServiceStatus> {
        if name == AGGREGATOR_SERVICE {
            return Some(self.aggregator_status());
        }
        self.backend(name).map(|b| backend_status(&b))
    }

    async fn start(&self, name: &str) -> Result<StartOutcome, ServiceError> {
        let backend = self.backend_or_register(name).await?;
        if backend.snapshot().state.is_active() {
            return Ok(StartOutcome::AlreadyRunning);
        }
        match backend.start().await {
            Ok(()) => Ok(StartOutcome::Started),
            Err(BackendError::AlreadyRunning { .. }) => Ok(StartOutcome::AlreadyRunning),
            Err(BackendError::AuthRequired { .. }) => Ok(StartOutcome::AuthRequired),
            Err(source) => Err(ServiceError::Start {
                name: name.to_owned(),
                source,
            }),
        }
    }

    async fn stop(&self, name: &str) -> Result<StopOutcome, ServiceError> {
        let Some(backend) = self.backend(name) else {
            return Err(ServiceError::NotFound {
                name: name.to_owned(),
            });
        };
        if matches!(
            backend.snapshot().state,
            ServiceState::Stopped | ServiceState::Disconnected | ServiceState::Unknown
        ) {
            return Ok(StopOutcome::AlreadyStopped);
        }
        backend.stop().await;
        Ok(StopOutcome::Stopped)
    }

    async fn restart(&self, name: &str) -> Result<StartOutcome, ServiceError> {
        let Some(backend) = self.backend(name) else {
            return Err(ServiceError::NotFound {
                name: name.to_owned(),
            });
        };
        match backend.restart().await {
            Ok(()) => Ok(StartOutcome::Started),
            Err(BackendError::AuthRequired { .. }) => Ok(StartOutcome::AuthRequired),
            Err(source) => Err(ServiceError::Restart {
                name: name.to_owned(),
                source,
            }),
        }
    }
}
