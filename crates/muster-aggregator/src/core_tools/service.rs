//! The `core_service_*` tools, over [`ServiceControl`].

use async_trait::async_trait;
use muster_core::resource::validate::ValidationErrors;
use muster_core::store::StoreError;
use muster_core::tool::ToolError;
use muster_core::tool::reply::{error, json, string_arg, text};
use rmcp::model::{CallToolResult, JsonObject};
use serde::Serialize;
use serde_json::Value;

use super::CoreTools;
use crate::backend::BackendError;

/// One service as `core_service_list` and `_status` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceStatus {
    /// The service name (the MCPServer name, or `mcp-aggregator`).
    pub name: String,
    /// `MCPServer` or `Aggregator`.
    pub service_type: String,
    /// Lowercase state, e.g. `running`, `connected`, `failed`.
    pub state: String,
    /// `unknown`, `healthy`, `unhealthy` or `checking`.
    pub health: String,
    /// The last error, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Details of the service.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub metadata: Value,
}

/// How a start request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartOutcome {
    /// The service was started.
    Started,
    /// It was running already.
    AlreadyRunning,
    /// The server answered 401: a person must sign in.
    AuthRequired,
}

/// How a stop request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopOutcome {
    /// The service was stopped.
    Stopped,
    /// It was stopped already.
    AlreadyStopped,
}

/// Why a `core_service_*` operation on a service failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// No service and no MCPServer definition of that name.
    #[error("service {name} not found")]
    NotFound {
        /// The name asked for.
        name: String,
    },
    /// The definition cannot run here (a validation rule, or a field the mode does not
    /// support); the violations name each field and rule.
    #[error("{source}")]
    Invalid {
        /// The service.
        name: String,
        /// The violations.
        #[source]
        source: ValidationErrors,
    },
    /// The definition could not be read.
    #[error("{source}")]
    Store {
        /// The service.
        name: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// The service did not start.
    #[error("failed to start service {name}: {source}")]
    Start {
        /// The service.
        name: String,
        /// Why.
        #[source]
        source: BackendError,
    },
    /// The service did not restart.
    #[error("failed to restart service {name}: {source}")]
    Restart {
        /// The service.
        name: String,
        /// Why.
        #[source]
        source: BackendError,
    },
}

/// The running services behind the `core_service_*` tools.
#[async_trait]
pub trait ServiceControl: Send + Sync + std::fmt::Debug {
    /// Every service, sorted by name, the aggregator included.
    async fn list(&self) -> Vec<ServiceStatus>;
    /// One service; `None` when no service of that name exists.
    async fn status(&self, name: &str) -> Option<ServiceStatus>;
    /// Starts a service (registering it from its definition on first use).
    async fn start(&self, name: &str) -> Result<StartOutcome, ServiceError>;
    /// Stops a service.
    async fn stop(&self, name: &str) -> Result<StopOutcome, ServiceError>;
    /// Restarts a service.
    async fn restart(&self, name: &str) -> Result<StartOutcome, ServiceError>;
}

fn auth_required(name: &str) -> String {
    format!(
        "Service '{name}' requires OAuth authentication.

To connect, sign in with:
  \
         core_auth_login(server=\"{name}\")
and open the link it returns in your browser; the \
         server's tools appear for your session once you are signed in."
    )
}

impl CoreTools {
    pub(super) async fn service_list(&self) -> Result<CallToolResult, ToolError> {
        /// `{"services": [...], "total": n}`, written from the statuses as they are.
        #[derive(Serialize)]
        struct List<'a> {
            services: &'a [ServiceStatus],
            total: usize,
        }
        let services = self.inner.services.list().await;
        let list = List {
            services: &services,
            total: services.len(),
        };
        Ok(match serde_json::to_string(&list) {
            Ok(text) => self::text(text),
            Err(e) => error(format!("Failed to format result: {e}")),
        })
    }

    pub(super) async fn service_status(
        &self,
        args: JsonObject,
    ) -> Result<CallToolResult, ToolError> {
        let Some(name) = string_arg(&args, "name") else {
            return Ok(error("name is required"));
        };
        Ok(match self.inner.services.status(&name).await {
            Some(s) => json(&serde_json::to_value(&s).unwrap_or(Value::Null)),
            None => error(format!(
                "Failed to get service status: service {name} not found"
            )),
        })
    }

    pub(super) async fn service_start(
        &self,
        args: JsonObject,
    ) -> Result<CallToolResult, ToolError> {
        let Some(name) = string_arg(&args, "name") else {
            return Ok(error("name is required"));
        };
        Ok(match self.inner.services.start(&name).await {
            Ok(StartOutcome::Started) => text(format!("Successfully started service '{name}'")),
            Ok(StartOutcome::AlreadyRunning) => {
                text(format!("Service '{name}' is already running"))
            }
            Ok(StartOutcome::AuthRequired) => error(auth_required(&name)),
            Err(e) => error(format!("Failed to start service: {e}")),
        })
    }

    pub(super) async fn service_stop(&self, args: JsonObject) -> Result<CallToolResult, ToolError> {
        let Some(name) = string_arg(&args, "name") else {
            return Ok(error("name is required"));
        };
        Ok(match self.inner.services.stop(&name).await {
            Ok(StopOutcome::Stopped) => text(format!("Successfully stopped service '{name}'")),
            Ok(StopOutcome::AlreadyStopped) => text(format!("Service '{name}' is already stopped")),
            Err(e) => error(format!("Failed to stop service: {e}")),
        })
    }

    pub(super) async fn service_restart(
        &self,
        args: JsonObject,
    ) -> Result<CallToolResult, ToolError> {
        let Some(name) = string_arg(&args, "name") else {
            return Ok(error("name is required"));
        };
        Ok(match self.inner.services.restart(&name).await {
            Ok(StartOutcome::AuthRequired) => error(auth_required(&name)),
            Ok(_) => text(format!("Successfully restarted service '{name}'")),
            Err(e) => error(format!("Failed to restart service: {e}")),
        })
    }
}
