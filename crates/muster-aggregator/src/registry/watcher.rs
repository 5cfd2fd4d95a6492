//! Background tasks that keep the snapshot current: one per provider forwarding its
//! revision changes, and one rebuilder that coalesces them into snapshot rebuilds.

use std::sync::Arc;

use muster_core::tool::ToolProvider;
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Spawns the task that calls `rebuild` after every burst of [`Notify`] signals until
/// `stop` is cancelled or `rebuild` reports the registry gone (returns `false`).
pub(crate) fn spawn_rebuilder(
    runtime: &Handle,
    dirty: Arc<Notify>,
    stop: CancellationToken,
    rebuild: impl Fn() -> bool + Send + 'static,
) {
    runtime.spawn(async move {
        loop {
            // Stopping wins over a change that arrived after the stop.
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                () = dirty.notified() => {}
            }
            if !rebuild() {
                break;
            }
        }
    });
}

/// Spawns the task that signals `dirty` whenever `provider` publishes a new revision, until
/// `stop` is cancelled or the provider drops its revision sender.
pub(crate) fn spawn_revision_watcher(
    runtime: &Handle,
    provider: &Arc<dyn ToolProvider>,
    dirty: Arc<Notify>,
    stop: CancellationToken,
) {
    let mut revisions = provider.revisions();
    revisions.mark_unchanged();
    runtime.spawn(async move {
        loop {
            // Stopping wins over a change that arrived after the stop.
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                changed = revisions.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    dirty.notify_one();
                }
            }
        }
    });
}
