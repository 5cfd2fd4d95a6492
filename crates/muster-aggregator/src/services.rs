//! The running services: one [`Backend`] per MCPServer, registered with the [`Registry`],
//! their status written back to the definition store, and the MCPServer reconciler that
//! starts, restarts and stops them as definitions change.

mod control;
pub mod metrics;
mod per_session;
mod reconcile;
mod sync;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};
use muster_core::event::message::Details;
use muster_core::event::{Event, EventSink, EventType};
use muster_core::resource::mcp_server::McpServerSpec;
use muster_core::resource::validate::ValidationErrors;
use muster_core::resource::{McpServer, Object, ObjectKey, ValidationContext};
use muster_core::store::ResourceStore;

pub use control::AGGREGATOR_SERVICE;
pub use reconcile::McpServerReconciler;
pub use sync::TOOL_PREFIX_CONDITION;

use crate::backend::{Backend, BackendOptions};
use crate::naming::BackendNaming;
use crate::registry::Registry;

/// Where the aggregator itself listens, for the `mcp-aggregator` service entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AggregatorEndpoint {
    /// The host.
    pub host: String,
    /// The port.
    pub port: u16,
    /// The MCP endpoint URL.
    pub endpoint: String,
}

/// The set of running services. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Services {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    registry: Registry,
    options: BackendOptions,
    store: Arc<dyn ResourceStore<McpServer>>,
    events: Option<Arc<dyn EventSink>>,
    namespace: String,
    validation: ValidationContext,
    aggregator: AggregatorEndpoint,
    backends: Mutex<BTreeMap<String, Running>>,
    /// Changes whenever a service is created or removed (prefix collisions may change).
    membership: tokio::sync::watch::Sender<u64>,
    /// How many sessions hold a connection of their own to each server (sign-ins, token
    /// forwarding and exchange), as the sign-in pool last reported.
    session_connections: tokio::sync::watch::Sender<SessionConnections>,
    /// The token exchanges that failed for every caller, by server, until one succeeds.
    exchange_failures: tokio::sync::watch::Sender<ExchangeFailures>,
}

/// A token exchange that fails for every caller of a server: the `Ready` reason
/// (`TokenExchangeEndpoint`, `TokenExchangeCredentials`, `TokenExchangeConnector`) and the
/// error, without credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangeFailure {
    /// The `Ready` condition's reason.
    pub reason: &'static str,
    /// What failed.
    pub error: String,
}

/// The token exchanges failing for every caller, by server name.
pub type ExchangeFailures = Arc<BTreeMap<String, ExchangeFailure>>;

/// How many sessions hold a connection of their own to each server, by server name.
pub type SessionConnections = Arc<BTreeMap<String, usize>>;

/// A backend with the bookkeeping its definition needs.
#[derive(Debug, Clone)]
struct Running {
    backend: Backend,
    /// The `spec.restartRequestedAt` already processed.
    restart_processed: Option<DateTime<Utc>>,
    /// Stops the status-sync task of this backend.
    stop_sync: tokio_util::sync::CancellationToken,
}

/// Builds [`Services`].
#[derive(Debug)]
#[must_use]
pub struct ServicesBuilder {
    inner: Inner,
}

impl ServicesBuilder {
    /// Events about servers go to `sink`.
    pub fn events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.inner.events = Some(sink);
        self
    }

    /// The namespace of the definitions (default `default`).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.inner.namespace = namespace.into();
        self
    }

    /// The rules definitions are checked with before a server starts (default: filesystem).
    pub fn validation(mut self, ctx: ValidationContext) -> Self {
        self.inner.validation = ctx;
        self
    }

    /// Where the aggregator listens.
    pub fn aggregator(mut self, endpoint: AggregatorEndpoint) -> Self {
        self.inner.aggregator = endpoint;
        self
    }

    /// The services.
    pub fn build(self) -> Services {
        Services {
            inner: Arc::new(self.inner),
        }
    }
}

