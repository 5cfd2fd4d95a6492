//! Leader election among muster replicas with a `coordination.k8s.io/v1` Lease.
//!
//! Every replica serves MCP and runs its services; only the leader writes status, prunes
//! execution records and runs the periodic resync. A replica holds the Lease by renewing it
//! every third of the lease duration; when the holder stops renewing, another replica takes
//! the Lease over once it expired, so a new leader is in place within one lease period. A
//! replica that cannot renew in time steps down before its Lease could be taken over.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio::sync::watch;

/// Whether this replica leads right now. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Leadership {
    rx: watch::Receiver<bool>,
    /// The sender of a fixed leadership, kept so the value never reads as closed.
    _fixed: Option<std::sync::Arc<watch::Sender<bool>>>,
}

impl Leadership {
    /// A leadership that always leads: a single replica without election.
    pub fn always() -> Self {
        let (tx, rx) = watch::channel(true);
        Self {
            rx,
            _fixed: Some(std::sync::Arc::new(tx)),
        }
    }

    /// A leadership decided elsewhere: this replica leads while `rx` holds `true` (an
    /// operator's own election, or a test that hands the lead over).
    pub fn from_watch(rx: watch::Receiver<bool>) -> Self {
        Self { rx, _fixed: None }
    }

    /// Whether this replica leads.
    pub fn is_leader(&self) -> bool {
        *self.rx.borrow()
    }

    /// Waits until leadership changes; returns the new value, or `None` when the elector is
    /// gone.
    pub async fn changed(&mut self) -> Option<bool> {
        self.rx.changed().await.ok()?;
        Some(*self.rx.borrow())
    }
}

/// Settings of the election.
#[derive(Debug, Clone)]
pub struct LeaseSettings {
    /// The Lease's name, e.g. `muster-leader`.
    pub name: String,
    /// The namespace the Lease lives in (muster's).
    pub namespace: String,
    /// This replica's identity (e.g. the pod name).
    pub identity: String,
    /// How long a Lease holds without renewal.
    pub lease_duration: Duration,
}

impl LeaseSettings {
    /// The default Lease `muster-leader` held for 15 s, in `namespace`, by `identity`.
    pub fn new(namespace: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            name: "muster-leader".to_owned(),
            namespace: namespace.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
        }
    }
}

/// Runs the election of one replica.
#[derive(Debug)]
pub struct LeaderElector {
    api: Api<Lease>,
    settings: LeaseSettings,
    tx: watch::Sender<bool>,
}

impl LeaderElector {
    /// An elector for `settings`, and the [`Leadership`] it drives (initially: not leading).
    pub fn new(client: kube::Client, settings: LeaseSettings) -> (Self, Leadership) {
        let api = Api::namespaced(client, &settings.namespace);
        let (tx, rx) = watch::channel(false);
        (Self { api, settings, tx }, Leadership { rx, _fixed: None })
    }

    /// Tries to acquire or renew the Lease every third of its duration, forever.
    pub async fn run(self) {
        let period = self.settings.lease_duration / 3;
        let mut last_renewal: Option<tokio::time::Instant> = None;
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    last_renewal = Some(tokio::time::Instant::now());
                    if !*self.tx.borrow() {
                        tracing::info!(identity = %self.settings.identity, "this replica now leads");
                    }
                    self.tx.send_replace(true);
                }
                Ok(false) => {
                    if self.tx.send_replace(false) {
                        tracing::info!("another replica took the lead");
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "renewing the leader Lease failed");
                    // Step down before another replica may take the Lease over.
                    let stale = last_renewal
                        .is_none_or(|t| t.elapsed() >= self.settings.lease_duration * 2 / 3);
                    if stale && self.tx.send_replace(false) {
                        tracing::warn!("stepping down: the Lease could not be renewed in time");
                    }
                }
            }
            tokio::time::sleep(period).await;
        }
    }

    /// Releases the Lease if this replica holds it, so another takes over at once.
    pub async fn release(&self) {
        if !*self.tx.borrow() {
            return;
        }
        self.tx.send_replace(false);
        if let Ok(Some(mut lease)) = self.api.get_opt(&self.settings.name).await
            && let Some(spec) = lease.spec.as_mut()
            && spec.holder_identity.as_deref() == Some(&self.settings.identity)
        {
            spec.holder_identity = None;
            spec.renew_time = None;
            let _ = self
                .api
                .replace(&self.settings.name, &PostParams::default(), &lease)
                .await;
        }
    }

    /// One round: `Ok(true)` when this replica holds the Lease afterwards.
    async fn try_acquire_or_renew(&self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let secs = i32::try_from(self.settings.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let Some(mut lease) = self.api.get_opt(&self.settings.name).await? else {
            let lease: Lease = serde_json::from_value(json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": { "name": self.settings.name, "namespace": self.settings.namespace },
                "spec": {
                    "holderIdentity": self.settings.identity,
                    "leaseDurationSeconds": secs,
                    "acquireTime": now.to_string(),
                    "renewTime": now.to_string(),
                    "leaseTransitions": 0,
                }
            }))
            .map_err(kube::Error::SerdeError)?;
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let mine = holder.as_deref() == Some(self.settings.identity.as_str());
        let duration = i64::from(spec.lease_duration_seconds.unwrap_or(secs));
        let expired = spec
            .renew_time
            .as_ref()
            .is_none_or(|t| t.0 + SignedDuration::from_secs(duration) < now);
        if !mine && holder.is_some() && !expired {
            return Ok(false);
        }
        if !mine {
            spec.acquire_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                now,
            ));
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            spec.holder_identity = Some(self.settings.identity.clone());
        }
        spec.lease_duration_seconds = Some(secs);
        spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            now,
        ));
        match self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            // Another replica wrote the Lease first.
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }
}
