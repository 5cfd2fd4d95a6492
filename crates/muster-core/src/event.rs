//! Events about resources, as Kubernetes core/v1 Events and muster's event log record them.

pub mod message;

use std::collections::VecDeque;

use async_trait::async_trait;
use std::sync::{Mutex, PoisonError};
use tokio::sync::broadcast;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something went wrong.
    Warning,
}

/// The object an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvolvedObject {
    /// `MCPServer` or `Workflow`.
    pub kind: String,
    /// The resource name.
    pub name: String,
    /// The namespace.
    pub namespace: String,
}

/// One event, in the JSON shape of muster's event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// When it happened.
    pub timestamp: DateTime<Utc>,
    /// The namespace it was recorded in.
    pub namespace: String,
    /// What it is about.
    pub involved_object: InvolvedObject,
    /// A CamelCase reason, e.g. `MCPServerStarted`.
    pub reason: String,
    /// A one-line message; never contains credentials.
    pub message: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: EventType,
    /// Always `muster`.
    pub source: String,
}

impl Event {
    /// An event about `kind`/`name` in `namespace`, happening now.
    pub fn new(
        kind: &str,
        name: &str,
        namespace: &str,
        reason: &str,
        type_: EventType,
        message: impl Into<String>,
    ) -> Self {
        Self {
            timestamp: Utc::now(),
            namespace: namespace.to_owned(),
            involved_object: InvolvedObject {
                kind: kind.to_owned(),
                name: name.to_owned(),
                namespace: namespace.to_owned(),
            },
            reason: reason.to_owned(),
            message: message.into(),
            type_,
            source: "muster".to_owned(),
        }
    }
}

impl Event {
    /// An event whose message is rendered from the original's template for `reason`
    /// ([`message::render`]); `Warning` for the reasons the original marks so.
    pub fn about(
        kind: &str,
        name: &str,
        namespace: &str,
        reason: &str,
        details: &message::Details,
    ) -> Self {
        let text = message::render(reason, name, namespace, details);
        Self::new(kind, name, namespace, reason, reason_type(reason), text)
    }
}

/// The type the original gives events of `reason`: `Warning` for failures, `Normal` otherwise.
pub fn reason_type(reason: &str) -> EventType {
    const WARNINGS: [&str; 8] = [
        "MCPServerFailed",
        "MCPServerToolsUnavailable",
        "MCPServerHealthCheckFailed",
        "MCPServerRecoveryFailed",
        "WorkflowValidationFailed",
        "WorkflowExecutionFailed",
        "WorkflowStepFailed",
        "WorkflowUnavailable",
    ];
    if WARNINGS.contains(&reason) {
        EventType::Warning
    } else {
        EventType::Normal
    }
}

/// Where events go: Kubernetes Events, the filesystem event log, memory.
///
/// Recording never fails the caller's operation and never blocks on I/O; an implementation
/// that writes somewhere slow queues.
pub trait EventSink: Send + Sync + std::fmt::Debug {
    /// Records one event.
    fn record(&self, event: Event);
}

/// Which events to read back, as `core_events` filters them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Only events about this kind (`MCPServer`, `Workflow`).
    pub kind: Option<String>,
    /// Only events about the resource of this name.
    pub name: Option<String>,
    /// Only events in this namespace.
    pub namespace: Option<String>,
    /// Only `Normal` or only `Warning` events.
    pub event_type: Option<EventType>,
    /// Only events at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only events at or before this time.
    pub until: Option<DateTime<Utc>>,
    /// At most this many (the newest).
    pub limit: Option<usize>,
}

impl EventFilter {
    /// Whether `event` passes the filter (ignoring `limit`).
    pub fn matches(&self, event: &Event) -> bool {
        self.kind
            .as_deref()
            .is_none_or(|k| k.eq_ignore_ascii_case(&event.involved_object.kind))
            && self
                .name
                .as_deref()
                .is_none_or(|n| n == event.involved_object.name)
            && self
                .namespace
                .as_deref()
                .is_none_or(|n| n == event.namespace)
            && self.event_type.is_none_or(|t| t == event.type_)
            && self.since.is_none_or(|s| event.timestamp >= s)
            && self.until.is_none_or(|u| event.timestamp <= u)
    }

    /// Filters `events` (oldest first) and keeps the newest `limit`, oldest first.
    pub fn apply(&self, events: impl IntoIterator<Item = Event>) -> Vec<Event> {
        let mut out: Vec<Event> = events.into_iter().filter(|e| self.matches(e)).collect();
        if let Some(limit) = self.limit
            && out.len() > limit
        {
            out.drain(..out.len() - limit);
        }
        out
    }
}

/// An [`EventSink`] whose events can be read back.
#[async_trait]
pub trait EventLog: EventSink {
    /// The events passing `filter`, oldest first.
    async fn query(&self, filter: &EventFilter) -> Result<Vec<Event>, crate::StoreError>;

    /// A live feed of the events recorded from now on, for `core_events` follow mode;
    /// `None` when this log cannot tell (wrap it in a [`BroadcastEventLog`]).
    fn subscribe(&self) -> Option<broadcast::Receiver<Event>> {
        None
    }
}

