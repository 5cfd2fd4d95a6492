//! A small operator of its own that embeds muster's MCPServer controller.
//!
//! It watches the `MCPServer` custom resources of one namespace with muster-k8s's
//! [`KubeStore`], connects each server with muster's services (the same `Reconcile` impl
//! `muster serve` runs), writes their status back through `/status`, records core/v1 Events,
//! and logs the tools it aggregates whenever they change. It serves no MCP endpoint: the
//! point is the embedding, in a few lines.
//!
//! ```sh
//! muster crd | kubectl apply -f -
//! NAMESPACE=default cargo run -p example-operator
//! ```

use std::sync::Arc;

use muster_aggregator::backend::BackendOptions;
use muster_aggregator::registry::Registry;
use muster_aggregator::services::{McpServerReconciler, Services};
use muster_core::EventSink;
use muster_core::resource::{McpServer, ValidationContext};
use muster_k8s::controller::ControllerOptions;
use muster_k8s::{KubeEventLog, KubeStore, run_controller};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_target(false).init();
    let namespace = std::env::var("NAMESPACE").unwrap_or_else(|_| "default".to_owned());
    let client = kube::Client::try_default().await?;

    // The store of MCPServers: a reflector for reads, the API for writes.
    let store = KubeStore::<McpServer>::builder(client.clone(), &namespace).start();
    let events = Arc::new(KubeEventLog::start(client, &namespace, "example-operator"));

    // muster's services: one backend per MCPServer, registered in a tool registry.
    let registry = Registry::builder().build();
    let services = Services::builder(
        registry.clone(),
        BackendOptions::from_env()?.with_namespace(&namespace),
        Arc::new(store.clone()),
    )
    .namespace(&namespace)
    .validation(ValidationContext::kubernetes(&namespace))
    .events(events as Arc<dyn EventSink>)
    .build();

    // The MCPServer controller, driven by kube-runtime.
    let reconciler = Arc::new(McpServerReconciler::new(services.clone()));
    tokio::spawn(run_controller(
        store,
        reconciler,
        ControllerOptions::default(),
    ));

    // This operator's own job: report the aggregated tools as they change.
    let mut changes = registry.changes();
    loop {
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    break;
                }
                let catalog = registry.snapshot();
                let names: Vec<&str> = catalog.tools().iter().map(|t| t.name()).collect();
                println!("{} tools: {}", names.len(), names.join(", "));
            }
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    services.stop_all().await;
    Ok(())
}
