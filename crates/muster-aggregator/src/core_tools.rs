//! The `core_*` tools (config, mcpserver, service, events) as one [`ToolProvider`].
//!
//! They are built on the store traits of `muster-core` and on [`ServiceControl`], so they run
//! the same in filesystem and Kubernetes mode. The workflow tools live in `muster-workflow`.

mod catalog;
mod config;
mod events;
mod mcpserver;
mod service;

use std::sync::Arc;

use muster_core::config::ConfigStore;
use muster_core::event::message::Details;
use muster_core::event::{Event, EventLog};
use muster_core::resource::{McpServer, ValidationContext};
use muster_core::store::ResourceStore;
use muster_core::tool::{Catalog, Revision, ToolCall, ToolError, ToolProvider, ToolService};
use rmcp::model::CallToolResult;
use tokio::sync::watch;
use tower::util::BoxCloneSyncService;

pub use service::{ServiceControl, ServiceError, ServiceStatus, StartOutcome, StopOutcome};

/// A session's own state with servers that take per-session sign-in, for the
/// `sessionStatus` and `toolsCount` of `core_mcpserver_list`.
pub trait SessionAuthStatus: Send + Sync + std::fmt::Debug {
    /// `(status, tools)` of `server` for `session` (`connected`, `auth_required`, ...), or
    /// `None` when the server takes no per-session sign-in.
    fn session_status(
        &self,
        session: &muster_core::tool::SessionId,
        server: &str,
    ) -> Option<(&'static str, usize)>;
}

/// The core tools. Cheap to clone.
#[derive(Debug, Clone)]
pub struct CoreTools {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    mcpservers: Arc<dyn ResourceStore<McpServer>>,
    config: Arc<dyn ConfigStore>,
    services: Arc<dyn ServiceControl>,
    events: Option<Arc<dyn EventLog>>,
    namespace: String,
    mode: &'static str,
    validation: ValidationContext,
    catalog: Arc<Catalog>,
    revisions: watch::Sender<Revision>,
    /// The `core_events` follow of each session (a new one replaces the old).
    follows: events::Follows,
    /// Per-session sign-in state of servers.
    session_auth: Option<Arc<dyn SessionAuthStatus>>,
}

/// Builds [`CoreTools`].
#[derive(Debug)]
#[must_use]
pub struct CoreToolsBuilder {
    inner: Inner,
}

impl CoreTools {
    /// Core tools over MCPServer definitions, the configuration and the running services.
    pub fn builder(
        mcpservers: Arc<dyn ResourceStore<McpServer>>,
        config: Arc<dyn ConfigStore>,
        services: Arc<dyn ServiceControl>,
    ) -> CoreToolsBuilder {
        CoreToolsBuilder {
            inner: Inner {
                mcpservers,
                config,
                services,
                events: None,
                namespace: muster_core::DEFAULT_NAMESPACE.to_owned(),
                mode: "filesystem",
                validation: ValidationContext::filesystem(),
                catalog: Arc::new(Catalog {
                    tools: catalog::core_tools(),
                    ..Catalog::default()
                }),
                revisions: watch::Sender::new(Revision::default()),
                follows: events::Follows::default(),
                session_auth: None,
            },
        }
    }

    /// Records an event about `name`, which may be `<namespace>/<name>` for an object of
    /// another namespace.
    fn event(&self, kind: &str, name: &str, reason: &str, details: &Details) {
        if let Some(log) = &self.inner.events {
            let key = muster_core::resource::ObjectKey::qualified(&self.inner.namespace, name);
            log.record(Event::about(
                kind,
                &key.name,
                &key.namespace,
                reason,
                details,
            ));
        }
    }

    async fn call(self, mut call: ToolCall) -> Result<CallToolResult, ToolError> {
        let args = call.take_arguments()?.unwrap_or_default();
        match call.name.as_str() {
            "core_config_get" => self.config_get(),
            "core_config_get_aggregator" => self.config_get_aggregator(),
            "core_config_update_aggregator" => self.config_update_aggregator(args).await,
            "core_config_save" => self.config_save().await,
            "core_config_reload" => self.config_reload().await,
            "core_mcpserver_list" => self.mcpserver_list(args, &call.context).await,
            "core_mcpserver_get" => self.mcpserver_get(args).await,
            "core_mcpserver_create" => self.mcpserver_create(args, &call.context).await,
            "core_mcpserver_update" => self.mcpserver_update(args).await,
            "core_mcpserver_delete" => self.mcpserver_delete(args).await,
            "core_mcpserver_validate" => self.mcpserver_validate(args),
            "core_service_list" => self.service_list().await,
            "core_service_status" => self.service_status(args).await,
            "core_service_start" => self.service_start(args).await,
            "core_service_stop" => self.service_stop(args).await,
            "core_service_restart" => self.service_restart(args).await,
            "core_events" => self.events(args, &call.context).await,
            other => Err(ToolError::UnknownTool {
                name: other.to_owned(),
            }),
        }
    }
}

impl CoreToolsBuilder {
    /// Events are recorded to and queried from `log`.
    pub fn events(mut self, log: Arc<dyn EventLog>) -> Self {
        self.inner.events = Some(log);
        self
    }

    /// Adds each session's sign-in state to `core_mcpserver_list` (`sessionStatus`,
    /// `toolsCount`).
    pub fn session_auth(mut self, status: Arc<dyn SessionAuthStatus>) -> Self {
        self.inner.session_auth = Some(status);
        self
    }

    /// The namespace definitions live in (default `default`).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.inner.namespace = namespace.into();
        self
    }

    /// The rules definitions are validated with; also sets the reported `mode`.
    pub fn validation(mut self, ctx: ValidationContext) -> Self {
        self.inner.mode = if ctx.is_kubernetes() {
            "kubernetes"
        } else {
            "filesystem"
        };
        self.inner.validation = ctx;
        self
    }

    /// The provider.
    pub fn build(self) -> CoreTools {
        CoreTools {
            inner: Arc::new(self.inner),
        }
    }
}

impl ToolProvider for CoreTools {
    fn name(&self) -> &str {
        "core"
    }

    fn catalog(&self) -> Arc<Catalog> {
        self.inner.catalog.clone()
    }

    fn revisions(&self) -> watch::Receiver<Revision> {
        self.inner.revisions.subscribe()
    }

    fn service(&self) -> ToolService {
        let tools = self.clone();
        BoxCloneSyncService::new(tower::service_fn(move |call| tools.clone().call(call)))
    }
}
