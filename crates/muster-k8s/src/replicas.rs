//! Runs left `inprogress` by a replica that died without stopping (`SIGKILL`, a lost node).
//!
//! Each replica process holds a heartbeat: a `coordination.k8s.io` Lease
//! `muster-replica-<incarnation>` it renews every third of [`HEARTBEAT_DURATION`]. The
//! incarnation is new for every process, so a restarted pod is a new replica. The records a
//! replica begins carry its incarnation as the label `muster.giantswarm.io/replica`
//! ([`KubeExecutionStore::owned_by`]).
//!
//! The leader runs an [`InterruptedRuns`] sweep: a run recorded `inprogress` whose replica's
//! heartbeat is gone, or has not changed for a whole [`HEARTBEAT_DURATION`] as the sweeper
//! itself observed it (its own clock, so clock skew between nodes does not matter), is
//! recorded `failed` with [`interrupted_error`]. The write names the resourceVersion it read
//! and a finished record is never written again, so a run is recorded once even when a
//! stepping-down and a new leader sweep at the same moment. The records are listed before the
//! heartbeats, and a replica's heartbeat exists before its first record, so a replica that
//! just started is never taken for dead. A heartbeat whose replica is dead and has no run
//! left is deleted.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::Utc;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use muster_core::store::StoreError;
use serde_json::json;

use crate::executions::KubeExecutionStore;

pub use crate::executions::REPLICA_LABEL;

/// The label marking heartbeat Leases.
pub const HEARTBEAT_LABEL: &str = "muster.giantswarm.io/heartbeat";

/// How long a heartbeat holds without renewal; it is renewed every third of it.
pub const HEARTBEAT_DURATION: Duration = Duration::from_secs(15);

/// The error recorded for a run whose replica `replica` (its pod name and process) died
/// before the run finished.
pub fn interrupted_error(replica: &str) -> String {
    format!(
        "execution interrupted: the muster replica running it ({replica}) stopped before the \
         workflow finished"
    )
}

/// The name of the heartbeat Lease of `incarnation`.
fn lease_name(incarnation: &str) -> String {
    format!("muster-replica-{incarnation}")
}

/// One replica's heartbeat Lease.
#[derive(Debug, Clone)]
pub struct ReplicaHeartbeat {
    api: Api<Lease>,
    incarnation: String,
    identity: String,
}

impl ReplicaHeartbeat {
    /// The heartbeat of this process in `namespace`, for the replica `identity` (e.g. the pod
    /// name); its incarnation is new.
    pub fn new(client: kube::Client, namespace: &str, identity: impl Into<String>) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            incarnation: uuid::Uuid::new_v4().simple().to_string(),
            identity: identity.into(),
        }
    }

    /// The incarnation the records of this process are labelled with.
    pub fn incarnation(&self) -> &str {
        &self.incarnation
    }

    /// Writes the heartbeat once; call it before any record is begun.
    ///
    /// # Errors
    ///
    /// When the API server refuses the Lease.
    pub async fn beat(&self) -> Result<(), kube::Error> {
        let name = lease_name(&self.incarnation);
        let now = MicroTime(Timestamp::now());
        let secs = i32::try_from(HEARTBEAT_DURATION.as_secs()).unwrap_or(i32::MAX);
        match self.api.get_opt(&name).await? {
            Some(mut lease) => {
                let spec = lease.spec.get_or_insert_with(Default::default);
                spec.renew_time = Some(now);
                spec.lease_duration_seconds = Some(secs);
                self.api
                    .replace(&name, &PostParams::default(), &lease)
                    .await
                    .map(drop)
            }
            None => {
                let lease: Lease = serde_json::from_value(json!({
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {
                        "name": name,
                        "labels": { HEARTBEAT_LABEL: "replica", REPLICA_LABEL: self.incarnation },
                    },
                    "spec": {
                        "holderIdentity": self.identity,
                        "leaseDurationSeconds": secs,
                        "acquireTime": now.0.to_string(),
                        "renewTime": now.0.to_string(),
                    }
                }))
                .map_err(kube::Error::SerdeError)?;
                self.api
                    .create(&PostParams::default(), &lease)
                    .await
                    .map(drop)
            }
        }
    }

    /// Renews the heartbeat every third of [`HEARTBEAT_DURATION`], forever.
    pub async fn run(self) {
        loop {
            tokio::time::sleep(HEARTBEAT_DURATION / 3).await;
            if let Err(e) = self.beat().await {
                tracing::warn!(error = %e, "renewing this replica's heartbeat failed");
            }
        }
    }

    /// Deletes the heartbeat (a replica that stops, after recording its own runs).
    pub async fn end(&self) {
        let name = lease_name(&self.incarnation);
        if let Err(e) = self.api.delete(&name, &DeleteParams::default()).await {
            tracing::debug!(error = %e, "deleting this replica's heartbeat failed");
        }
    }
}

