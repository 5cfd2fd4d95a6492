//! Relaying progress of a tool called through `call_tool` to the client's progress token.

use muster_core::tool::{ProgressSink, ProgressUpdate};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext, RoleServer};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Forwards [`ProgressUpdate`]s, in order, as `notifications/progress` for one request.
#[derive(Debug)]
pub(super) struct Relay {
    sink: ProgressSink,
    done: CancellationToken,
    task: JoinHandle<()>,
}

impl Relay {
    /// A relay for the request of `context`, when the client asked for progress.
    pub(super) fn start(context: &RequestContext<RoleServer>) -> Option<Self> {
        let token = context.meta.get_progress_token()?;
        let peer = context.peer.clone();
        let (tx, mut rx) = mpsc::unbounded_channel::<ProgressUpdate>();
        let done = CancellationToken::new();
        let finished = done.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    update = rx.recv() => match update {
                        Some(update) => send(&peer, &token, update).await,
                        None => break,
                    },
                    () = finished.cancelled() => {
                        // Flush what was reported before the call returned.
                        rx.close();
                        while let Ok(update) = rx.try_recv() {
                            send(&peer, &token, update).await;
                        }
                        break;
                    }
                }
            }
        });
        let sink = ProgressSink::new(move |update| {
            let _ = tx.send(update);
        });
        Some(Self { sink, done, task })
    }

    /// Where the called tool reports progress.
    pub(super) fn sink(&self) -> ProgressSink {
        self.sink.clone()
    }

    /// Sends what is still queued; call before answering so progress precedes the result.
    pub(super) async fn finish(self) {
        self.done.cancel();
        drop(self.sink);
        if let Err(e) = self.task.await {
            tracing::debug!(error = %e, "progress relay ended abnormally");
        }
    }
}

async fn send(peer: &Peer<RoleServer>, token: &ProgressToken, update: ProgressUpdate) {
    let mut param = ProgressNotificationParam::new(token.clone(), update.progress);
    if let Some(total) = update.total {
        param = param.with_total(total);
    }
    if let Some(message) = update.message {
        param = param.with_message(message);
    }
    if let Err(e) = peer.notify_progress(param).await {
        tracing::debug!(error = %e, "progress notification not delivered");
    }
}
