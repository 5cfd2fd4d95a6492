//! [`KubeEventLog`]: muster's events as core/v1 Events on the involved custom resource,
//! written in the background, read back for `core_events`, and followed through a watch.

mod live;

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Event as KubeEvent;
use kube::api::{Api, ListParams, PostParams};
use muster_core::API_VERSION;
use muster_core::event::{Event, EventFilter, EventLog, EventSink, EventType, InvolvedObject};
use muster_core::store::StoreError;
use serde_json::json;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::AbortHandle;

/// Events waiting to be written; more are dropped (and counted in the log) rather than block.
const QUEUE: usize = 1024;
/// The `source.component` and `reportingComponent` of muster's events.
pub const COMPONENT: &str = "muster";
/// How many followed events a slow follower may fall behind before it misses some.
const FOLLOW_BUFFER: usize = 1024;
/// How long a query waits for the events recorded before it to be written.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

/// Records events as core/v1 Events in the namespace of the object they are about, lists
/// them back, and follows the new ones of every replica in muster's namespace
/// ([`EventLog::subscribe`]).
pub struct KubeEventLog {
    client: kube::Client,
    /// The Events of muster's namespace.
    api: Api<KubeEvent>,
    queue: mpsc::Sender<Event>,
    /// How many events were queued, and how many the writer has handled: a query first
    /// waits (briefly) for those recorded before it, so a caller reads its own events.
    queued: AtomicU64,
    handled: watch::Receiver<u64>,
    /// The live feed, started by the first subscriber.
    live: OnceLock<(broadcast::Sender<Event>, AbortHandle)>,
}

impl Drop for KubeEventLog {
    fn drop(&mut self) {
        if let Some((_, watch)) = self.live.get() {
            watch.abort();
        }
    }
}

impl fmt::Debug for KubeEventLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeEventLog").finish_non_exhaustive()
    }
}

impl KubeEventLog {
    /// An event log of muster's `namespace`, reported by `instance` (e.g. the pod name).
    /// An event about an object of another namespace is written there, as the API server
    /// requires. Spawns the writer task on the current tokio runtime.
    pub fn start(client: kube::Client, namespace: &str, instance: impl Into<String>) -> Self {
        let api: Api<KubeEvent> = Api::namespaced(client.clone(), namespace);
        let (queue, rx) = mpsc::channel(QUEUE);
        let (handled_tx, handled) = watch::channel(0);
        let writer = Writer {
            client: client.clone(),
            home: api.clone(),
            instance: instance.into(),
        };
        tokio::spawn(write_all(writer, rx, handled_tx));
        Self {
            client,
            api,
            queue,
            queued: AtomicU64::new(0),
            handled,
            live: OnceLock::new(),
        }
    }

    /// Waits until the events queued so far are written (or failed), at most [`FLUSH_WAIT`].
    async fn flush(&self) {
        let target = self.queued.load(Ordering::Acquire);
        let mut handled = self.handled.clone();
        let written = tokio::time::timeout(FLUSH_WAIT, handled.wait_for(|n| *n >= target)).await;
        if written.is_err() {
            tracing::debug!("events recorded before a query are not all written yet");
        }
    }
}

/// What the writer task needs: the client, muster's namespace's Events and its identity.
struct Writer {
    client: kube::Client,
    home: Api<KubeEvent>,
    instance: String,
}

impl Writer {
    /// The Events of the namespace `event` belongs in.
    fn api_for(&self, event: &Event) -> Api<KubeEvent> {
        if self.home.namespace() == Some(event.namespace.as_str()) || event.namespace.is_empty() {
            self.home.clone()
        } else {
            Api::namespaced(self.client.clone(), &event.namespace)
        }
    }
}

async fn write_all(writer: Writer, mut rx: mpsc::Receiver<Event>, handled: watch::Sender<u64>) {
    let mut seq: u64 = 0;
    while let Some(event) = rx.recv().await {
        seq += 1;
        write_one(&writer.api_for(&event), &event, &writer.instance, seq).await;
        handled.send_replace(seq);
    }
}

/// Writes one event; a failure is logged, never retried (events are best effort).
async fn write_one(api: &Api<KubeEvent>, event: &Event, instance: &str, seq: u64) {
    let body: KubeEvent = match serde_json::from_value(to_kube(event, instance, seq)) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "an event could not be encoded");
            return;
        }
    };
    if let Err(e) = api.create(&PostParams::default(), &body).await {
        tracing::warn!(reason = %event.reason, error = %e, "recording an event failed");
    }
}

