//! The Kubernetes side of `muster serve`: deciding the mode, connecting to the API server and
//! building the stores, event log and leader election over it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use muster_core::resource::mcp_server::McpServerDefinition;
use muster_core::resource::{McpServer, Object, ValidationContext, Workflow};
use muster_k8s::leader::LeaseSettings;
use muster_k8s::store::{Namespaces, WriteRule};
use muster_k8s::{
    InterruptedRuns, KubeEventLog, KubeExecutionStore, KubeSecrets, KubeStore, LeaderElector,
    Leadership, ReplicaHeartbeat, SecretRules,
};

/// How long startup waits for the API server and for the first list of each kind.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// Where a pod's service account token is mounted.
const SERVICE_ACCOUNT_TOKEN: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// Whether to serve in Kubernetes mode: as `config.yaml` says when it sets `kubernetes`, and
/// otherwise when muster runs inside a cluster (a pod's environment and token).
pub(crate) fn wanted(root: &Path, configured: bool) -> bool {
    if configured || sets_kubernetes(root) {
        return configured;
    }
    let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
        && Path::new(SERVICE_ACCOUNT_TOKEN).exists();
    if in_cluster {
        tracing::info!("running inside a cluster and config.yaml sets no mode: Kubernetes mode");
    }
    in_cluster
}

/// Whether `config.yaml` names the mode at all (`kubernetes: false` counts).
fn sets_kubernetes(root: &Path) -> bool {
    std::fs::read_to_string(root.join("config.yaml"))
        .ok()
        .and_then(|text| serde_norway::from_str::<serde_norway::Value>(&text).ok())
        .is_some_and(|v| v.get("kubernetes").is_some())
}

/// Everything Kubernetes mode stores in the API.
pub(crate) struct KubeParts {
    /// The API client, for the readiness checks.
    pub(crate) client: kube::Client,
    pub(crate) mcpservers: KubeStore<McpServer>,
    pub(crate) workflows: KubeStore<Workflow>,
    pub(crate) executions: Arc<KubeExecutionStore>,
    pub(crate) events: Arc<KubeEventLog>,
    pub(crate) leadership: Leadership,
    pub(crate) elector: LeaderElector,
    /// This process's heartbeat, which the records it begins name.
    pub(crate) heartbeat: ReplicaHeartbeat,
    /// The leader's sweep of runs whose replica died.
    pub(crate) interrupted: InterruptedRuns,
    /// The `headersFrom` reader, taken by the backend options.
    pub(crate) secrets: Option<KubeSecrets>,
}

/// Connects to the API server named by `KUBECONFIG` / `~/.kube/config` or the in-cluster
/// environment and builds the stores of `namespace`, MCPServers of `server_namespaces` too.
/// Fails, never falls back, when the API server cannot be reached or does not serve muster's
/// CRDs.
pub(crate) async fn connect(
    namespace: &str,
    server_namespaces: Namespaces,
    rules: SecretRules,
) -> anyhow::Result<KubeParts> {
    let client = kube::Client::try_default().await.context(
        "kubernetes: true, but no Kubernetes API server is configured \
         (no in-cluster service account and no usable kubeconfig)",
    )?;
    let version = tokio::time::timeout(STARTUP_TIMEOUT, client.apiserver_version())
        .await
        .map_err(|_| {
            anyhow::anyhow!("the Kubernetes API server did not answer within {STARTUP_TIMEOUT:?}")
        })
        .and_then(|r| {
            r.context("kubernetes: true, but the Kubernetes API server is unreachable")
        })?;
    tracing::info!(version = %version.git_version, namespace, "connected to the Kubernetes API server");
    check_crds(&client).await?;

    let identity = identity();
    let (elector, leadership) = LeaderElector::new(
        client.clone(),
        LeaseSettings::new(namespace, identity.clone()),
    );
    let ctx = ValidationContext::kubernetes(namespace);
    let mcpservers = KubeStore::<McpServer>::builder(client.clone(), namespace)
        .namespaces(server_namespaces)
        .leadership(leadership.clone())
        .write_rule(mcp_server_rule(ctx))
        .start();
    let workflows = KubeStore::<Workflow>::builder(client.clone(), namespace)
        .leadership(leadership.clone())
        .start();
    for ready in [
        mcpservers.ready(STARTUP_TIMEOUT).await,
        workflows.ready(STARTUP_TIMEOUT).await,
    ] {
        if !ready {
            bail!(
                "the first list of MCPServers ({:?}) and Workflows did not complete within \
                 {STARTUP_TIMEOUT:?}",
                mcpservers.namespaces()
            );
        }
    }
    // The heartbeat exists before the first record naming it, so no sweep takes this replica
    // for dead.
    let heartbeat = ReplicaHeartbeat::new(client.clone(), namespace, identity.clone());
    heartbeat
        .beat()
        .await
        .context("cannot write this replica's heartbeat Lease")?;
    let executions = Arc::new(
        KubeExecutionStore::new(client.clone(), namespace).owned_by(heartbeat.incarnation()),
    );
    let interrupted = InterruptedRuns::new(client.clone(), namespace, executions.clone());
    Ok(KubeParts {
        mcpservers,
        workflows,
        executions,
        heartbeat,
        interrupted,
        secrets: Some(KubeSecrets::new(client.clone(), rules)),
        events: Arc::new(KubeEventLog::start(client.clone(), namespace, identity)),
        client,
        leadership,
        elector,
    })
}

/// Fails unless the API server serves MCPServer, Workflow and WorkflowExecution.
async fn check_crds(client: &kube::Client) -> anyhow::Result<()> {
    let group = muster_core::API_VERSION;
    let resources = client
        .list_api_group_resources(group)
        .await
        .map_err(|_| muster_k8s::Error::CrdsMissing(group.to_owned()))?;
    for plural in ["mcpservers", "workflows", "workflowexecutions"] {
        if !resources.resources.iter().any(|r| r.name == plural) {
            return Err(muster_k8s::Error::CrdsMissing(format!("{group} {plural}")).into());
        }
    }
    Ok(())
}

/// The credential refusals of Kubernetes mode, on every write of an MCPServer.
fn mcp_server_rule(ctx: ValidationContext) -> WriteRule<McpServer> {
    Arc::new(move |obj: &Object<McpServer>| {
        McpServerDefinition::from(obj.spec.clone())
            .validate_named(obj.name(), obj.metadata.namespace_or_default(), &ctx)
            .map(drop)
    })
}

/// This replica's name in the leader Lease and on its events: the pod name when set.
fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "muster".to_owned());
    format!("{host}-{}", std::process::id())
}