/// What one sweep found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Runs recorded as failed by this sweep.
    pub failed: usize,
    /// Heartbeats of dead replicas deleted.
    pub heartbeats_deleted: usize,
}

/// The leader's sweep of runs whose replica died. Keeps what it observed of each heartbeat
/// between sweeps.
#[derive(Debug, Clone)]
pub struct InterruptedRuns {
    leases: Api<Lease>,
    executions: Arc<KubeExecutionStore>,
    /// Heartbeat name → (resourceVersion, when this sweeper first saw that version).
    seen: Arc<Mutex<HashMap<String, (String, tokio::time::Instant)>>>,
}

impl InterruptedRuns {
    /// A sweep over the records of `executions` and the heartbeats of `namespace`.
    pub fn new(client: kube::Client, namespace: &str, executions: Arc<KubeExecutionStore>) -> Self {
        Self {
            leases: Api::namespaced(client, namespace),
            executions,
            seen: Arc::default(),
        }
    }

    /// One sweep: records the runs of dead replicas as failed and deletes the heartbeats
    /// they leave.
    ///
    /// # Errors
    ///
    /// When the API server cannot list or write; nothing is deleted then.
    pub async fn sweep(&self) -> Result<Sweep, StoreError> {
        // Records first: any replica that began one had its heartbeat written before.
        let unfinished = self.executions.unfinished().await?;
        let leases = self
            .leases
            .list(&ListParams::default().labels(&format!("{HEARTBEAT_LABEL}=replica")))
            .await
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        let now = tokio::time::Instant::now();
        // incarnation → (holder, lease name, resourceVersion, alive)
        let mut replicas: HashMap<String, (String, String, String, bool)> = HashMap::new();
        {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            let mut present = HashSet::new();
            for lease in &leases.items {
                let Some(name) = lease.metadata.name.clone() else {
                    continue;
                };
                let Some(incarnation) = lease
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(REPLICA_LABEL))
                    .cloned()
                else {
                    continue;
                };
                let version = lease.metadata.resource_version.clone().unwrap_or_default();
                let since = match seen.get(&name) {
                    Some((v, since)) if *v == version => *since,
                    _ => now,
                };
                seen.insert(name.clone(), (version.clone(), since));
                present.insert(name.clone());
                let holder = lease
                    .spec
                    .as_ref()
                    .and_then(|s| s.holder_identity.clone())
                    .unwrap_or_else(|| incarnation.clone());
                let alive = now.duration_since(since) < HEARTBEAT_DURATION;
                replicas.insert(incarnation, (holder, name, version, alive));
            }
            seen.retain(|name, _| present.contains(name));
        }
        let mut sweep = Sweep::default();
        let mut still_running: HashSet<&str> = HashSet::new();
        for (id, owner) in &unfinished {
            let Some(owner) = owner.as_deref() else {
                // Not labelled (begun by a muster without heartbeats): left alone.
                continue;
            };
            let holder = match replicas.get(owner) {
                Some((_, _, _, true)) => {
                    still_running.insert(owner);
                    continue;
                }
                Some((holder, ..)) => holder.clone(),
                None => owner.to_owned(),
            };
            if self
                .executions
                .fail_interrupted(id, &interrupted_error(&holder), Utc::now())
                .await?
            {
                tracing::warn!(execution = %id, replica = %holder, "recorded a run of a replica that died as failed");
                sweep.failed += 1;
            }
        }
        for (incarnation, (_, name, version, alive)) in &replicas {
            if *alive || still_running.contains(incarnation.as_str()) {
                continue;
            }
            // Only the version judged dead: a heartbeat renewed meanwhile stays.
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    resource_version: Some(version.clone()),
                    uid: None,
                }),
                ..DeleteParams::default()
            };
            if self.leases.delete(name, &params).await.is_ok() {
                sweep.heartbeats_deleted += 1;
            }
        }
        Ok(sweep)
    }
}