impl Services {
    /// Services whose backends use `options`, registered with `registry`, with status written
    /// through `store`.
    pub fn builder(
        registry: Registry,
        options: BackendOptions,
        store: Arc<dyn ResourceStore<McpServer>>,
    ) -> ServicesBuilder {
        ServicesBuilder {
            inner: Inner {
                registry,
                options,
                store,
                events: None,
                namespace: muster_core::DEFAULT_NAMESPACE.to_owned(),
                validation: ValidationContext::filesystem(),
                aggregator: AggregatorEndpoint::default(),
                backends: Mutex::default(),
                membership: tokio::sync::watch::Sender::new(0),
                session_connections: tokio::sync::watch::Sender::new(Arc::default()),
                exchange_failures: tokio::sync::watch::Sender::new(Arc::default()),
            },
        }
    }

    /// Records how many sessions hold a connection of their own to each server (the
    /// sign-in pool reports it); a server served per session shows `Connected` while one
    /// does and `Awaiting Session` otherwise.
    pub fn report_session_connections(&self, counts: BTreeMap<String, usize>) {
        self.inner.session_connections.send_if_modified(|current| {
            if **current == counts {
                return false;
            }
            *current = Arc::new(counts);
            true
        });
    }

    /// Records that the token exchange of `server` fails for every caller (`Some`), or
    /// works again (`None`: an exchange succeeded, the server restarted or changed). A
    /// server served per session is `Failed` while such a failure stands.
    pub fn report_exchange_failure(&self, server: &str, failure: Option<ExchangeFailure>) {
        self.inner.exchange_failures.send_if_modified(|current| {
            if current.get(server) == failure.as_ref() {
                return false;
            }
            let mut next = (**current).clone();
            match failure {
                Some(f) => next.insert(server.to_owned(), f),
                None => next.remove(server),
            };
            *current = Arc::new(next);
            true
        });
    }

    /// The registry the backends are registered with.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The backend of `name`, if a service exists for it.
    pub fn backend(&self, name: &str) -> Option<Backend> {
        self.backends().get(name).map(|r| r.backend.clone())
    }

    /// Changes whenever a service is created, replaced or removed.
    pub fn membership(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.membership.subscribe()
    }

    /// The names of every service, sorted.
    pub fn names(&self) -> Vec<String> {
        self.backends().keys().cloned().collect()
    }

    /// The current state of every service, sorted by server name.
    pub fn snapshots(&self) -> Vec<crate::backend::BackendSnapshot> {
        self.backend_list().iter().map(Backend::snapshot).collect()
    }

    /// The audiences the ID token forwarded to servers must carry: the
    /// `spec.auth.requiredAudiences` of every server that receives the caller's identity
    /// (`forwardToken` or `forwardIdentity`), sorted, each once. muster's OAuth server asks
    /// its provider for them at each sign-in.
    pub fn required_audiences(&self) -> Vec<String> {
        let mut audiences = std::collections::BTreeSet::new();
        for backend in &self.backend_list() {
            let Some(auth) = backend
                .spec()
                .transport
                .remote()
                .and_then(|r| r.auth.as_ref())
            else {
                continue;
            };
            if auth.forward_token || auth.forward_identity {
                audiences.extend(auth.required_audiences.iter().cloned());
            }
        }
        audiences.into_iter().collect()
    }

    /// Stops every service (on shutdown): children are killed and reaped.
    pub async fn stop_all(&self) {
        let all: Vec<Running> = self.backends().values().cloned().collect();
        let stops = all.iter().map(|r| {
            r.stop_sync.cancel();
            r.backend.stop()
        });
        futures::future::join_all(stops).await;
    }

    /// Every service's backend, sorted by server name, copied out of the lock.
    fn backend_list(&self) -> Vec<Backend> {
        self.backends()
            .values()
            .map(|r| r.backend.clone())
            .collect()
    }

    fn backends(&self) -> MutexGuard<'_, BTreeMap<String, Running>> {
        self.inner
            .backends
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The name of the service of the MCPServer `key`: its name in muster's namespace,
    /// `<namespace>/<name>` in another.
    pub fn service_name(&self, key: &ObjectKey) -> String {
        key.name_in(&self.inner.namespace)
    }

