//! `muster serve`: composes the stores, the services, the tool providers and the MCP front
//! door for filesystem mode, and runs them until SIGINT or SIGTERM.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use muster_aggregator::auth::{BackendAuth, ClientSettings};
use muster_aggregator::backend::{BackendOptions, ProcessRegistry};
use muster_aggregator::core_tools::CoreTools;
use muster_aggregator::naming::{FamilyDescriptions, NamingOptions};
use muster_aggregator::registry::Registry;
use muster_aggregator::server::{Aggregator, ConnectionLimits, SessionLimits};
use muster_aggregator::services::{AggregatorEndpoint, McpServerReconciler, Services};
use muster_core::ValidationContext;
use muster_core::config::{AggregatorLimits, AggregatorTransport, FamilyDescriptionRule};
use muster_core::resource::execution::RetentionPolicy;
use muster_core::resource::{McpServer, Workflow};
use muster_core::store::{ExecutionStore, InFlightExecutions, ResourceStore, STOPPED_ERROR};
use muster_core::{BroadcastEventLog, EventLog, EventSink};
use muster_fs::driver::Driver;
use muster_fs::{
    ConfigDir, EventLogOptions, FsConfigStore, FsEventLog, FsExecutionStore, FsStore, Layout,
};
use muster_k8s::controller::ControllerOptions;
use muster_k8s::{Leadership, run_controller};
use muster_workflow::{Engine, WorkflowReconciler, WorkflowTools};

use super::paths::expand_home;
use crate::cli::ServeArgs;

/// Where stdio servers' process groups are recorded, under the config directory.
const PROCESS_STATE_DIR: &str = ".muster-state/processes";

mod example;
mod kubernetes;
mod metrics;
mod oauth;
mod ready;
mod secrets;

/// How many events a `core_events` follower may fall behind before it misses some.
const FOLLOW_BUFFER: usize = 1024;

/// How often expired execution records are pruned.
const RETENTION_INTERVAL: Duration = Duration::from_secs(3600);

/// What a run of the server tells and listens to besides signals (`muster standalone`).
#[derive(Debug, Default)]
pub(crate) struct Hooks {
    /// Told the MCP endpoint once the listener is bound.
    pub(crate) listening: Option<tokio::sync::oneshot::Sender<String>>,
    /// Stops the server like SIGTERM when it completes (or its sender is dropped).
    pub(crate) stop: Option<tokio::sync::oneshot::Receiver<()>>,
}

/// Runs the server until a shutdown signal.
pub(crate) fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    run_with(args, Hooks::default())
}

/// Runs the server until a shutdown signal or the stop of `hooks`.
pub(crate) fn run_with(args: &ServeArgs, hooks: Hooks) -> anyhow::Result<ExitCode> {
    // Kept until the runtime is gone: the example's directory goes when nothing can write into
    // it any more (status write-back and the event log run on the runtime until its shutdown).
    let example = args.example.then(example::materialize).transpose()?;
    let root = match &example {
        Some(dir) => dir.path().to_path_buf(),
        None => expand_home(&args.config_path),
    };
    let runtime = runtime().context("cannot start the async runtime")?;
    let outcome = runtime.block_on(serve(args, root, hooks));
    runtime.shutdown_timeout(Duration::from_secs(1));
    if let Some(dir) = example {
        let path = dir.path().to_path_buf();
        if let Err(e) = dir.close() {
            eprintln!(
                "muster: cannot remove the example directory {}: {e}",
                path.display()
            );
        }
    }
    outcome
}

/// The runtime `muster serve` runs on: one worker thread per CPU muster may run on, or, on
/// a single CPU, the current-thread scheduler, which skips what only matters between workers
/// (work stealing, the injection queue, waking a sibling worker).
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    runtime_for(std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
}

/// The runtime for `cpus` CPUs.
fn runtime_for(cpus: usize) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = if cpus == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    builder.enable_all().build()
}