/// The core/v1 Event of a muster event; its name is unique per replica and sequence number.
fn to_kube(event: &Event, instance: &str, seq: u64) -> serde_json::Value {
    let stamp = event
        .timestamp
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let nanos = event.timestamp.timestamp_nanos_opt().unwrap_or_default();
    let object = &event.involved_object;
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": format!("{}.{:x}{:x}", object.name, nanos, seq),
            "namespace": event.namespace,
        },
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": object.kind,
            "name": object.name,
            "namespace": object.namespace,
        },
        "reason": event.reason,
        "message": event.message,
        "type": match event.type_ { EventType::Normal => "Normal", EventType::Warning => "Warning" },
        "source": { "component": COMPONENT },
        "reportingComponent": COMPONENT,
        "reportingInstance": instance,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    })
}

/// The muster event of a core/v1 Event, when muster recorded it.
fn from_kube(e: &KubeEvent) -> Option<Event> {
    let from_muster = e.source.as_ref().and_then(|s| s.component.as_deref()) == Some(COMPONENT)
        || e.reporting_component.as_deref() == Some(COMPONENT);
    if !from_muster {
        return None;
    }
    let stamp = e
        .last_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .or_else(|| e.event_time.as_ref().map(|t| t.0.to_string()))
        .or_else(|| {
            e.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.to_string())
        })?;
    let timestamp: DateTime<Utc> = stamp.parse().ok()?;
    let object = &e.involved_object;
    let namespace = e.metadata.namespace.clone().unwrap_or_default();
    Some(Event {
        timestamp,
        namespace: namespace.clone(),
        involved_object: InvolvedObject {
            kind: object.kind.clone().unwrap_or_default(),
            name: object.name.clone().unwrap_or_default(),
            namespace: object.namespace.clone().unwrap_or(namespace),
        },
        reason: e.reason.clone().unwrap_or_default(),
        message: e.message.clone().unwrap_or_default(),
        type_: if e.type_.as_deref() == Some("Warning") {
            EventType::Warning
        } else {
            EventType::Normal
        },
        source: COMPONENT.to_owned(),
    })
}

impl EventSink for KubeEventLog {
    fn record(&self, event: Event) {
        // Counted before it is sent, so the writer never handles more than was counted.
        self.queued.fetch_add(1, Ordering::AcqRel);
        if self.queue.try_send(event).is_err() {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!("the event queue is full; an event was dropped");
        }
    }
}

#[async_trait]
impl EventLog for KubeEventLog {
    async fn query(&self, filter: &EventFilter) -> Result<Vec<Event>, StoreError> {
        self.flush().await;
        let api = match filter.namespace.as_deref() {
            Some(ns) if self.api.namespace() != Some(ns) => {
                Api::namespaced(self.client.clone(), ns)
            }
            _ => self.api.clone(),
        };
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        // Event times have whole seconds; within one, the order of writes decides.
        let mut events: Vec<(Event, u64)> = list
            .items
            .iter()
            .filter_map(|e| {
                let written = e
                    .metadata
                    .resource_version
                    .as_deref()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                from_kube(e).map(|ev| (ev, written))
            })
            .collect();
        events.sort_by_key(|(e, written)| (e.timestamp, *written));
        let events = events.into_iter().map(|(e, _)| e);
        Ok(filter.apply(events))
    }

    /// The events muster records from now on in the namespace, by any replica: a watch on
    /// the Events, started by the first subscriber (on the current tokio runtime).
    fn subscribe(&self) -> Option<broadcast::Receiver<Event>> {
        let (live, _) = self.live.get_or_init(|| {
            let (live, _) = broadcast::channel(FOLLOW_BUFFER);
            let watch = tokio::spawn(live::run(self.api.clone(), live.clone()));
            (live, watch.abort_handle())
        });
        Some(live.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_survives_the_round_trip() {
        let event = Event::new(
            "MCPServer",
            "git",
            "muster",
            "MCPServerFailed",
            EventType::Warning,
            "MCPServer git operation failed: refused",
        );
        let kube: KubeEvent = serde_json::from_value(to_kube(&event, "pod-a", 7)).unwrap();
        assert_eq!(kube.involved_object.kind.as_deref(), Some("MCPServer"));
        assert!(kube.metadata.name.as_deref().unwrap().starts_with("git."));
        let mut back = from_kube(&kube).unwrap();
        assert_eq!(back.timestamp.timestamp(), event.timestamp.timestamp());
        back.timestamp = event.timestamp;
        assert_eq!(back, event);
    }

    #[test]
    fn events_of_others_are_not_muster_events() {
        let kube: KubeEvent = serde_json::from_value(json!({
            "metadata": {"name": "x", "namespace": "n"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "source": {"component": "kubelet"},
            "lastTimestamp": "2026-01-01T00:00:00Z"
        }))
        .unwrap();
        assert_eq!(from_kube(&kube), None);
    }
}
