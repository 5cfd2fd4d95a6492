//! A fake Kubernetes API server speaking the real wire protocol, for tests that cannot run a
//! real one: a real `kube::Client`, `kubectl` or a `muster serve` process talk to it over
//! HTTP on the loopback interface.
//!
//! It is generic: resource types come from the built-ins (core/v1 Namespaces, Secrets,
//! ConfigMaps, Events; events.k8s.io/v1 Events; coordination.k8s.io/v1 Leases;
//! admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies and their bindings;
//! apiextensions.k8s.io/v1 CustomResourceDefinitions) and from the CRDs clients create, which
//! are then served with their schema validation, CEL rules, status subresource and printer
//! columns. What is emulated and what is not: `docs/testing/fake-apiserver.md`.
//!
//! ```no_run
//! use muster_tests::kube_fake::{FakeApiServer, FakeConfig};
//!
//! # fn main() -> anyhow::Result<()> {
//! let server = FakeApiServer::start(FakeConfig::default())?;
//! let url = server.url();                // http://127.0.0.1:PORT
//! let kubeconfig = server.write_kubeconfig(&std::env::temp_dir().join("kubeconfig"))?;
//! server.apply_crd_yaml(&std::fs::read_to_string("crd.yaml")?)?;
//! server.compact();                      // older resourceVersions now answer 410 Gone
//! # let _ = (url, kubeconfig);
//! # Ok(())
//! # }
//! ```

mod cel_rules;
mod discovery;
mod events;
mod http;
mod kubectl;
mod managed;
mod ops;
mod patch;
mod protobuf;
mod registry;
mod schema;
mod selectors;
mod status;
mod store;
mod table;
mod watch;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, Uri};
use serde_json::Value;

pub use kubectl::{KUBECTL_ENV, Kubectl, KubectlOutput, kubectl_binary};
use store::Store;

/// The largest request body kube-apiserver accepts (3 MiB).
pub const MAX_REQUEST_BODY: usize = 3 * 1024 * 1024;

/// How a fake API server behaves.
#[derive(Debug, Clone)]
pub struct FakeConfig {
    /// The address to listen on; port 0 picks a free port. Loopback by default.
    pub listen: SocketAddr,
    /// How many changes the watch history keeps; a watch from a resourceVersion older than
    /// the window gets a 410 Gone `ERROR` event (like etcd compaction). Default 10 000.
    pub history_window: usize,
    /// How often an idle watch that asked for bookmarks gets a BOOKMARK event. Default 1 s
    /// (kube-apiserver: about a minute).
    pub bookmark_interval: Duration,
    /// The longest a watch runs when the client sets no `timeoutSeconds`; `None` is no
    /// limit. Default 30 minutes (kube-apiserver: 30 to 60 minutes).
    pub watch_timeout: Option<Duration>,
    /// Whether `/api` and `/apis` answer aggregated discovery (`apidiscovery.k8s.io/v2`)
    /// when the client asks for it, as kube-apiserver 1.30+ does. Default true.
    pub aggregated_discovery: bool,
    /// Whether to keep a log of the requests (see [`FakeApiServer::requests`]). Default true.
    pub log_requests: bool,
}

impl Default for FakeConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            history_window: 10_000,
            bookmark_interval: Duration::from_secs(1),
            watch_timeout: Some(Duration::from_secs(1800)),
            aggregated_discovery: true,
            log_requests: true,
        }
    }
}

/// State shared by the request handlers.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) store: Store,
    pub(crate) config: FakeConfig,
    address: Mutex<String>,
    requests: Mutex<Vec<String>>,
    /// Bumped to end every open watch.
    pub(crate) watch_epoch: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    pub(crate) fn server_address(&self) -> String {
        self.address.lock().map(|a| a.clone()).unwrap_or_default()
    }

    pub(crate) fn log_request(&self, method: &Method, uri: &Uri) {
        if self.config.log_requests
            && let Ok(mut r) = self.requests.lock()
        {
            if r.len() >= 100_000 {
                r.remove(0);
            }
            r.push(format!("{method} {uri}"));
        }
    }
}