async fn serve(
    args: &ServeArgs,
    root: std::path::PathBuf,
    hooks: Hooks,
) -> anyhow::Result<ExitCode> {
    let shutdown = shutdown_signal_or(hooks.stop);
    std::fs::create_dir_all(&root)
        .with_context(|| format!("cannot create config directory {}", root.display()))?;
    let layout = Layout::new(&root);
    let loaded = ConfigDir::new(&root)
        .load()
        .context("cannot read the config directory")?;
    // Settings this muster cannot honour (OAuth server, admin UI) are errors of the config
    // file, so `muster validate` reports the same.
    if let Err(e) = &loaded.config.result {
        bail!("{e}");
    }
    let mut config = loaded.config_or_default();
    let mut problems = config.limits.problems();
    problems.extend(config.namespace_problems().iter().map(ToString::to_string));
    if !problems.is_empty() {
        bail!("config.yaml: {}", problems.join("; "));
    }
    if let Some(port) = args.port {
        config.aggregator.port = port;
    }
    oauth::apply_flags(args, &mut config);
    if let Some(problem) = config.unsupported_settings().first() {
        bail!("{problem}");
    }
    let extra_roots = oauth::extra_roots(&config)?;
    let front_door_auth = oauth::front_door(&config, &extra_roots)?;
    let namespace = config.namespace().to_owned();
    let mut kube = if kubernetes::wanted(&root, config.kubernetes) {
        let watched = muster_k8s::store::Namespaces::from_setting(&config.mcp_server_namespaces);
        Some(kubernetes::connect(&namespace, watched, secrets::rules(&root)).await?)
    } else {
        if !config.mcp_server_namespaces.is_empty() {
            tracing::warn!(
                "mcpServerNamespaces applies to Kubernetes mode only; filesystem mode ignores it"
            );
        }
        for problem in loaded.mcp_servers.iter().filter_map(|l| l.error()) {
            tracing::warn!(%problem, "MCPServer definition skipped");
        }
        for problem in loaded.workflows.iter().filter_map(|l| l.error()) {
            tracing::warn!(%problem, "Workflow definition skipped");
        }
        None
    };
    let kube_probe = kube
        .as_ref()
        .map(|k| (k.client.clone(), k.mcpservers.api().clone()));
    let validation = match kube {
        Some(_) => ValidationContext::kubernetes(&namespace),
        None => ValidationContext::filesystem(),
    };

    // Stores.
    let stores = match &kube {
        Some(k) => Stores {
            mcpservers: Arc::new(k.mcpservers.clone()),
            workflows: Arc::new(k.workflows.clone()),
            executions: k.executions.clone(),
            events: k.events.clone(),
        },
        None => fs_stores(&root, &layout, &namespace, &config.limits.events).await?,
    };
    let Stores {
        mcpservers,
        workflows,
        executions,
        events,
    } = stores;
    // Runs this process begins, so a stop records the unfinished ones (not other replicas').
    let in_flight = Arc::new(InFlightExecutions::new(executions));
    let executions: Arc<dyn ExecutionStore> = in_flight.clone();
    let events = Arc::new(BroadcastEventLog::new(events, FOLLOW_BUFFER));

    // Services and tools.
    let mut naming = NamingOptions::default();
    naming.muster_prefix = config.aggregator.muster_prefix.clone();
    if kube.is_some() {
        // Servers of other namespaces get `<namespace>_` in front of their prefix.
        naming.home_namespace = Some(namespace.clone());
    }
    naming.family_descriptions = match config.aggregator.family_descriptions {
        FamilyDescriptionRule::MustMatch => FamilyDescriptions::MustMatch,
        FamilyDescriptionRule::Majority => FamilyDescriptions::Majority,
    };
    let metrics = metrics::Metrics::new(config.observability.metrics.enabled);
    let registry = metrics.registry(Registry::builder().naming(naming)).build();
    // stdio servers' groups left by a muster that was killed go first.
    let processes = ProcessRegistry::new(root.join(PROCESS_STATE_DIR));
    let reaped = processes.reap_stale();
    if reaped > 0 {
        tracing::warn!(
            count = reaped,
            "killed processes of stdio servers left by a previous muster"
        );
    }
    let mut options = BackendOptions::from_env()?
        .with_namespace(&namespace)
        .with_redactions(crate::logging::redactions().clone())
        .with_max_result_bytes(config.limits.backends.max_result_bytes)
        .with_process_registry(processes)
        .with_extra_roots(extra_roots.clone());
    if let Some(reader) = kube.as_mut().and_then(|k| k.secrets.take()) {
        options = options.with_secrets(Arc::new(secrets::Resolver(reader)));
    }
    let endpoint = config.aggregator.endpoint();
    let services = Services::builder(registry.clone(), options, mcpservers.clone())
        .events(events.clone() as Arc<dyn EventSink>)
        .namespace(&namespace)
        .validation(validation.clone())
        .aggregator(AggregatorEndpoint {
            host: config.aggregator.host.clone(),
            port: config.aggregator.port,
            endpoint: endpoint.clone(),
        })
        .build();
    let config_store = Arc::new(FsConfigStore::new(&layout, config.clone()));
    let client_settings =
        ClientSettings::from_config(&config.aggregator).with_extra_roots(extra_roots);
    // With the OAuth server's storage in Valkey, sign-ins to protected MCP servers are kept
    // there too, so every replica finishes and uses the sign-ins any of them started.
    let backend_auth = match front_door_auth
        .as_ref()
        .and_then(|server| server.shared_sign_in_stores())
    {
        Some(stores) => {
            tracing::info!(
                "sign-ins to protected MCP servers are kept in the OAuth server's Valkey storage"
            );
            BackendAuth::with_stores(
                client_settings,
                services.clone(),
                stores.grants,
                stores.pending,
            )?
        }
        None => BackendAuth::new(client_settings, services.clone())?,
    };
    // A session whose sign-in to muster ends loses its sign-ins to protected MCP servers.
    if let Some(server) = &front_door_auth {
        let auth = backend_auth.clone();
        server.on_session_end(Box::new(move |session| {
            let auth = auth.clone();
            tokio::spawn(async move { auth.end_session(&session).await });
        }));
    }
    let core = CoreTools::builder(mcpservers.clone(), config_store, Arc::new(services.clone()))
        .session_auth(Arc::new(backend_auth.clone()))
        .events(events.clone())
        .namespace(&namespace)
        .validation(validation)
        .build();
    let engine = metrics
        .engine(Engine::builder(registry.service(), executions.clone()))
        .events(events.clone() as Arc<dyn EventSink>)
        .namespace(&namespace)
        .limits(config.limits.workflows.clone())
        .build();
    let workflow_tools = WorkflowTools::builder(
        workflows.clone(),
        executions.clone(),
        engine,
        Arc::new(registry.clone()),
    )
    .events(events.clone() as Arc<dyn EventSink>)
    .namespace(&namespace)
    .build();
    workflow_tools
        .refresh()
        .await
        .context("cannot list workflows")?;
    tokio::spawn(workflow_tools.clone().watch());
    registry.set_core(Arc::new(workflow_tools));
    registry.set_core(Arc::new(core));
    registry.set_core(Arc::new(backend_auth.tools()));

    // Reconcilers: driven by the stores' watch streams, or by kube-runtime controllers.
    let workflow_reconciler = Arc::new(
        WorkflowReconciler::new(workflows.clone())
            .with_events(events.clone() as Arc<dyn EventSink>),
    );
    let server_reconciler = Arc::new(McpServerReconciler::new(services.clone()));
    let mut heartbeat = None;
    let leadership = match kube {
        Some(k) => {
            tokio::spawn(k.heartbeat.clone().run());
            tokio::spawn(sweep_interrupted(k.interrupted, k.leadership.clone()));
            heartbeat = Some(k.heartbeat);
            let options = ControllerOptions {
                leadership: Some(k.leadership.clone()),
                ..ControllerOptions::default()
            };
            tokio::spawn(run_controller(
                k.workflows,
                workflow_reconciler,
                options.clone(),
            ));
            tokio::spawn(run_controller(k.mcpservers, server_reconciler, options));
            tokio::spawn(k.elector.run());
            k.leadership
        }
        None => {
            tokio::spawn(Driver::new(workflows, workflow_reconciler).run());
            tokio::spawn(Driver::new(mcpservers, server_reconciler).run());
            Leadership::always()
        }
    };
    tokio::spawn(prune_executions(executions, leadership));

    // The front door.
    let mut aggregator = Aggregator::builder(registry)
        .version(env!("CARGO_PKG_VERSION"))
        .allowed_hosts(config.aggregator.allowed_hosts.clone())
        .session_limits(session_limits(&config.aggregator.limits))
        .connection_limits(connection_limits(&config.aggregator.limits))
        .readiness(ready::readiness(root.clone(), kube_probe, services.clone()));
    aggregator = metrics.serve(aggregator, services.clone());
    aggregator = aggregator.backend_auth(backend_auth);
    if let Some(server) = front_door_auth {
        aggregator = aggregator.auth(oauth::with_required_audiences(server, &services));
    }
    let aggregator = aggregator.build();
    if config.aggregator.transport == AggregatorTransport::Stdio {
        // MCP on muster's own stdin/stdout; logs stay on stderr.
        tracing::info!(config = %root.display(), "muster is serving MCP on stdio");
        aggregator
            .serve_stdio(
                tokio::io::stdin(),
                tokio::io::stdout(),
                stopping(shutdown, in_flight.clone()),
            )
            .await
            .context("the stdio session failed")
    } else {
        let host = match config.aggregator.host.as_str() {
            "" => "localhost".to_owned(),
            h => h.to_owned(),
        };
        let listener = tokio::net::TcpListener::bind((host.as_str(), config.aggregator.port))
            .await
            .with_context(|| format!("cannot listen on {host}:{}", config.aggregator.port))?;
        tracing::info!(%endpoint, config = %root.display(), "muster is serving");
        eprintln!(
            "muster serving MCP at {endpoint} (config {})",
            root.display()
        );
        if let Some(listening) = hooks.listening {
            let _ = listening.send(endpoint.clone());
        }
        aggregator
            .serve_tcp(listener, stopping(shutdown, in_flight.clone()))
            .await
            .context("the server failed")
    }?;

    tracing::info!("shutting down: stopping every MCP server");
    tokio::time::timeout(Duration::from_secs(8), services.stop_all())
        .await
        .ok();
    // Runs cut short by the stop are recorded as such, not left in progress.
    match in_flight.fail_unfinished(STOPPED_ERROR).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(count = n, "recorded in-flight executions as cancelled"),
        Err(e) => tracing::warn!(error = %e, "cannot record in-flight executions as cancelled"),
    }
    if let Some(heartbeat) = heartbeat {
        heartbeat.end().await;
    }
    Ok(ExitCode::SUCCESS)
}