/// An [`EventLog`] that also hands every recorded event to live subscribers (follow mode).
///
/// A subscriber that falls more than `capacity` events behind misses the oldest ones (it is
/// told so by [`broadcast::error::RecvError::Lagged`]); recording never waits for one. When
/// the wrapped log has a live feed of its own (one that also sees events others record, such
/// as a watch on a shared store), subscribers get that one instead.
#[derive(Debug)]
pub struct BroadcastEventLog {
    inner: std::sync::Arc<dyn EventLog>,
    live: broadcast::Sender<Event>,
}

impl BroadcastEventLog {
    /// Wraps `inner`, keeping up to `capacity` events for slow subscribers.
    pub fn new(inner: std::sync::Arc<dyn EventLog>, capacity: usize) -> Self {
        let (live, _) = broadcast::channel(capacity.max(1));
        Self { inner, live }
    }
}

impl EventSink for BroadcastEventLog {
    fn record(&self, event: Event) {
        // No subscriber is not an error.
        let _ = self.live.send(event.clone());
        self.inner.record(event);
    }
}

#[async_trait]
impl EventLog for BroadcastEventLog {
    async fn query(&self, filter: &EventFilter) -> Result<Vec<Event>, crate::StoreError> {
        self.inner.query(filter).await
    }

    fn subscribe(&self) -> Option<broadcast::Receiver<Event>> {
        self.inner
            .subscribe()
            .or_else(|| Some(self.live.subscribe()))
    }
}

/// An [`EventSink`] that keeps the newest events in memory, for embedders and tests.
#[derive(Debug)]
pub struct MemoryEventSink {
    capacity: usize,
    events: Mutex<VecDeque<Event>>,
}

impl MemoryEventSink {
    /// Keeps at most `capacity` events, dropping the oldest.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity,
            events: Mutex::new(VecDeque::with_capacity(capacity.min(1024))),
        }
    }

    /// The events kept, oldest first.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}

impl EventSink for MemoryEventSink {
    fn record(&self, event: Event) {
        let mut events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        if events.len() == self.capacity {
            events.pop_front();
        }
        if self.capacity > 0 {
            events.push_back(event);
        }
    }
}

#[async_trait]
impl EventLog for MemoryEventSink {
    async fn query(&self, filter: &EventFilter) -> Result<Vec<Event>, crate::StoreError> {
        Ok(filter.apply(self.events()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sink_keeps_the_newest() {
        let sink = MemoryEventSink::with_capacity(2);
        for reason in ["A", "B", "C"] {
            sink.record(Event::new(
                "MCPServer",
                "s",
                "default",
                reason,
                EventType::Normal,
                "m",
            ));
        }
        let reasons: Vec<_> = sink.events().into_iter().map(|e| e.reason).collect();
        assert_eq!(reasons, ["B", "C"]);
        let json = serde_json::to_value(&sink.events()[0]).unwrap();
        assert_eq!(json["involvedObject"]["kind"], "MCPServer");
        assert_eq!(json["type"], "Normal");
    }

    #[tokio::test]
    async fn broadcast_log_feeds_subscribers_and_keeps_the_events() {
        let memory = std::sync::Arc::new(MemoryEventSink::with_capacity(10));
        let log = BroadcastEventLog::new(memory.clone(), 4);
        log.record(Event::about(
            "MCPServer",
            "a",
            "ns",
            "MCPServerStarted",
            &message::Details::default(),
        ));
        let mut live = log.subscribe().unwrap();
        log.record(Event::about(
            "MCPServer",
            "b",
            "ns",
            "MCPServerStopped",
            &message::Details::default(),
        ));
        let got = live.recv().await.unwrap();
        assert_eq!(got.involved_object.name, "b");
        assert_eq!(got.message, "MCPServer b service stopped successfully");
        assert_eq!(log.query(&EventFilter::default()).await.unwrap().len(), 2);
        assert!(MemoryEventSink::with_capacity(1).subscribe().is_none());
    }

    /// A log with a feed of its own, as a watch on a shared store is.
    #[derive(Debug)]
    struct Shared {
        memory: MemoryEventSink,
        feed: broadcast::Sender<Event>,
    }

    impl EventSink for Shared {
        fn record(&self, event: Event) {
            self.memory.record(event);
        }
    }

    #[async_trait]
    impl EventLog for Shared {
        async fn query(&self, filter: &EventFilter) -> Result<Vec<Event>, crate::StoreError> {
            self.memory.query(filter).await
        }

        fn subscribe(&self) -> Option<broadcast::Receiver<Event>> {
            Some(self.feed.subscribe())
        }
    }

    #[tokio::test]
    async fn broadcast_log_prefers_the_feed_of_the_log_it_wraps() {
        let (feed, _) = broadcast::channel(4);
        let shared = std::sync::Arc::new(Shared {
            memory: MemoryEventSink::with_capacity(4),
            feed: feed.clone(),
        });
        let log = BroadcastEventLog::new(shared, 4);
        let mut live = log.subscribe().unwrap();
        // Recorded elsewhere (another replica): only the wrapped log's feed knows.
        let elsewhere = Event::new("Workflow", "w", "ns", "R", EventType::Normal, "m");
        feed.send(elsewhere.clone()).unwrap();
        assert_eq!(live.recv().await.unwrap(), elsewhere);
        // Recorded here: not sent twice (the wrapped feed reports it when the store has it).
        log.record(Event::new(
            "Workflow",
            "w",
            "ns",
            "S",
            EventType::Normal,
            "m",
        ));
        assert!(live.try_recv().is_err());
    }
}