/// The current time as kube-apiserver writes timestamps (RFC 3339, seconds, UTC).
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A running fake API server; stopped when dropped.
#[derive(Debug)]
pub struct FakeApiServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The axum application serving `shared` (for embedding into a runtime of one's own).
fn app(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new()
        .fallback(
            |State(s): State<Arc<Shared>>,
             method: Method,
             uri: Uri,
             headers: HeaderMap,
             body: Bytes| async move { http::handle(s, method, uri, headers, body).await },
        )
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BODY))
        .with_state(shared)
}

impl FakeApiServer {
    /// Starts a server on its own thread and runtime, so it serves sync and async tests
    /// alike and outlives any test runtime.
    ///
    /// # Errors
    ///
    /// When the address cannot be bound.
    pub fn start(config: FakeConfig) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            store: Store::new(config.history_window),
            config: config.clone(),
            address: Mutex::new(String::new()),
            requests: Mutex::new(Vec::new()),
            watch_epoch: tokio::sync::watch::Sender::new(0),
        });
        let listener = std::net::TcpListener::bind(config.listen)
            .with_context(|| format!("binding the fake API server to {}", config.listen))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        if let Ok(mut a) = shared.address.lock() {
            *a = addr.to_string();
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("fake-apiserver")
            .build()?;
        let app_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fake-apiserver".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let server = axum::serve(listener, app(app_shared));
                    tokio::select! {
                        _ = server => {}
                        _ = stopped => {}
                    }
                });
                // open watches are cut, as when a real server goes away
                runtime.shutdown_background();
            })?;
        Ok(Self {
            shared,
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The socket address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, the server URL for `kube::Config::new` or a kubeconfig.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig (context `fake`, namespace `default`) pointing at this server.
    pub fn kubeconfig(&self) -> String {
        kubeconfig_for(&self.url(), "default")
    }

    /// Writes [`Self::kubeconfig`] to `path`, returning the path.
    ///
    /// # Errors
    ///
    /// When the file cannot be written.
    pub fn write_kubeconfig(&self, path: &Path) -> anyhow::Result<PathBuf> {
        std::fs::write(path, self.kubeconfig())
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(path.to_path_buf())
    }

    /// Creates the CRDs of a (multi-document) YAML or JSON text, as `kubectl create -f` would.
    ///
    /// # Errors
    ///
    /// When a document does not parse or the server refuses it (with its Status message).
    pub fn apply_crd_yaml(&self, text: &str) -> anyhow::Result<()> {
        for doc in yaml_documents(text)? {
            ops::bootstrap_crd(&self.shared.store, doc).map_err(|e| anyhow!("{}", e.message))?;
        }
        Ok(())
    }

    /// Forgets the watch history: a watch or continue from any earlier resourceVersion gets
    /// 410 Gone, as after an etcd compaction.
    pub fn compact(&self) {
        self.shared.store.lock().compact();
    }

    /// Ends every open watch, as a restarting API server does; clients re-watch from the
    /// last resourceVersion they saw (and get 410 Gone if it was compacted meanwhile).
    pub fn close_watches(&self) {
        self.shared.watch_epoch.send_modify(|e| *e += 1);
    }

    /// The current resourceVersion (the last one handed out).
    pub fn resource_version(&self) -> u64 {
        self.shared.store.lock().rv
    }

    /// The requests served so far, as `METHOD /path?query`.
    pub fn requests(&self) -> Vec<String> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Stops serving; open watches end.
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A kubeconfig for a server URL, with context `fake` and the given default namespace.
pub fn kubeconfig_for(url: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {url}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: {namespace}\ncurrent-context: fake\nusers:\n- name: fake\n  user:\n    token: fake-token\n"
    )
}

/// Splits a multi-document YAML (or a JSON document) into objects, skipping empty ones.
///
/// # Errors
///
/// When a document does not parse.
pub fn yaml_documents(text: &str) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    for doc in serde_norway::Deserializer::from_str(text) {
        let v: Value = serde::Deserialize::deserialize(doc).context("parsing a YAML document")?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}