    /// The MCPServer a service name stands for.
    fn key_of(&self, service: &str) -> ObjectKey {
        ObjectKey::qualified(&self.inner.namespace, service)
    }

    /// Whether this muster can run `obj`: valid in its mode (with the rules of its name and
    /// namespace), without settings no mode honours yet and (in filesystem mode) without
    /// settings only Kubernetes mode honours; otherwise every reason.
    fn runnable(&self, obj: &Object<McpServer>) -> Result<(), ValidationErrors> {
        let spec = &obj.spec;
        let key = obj.key();
        muster_core::resource::mcp_server::McpServerDefinition::from(spec.clone()).validate_named(
            &key.name,
            &key.namespace,
            &self.inner.validation,
        )?;
        let unsupported = if self.inner.validation.is_kubernetes() {
            spec.unsupported_in_any_mode()
        } else {
            spec.unsupported_in_filesystem_mode()
        };
        if !unsupported.is_empty() {
            return Err(unsupported);
        }
        Ok(())
    }

    /// Records an event of `reason` about the server `name`, in the original's wording.
    /// Records a warning of `reason` with its own `message`, for reasons the original has no
    /// template for.
    fn warning(&self, service: &str, reason: &str, message: String) {
        if let Some(sink) = &self.inner.events {
            let key = self.key_of(service);
            sink.record(Event::new(
                "MCPServer",
                &key.name,
                &key.namespace,
                reason,
                EventType::Warning,
                message,
            ));
        }
    }

    pub(crate) fn event(&self, service: &str, reason: &str, details: &Details) {
        if let Some(sink) = &self.inner.events {
            let key = self.key_of(service);
            sink.record(Event::about(
                "MCPServer",
                &key.name,
                &key.namespace,
                reason,
                details,
            ));
        }
    }

    /// Creates the service of `name` from `spec`, registers it and starts its status sync.
    /// Replaces (and stops) an existing one.
    fn create(
        &self,
        name: &str,
        spec: McpServerSpec,
        restart_processed: Option<DateTime<Utc>>,
    ) -> Backend {
        let key = self.key_of(name);
        let options = self.inner.options.clone().with_namespace(&key.namespace);
        let backend = Backend::new(name, spec.clone(), options);
        // A server of another namespace is named `<namespace>/<name>`; its prefix is built
        // from its own name (or toolPrefix) and its namespace, never from that service name.
        let tool_prefix = match &spec.tool_prefix {
            Some(p) if !p.is_empty() => Some(p.clone()),
            _ if key.namespace != self.inner.namespace => Some(key.name.clone()),
            _ => None,
        };
        let naming = BackendNaming {
            namespace: Some(key.namespace),
            tool_prefix,
            family: spec.family.clone(),
        };
        self.inner
            .registry
            .upsert_backend(name, naming, Arc::new(backend.clone()));
        self.inner
            .membership
            .send_modify(|n| *n = n.wrapping_add(1));
        let stop_sync = tokio_util::sync::CancellationToken::new();
        let running = Running {
            backend: backend.clone(),
            restart_processed,
            stop_sync: stop_sync.clone(),
        };
        let previous = self.backends().insert(name.to_owned(), running);
        if let Some(old) = previous {
            old.stop_sync.cancel();
            let old = old.backend;
            tokio::spawn(async move { old.stop().await });
        }
        sync::spawn(self.clone(), name.to_owned(), backend.clone(), stop_sync);
        backend
    }

    /// Stops and forgets the service of `name`; returns whether one existed.
    async fn remove(&self, name: &str) -> bool {
        let removed = self.backends().remove(name);
        self.inner.registry.remove_backend(name);
        self.inner
            .membership
            .send_modify(|n| *n = n.wrapping_add(1));
        match removed {
            Some(r) => {
                r.stop_sync.cancel();
                r.backend.stop().await;
                true
            }
            None => false,
        }
    }
}