/// The stores of one mode.
struct Stores {
    mcpservers: Arc<dyn ResourceStore<McpServer>>,
    workflows: Arc<dyn ResourceStore<Workflow>>,
    executions: Arc<dyn ExecutionStore>,
    events: Arc<dyn EventLog>,
}

/// The stores of filesystem mode: files of the config directory.
async fn fs_stores(
    root: &std::path::Path,
    layout: &Layout,
    namespace: &str,
    limits: &muster_core::config::EventLimits,
) -> anyhow::Result<Stores> {
    let events = Arc::new(
        FsEventLog::in_config_dir_with(layout, EventLogOptions::from_limits(limits))
            .context("cannot open the event log")?,
    );
    let (executions, report) = FsExecutionStore::open_in(layout)
        .await
        .context("cannot open the execution records")?;
    if !report.recovered.is_empty() {
        tracing::warn!(
            count = report.recovered.len(),
            "executions interrupted by a previous stop were marked failed"
        );
    }
    Ok(Stores {
        mcpservers: Arc::new(
            FsStore::<McpServer>::builder(root)
                .namespace(namespace)
                .build(),
        ),
        workflows: Arc::new(
            FsStore::<Workflow>::builder(root)
                .namespace(namespace)
                .build(),
        ),
        executions: Arc::new(executions),
        events,
    })
}

