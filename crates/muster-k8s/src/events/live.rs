//! The live feed of [`KubeEventLog`](super::KubeEventLog): a watch on the namespace's core/v1
//! Events, so a `core_events` follower sees muster's events whichever replica recorded them.
//!
//! The events that exist when the watch starts are not sent (the follower has just listed
//! them). After a relist (410 Gone, a lost connection) only events newer than the start of the
//! feed and not sent before are sent, so a relist neither replays the namespace's history nor
//! drops what was created while the watch was down.

use std::collections::{HashSet, VecDeque};

use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Event as KubeEvent;
use kube::api::Api;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, watcher};
use muster_core::event::Event;
use tokio::sync::broadcast;

use super::from_kube;

/// How many event names the feed remembers to send each one once.
const REMEMBERED: usize = 4096;

/// The names of the events sent (or skipped) lately, bounded.
struct Seen {
    names: HashSet<String>,
    order: VecDeque<String>,
}

impl Seen {
    fn new() -> Self {
        Self {
            names: HashSet::new(),
            order: VecDeque::new(),
        }
    }

    /// Remembers `name`; `false` when it was already known.
    fn insert(&mut self, name: &str) -> bool {
        if !self.names.insert(name.to_owned()) {
            return false;
        }
        self.order.push_back(name.to_owned());
        if self.order.len() > REMEMBERED
            && let Some(old) = self.order.pop_front()
        {
            self.names.remove(&old);
        }
        true
    }
}

/// Watches `api` and sends each new muster event to `live` until no receiver is left and the
/// sender is dropped.
pub(super) async fn run(api: Api<KubeEvent>, live: broadcast::Sender<Event>) {
    let started: DateTime<Utc> = Utc::now();
    let mut seen = Seen::new();
    // The first listing is history; later ones (relists) may hold events made while down.
    let mut first_listing = true;
    let mut stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(item) = stream.next().await {
        match item {
            Ok(watcher::Event::InitApply(obj)) => {
                let Some(name) = obj.metadata.name.clone() else {
                    continue;
                };
                let fresh = seen.insert(&name);
                if first_listing || !fresh {
                    continue;
                }
                if let Some(event) = from_kube(&obj).filter(|e| e.timestamp >= started) {
                    let _ = live.send(event);
                }
            }
            Ok(watcher::Event::InitDone) => first_listing = false,
            Ok(watcher::Event::Apply(obj)) => {
                let Some(name) = obj.metadata.name.clone() else {
                    continue;
                };
                if !seen.insert(&name) {
                    continue;
                }
                if let Some(event) = from_kube(&obj) {
                    // No follower is not an error.
                    let _ = live.send(event);
                }
            }
            Ok(watcher::Event::Init | watcher::Event::Delete(_)) => {}
            Err(e) => tracing::warn!(error = %e, "watching Events failed; retrying"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_names_are_bounded() {
        let mut seen = Seen::new();
        assert!(seen.insert("a"));
        assert!(!seen.insert("a"));
        for i in 0..REMEMBERED {
            seen.insert(&i.to_string());
        }
        assert!(seen.insert("a"), "the oldest name was forgotten");
        assert_eq!(seen.order.len(), REMEMBERED);
    }
}
