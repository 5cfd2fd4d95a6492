//! The reflector task: applies the watch to the reflector store and fans its changes out.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::core::DynamicObject;
use kube::runtime::watcher;
use tokio::sync::{broadcast, watch};

use super::Change;

/// Drives the reflector stream until it ends. Watch errors are logged; the stream's backoff
/// decides when it tries again, and a `410 Gone` makes it list afresh.
pub(super) async fn run(
    kind: &'static str,
    mut stream: BoxStream<'static, Result<watcher::Event<DynamicObject>, watcher::Error>>,
    changes: broadcast::Sender<Change>,
    ready: watch::Sender<bool>,
) {
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Apply(obj)) => {
                let _ = changes.send(Change::Applied(Arc::new(obj)));
            }
            Ok(watcher::Event::Delete(obj)) => {
                let _ = changes.send(Change::Deleted(Arc::new(obj)));
            }
            Ok(watcher::Event::InitDone) => {
                ready.send_replace(true);
                let _ = changes.send(Change::Resynced);
            }
            Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => {}
            Err(e) => tracing::warn!(kind, error = %e, "watching the API server failed; retrying"),
        }
    }
}