/// The session bounds of `aggregator.limits`.
fn session_limits(limits: &AggregatorLimits) -> SessionLimits {
    SessionLimits {
        max_sessions: usize::try_from(limits.max_sessions).unwrap_or(usize::MAX),
        idle_timeout: Duration::from_secs(u64::from(limits.session_idle_timeout)),
        ..SessionLimits::default()
    }
}

/// The connection bounds of `aggregator.limits`.
fn connection_limits(limits: &AggregatorLimits) -> ConnectionLimits {
    ConnectionLimits {
        max_connections: usize::try_from(limits.max_connections).unwrap_or(usize::MAX),
        header_read_timeout: Duration::from_secs(u64::from(limits.header_read_timeout)),
        idle_timeout: Duration::from_secs(u64::from(limits.connection_idle_timeout)),
    }
}

/// Deletes expired execution records now and every hour, while this replica leads.
async fn prune_executions(executions: Arc<dyn ExecutionStore>, leadership: Leadership) {
    let policy = RetentionPolicy::default();
    loop {
        if !leadership.is_leader() {
            tokio::time::sleep(Duration::from_secs(5)).await;
            continue;
        }
        match executions.prune(&policy, chrono::Utc::now()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, "pruned expired execution records"),
            Err(e) => tracing::warn!(error = %e, "pruning execution records failed"),
        }
        tokio::time::sleep(RETENTION_INTERVAL).await;
    }
}

