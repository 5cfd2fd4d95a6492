//! The checks of `GET /ready` in each mode: the configuration, the config directory in
//! filesystem mode, the API server and muster's resources in Kubernetes mode, and the MCP
//! servers (degraded only).

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use kube::api::{Api, DynamicObject, ListParams};
use muster_aggregator::health::{
    CheckOutcome, Readiness, ReadinessCheck, ServicesCheck, StaticCheck,
};
use muster_aggregator::services::Services;

/// The readiness of a muster serving `root` (and the API server of `kube`, when set).
pub(crate) fn readiness(
    root: PathBuf,
    kube: Option<(kube::Client, Api<DynamicObject>)>,
    services: Services,
) -> Readiness {
    let config = StaticCheck::new("config", CheckOutcome::Ok);
    let mut readiness = Readiness::new().with_check(Arc::new(config));
    readiness = match kube {
        Some((client, mcpservers)) => readiness
            .with_check(Arc::new(ApiServer(client)))
            .with_check(Arc::new(Resources(mcpservers))),
        None => readiness.with_check(Arc::new(ConfigDirectory(root))),
    };
    readiness.with_check(Arc::new(ServicesCheck::new(services)))
}

/// The config directory still exists and its definition directories can be listed.
#[derive(Debug)]
struct ConfigDirectory(PathBuf);

impl ReadinessCheck for ConfigDirectory {
    fn name(&self) -> &str {
        "filesystem"
    }

    fn check(&self) -> BoxFuture<'_, CheckOutcome> {
        Box::pin(async move {
            for dir in [
                self.0.clone(),
                self.0.join("mcpservers"),
                self.0.join("workflows"),
            ] {
                match tokio::fs::read_dir(&dir).await {
                    Ok(_) => {}
                    // Created on first use; an absent definition directory is no fault.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir != self.0 => {}
                    Err(e) => {
                        return CheckOutcome::Failed(format!("cannot read {}: {e}", dir.display()));
                    }
                }
            }
            CheckOutcome::Ok
        })
    }
}

/// The Kubernetes API server answers.
struct ApiServer(kube::Client);

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiServer")
    }
}

impl ReadinessCheck for ApiServer {
    fn name(&self) -> &str {
        "kubernetes"
    }

    fn check(&self) -> BoxFuture<'_, CheckOutcome> {
        Box::pin(async move {
            match self.0.apiserver_version().await {
                Ok(_) => CheckOutcome::Ok,
                Err(e) => CheckOutcome::Failed(format!("API server unreachable: {e}")),
            }
        })
    }
}

/// muster's MCPServers can be listed (CRDs installed, RBAC in place).
#[derive(Debug)]
struct Resources(Api<DynamicObject>);

impl ReadinessCheck for Resources {
    fn name(&self) -> &str {
        "stores"
    }

    fn check(&self) -> BoxFuture<'_, CheckOutcome> {
        Box::pin(async move {
            match self.0.list_metadata(&ListParams::default().limit(1)).await {
                Ok(_) => CheckOutcome::Ok,
                Err(e) => CheckOutcome::Failed(format!("cannot list MCPServers: {e}")),
            }
        })
    }
}