/// How often the leader looks for runs of replicas that died.
const INTERRUPTED_SWEEP: Duration = Duration::from_secs(5);

/// Records the runs of replicas that died (killed, a lost node) as failed, while this
/// replica leads.
async fn sweep_interrupted(runs: muster_k8s::InterruptedRuns, leadership: Leadership) {
    loop {
        tokio::time::sleep(INTERRUPTED_SWEEP).await;
        if !leadership.is_leader() {
            continue;
        }
        match runs.sweep().await {
            Ok(s) if s.failed > 0 => {
                tracing::warn!(
                    count = s.failed,
                    "recorded runs of replicas that died as failed"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "looking for runs of replicas that died failed"),
        }
    }
}

/// Completes on SIGINT or SIGTERM.
/// `signal`, after which the runs cut short by the stop are recorded as stopped: the front
/// door cancels them once the signal has come.
async fn stopping(signal: impl Future<Output = ()>, in_flight: Arc<InFlightExecutions>) {
    signal.await;
    in_flight.mark_stopping(STOPPED_ERROR);
}

/// Completes on SIGINT, SIGTERM or when `stop` completes.
async fn shutdown_signal_or(stop: Option<tokio::sync::oneshot::Receiver<()>>) {
    let stop = async {
        match stop {
            Some(stop) => {
                let _ = stop.await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = shutdown_signal() => {}
        () = stop => {}
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[cfg(test)]
mod tests {
    use tokio::runtime::RuntimeFlavor;

    use super::runtime_for;

    #[test]
    fn one_cpu_gets_the_current_thread_scheduler_and_more_get_workers() {
        let flavor = |cpus| {
            runtime_for(cpus)
                .expect("a runtime")
                .handle()
                .runtime_flavor()
        };
        assert_eq!(flavor(1), RuntimeFlavor::CurrentThread);
        assert_eq!(flavor(2), RuntimeFlavor::MultiThread);
    }
}
