//! Start, stop and restart of a backend, the retry loop of remote servers and what happens
//! when a live connection dies.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chrono::Utc;
use muster_core::resource::mcp_server::Health;
use muster_core::tool::{Catalog, Revision};
use rmcp::model::{ProtocolVersion, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient, RunningService};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::catalog;
use super::connect::{self, Opened};
use super::error::BackendError;
use super::failure::{Failure, FailureKind, classify, describe, facts_of};
use super::handler::UpstreamHandler;
use super::inner::{Connection, Inner, Shared};
use super::state::ServiceState;
#[cfg(feature = "stdio")]
use super::stdio::ChildProcess;
use super::transition;

/// A connection that initialized and listed its catalog.
struct Ready {
    opened: Opened,
    handler: UpstreamHandler,
    stop: CancellationToken,
    catalog: Catalog,
}

fn listing_failure(error: &rmcp::service::ServiceError) -> Failure {
    let mut facts = facts_of(error);
    facts.network |= matches!(error, rmcp::service::ServiceError::TransportClosed);
    Failure::new(
        classify(facts),
        format!("listing tools: {}", describe(error, facts)),
    )
    .with_http_status(facts.http_status)
}

impl Inner {
    /// Cancels the attempt in flight and the scheduled retry.
    pub(crate) fn interrupt(&self) {
        let mut s = self.lock();
        if let Some(attempt) = s.attempt.take() {
            attempt.cancel();
        }
        if let Some(retry) = s.retry.take() {
            retry.cancel();
        }
    }

    /// One connection attempt; the caller holds `ops`. Boxed, because a failed attempt
    /// schedules a retry task that makes the next attempt.
    pub(crate) fn start_locked(
        self: &Arc<Self>,
    ) -> Pin<Box<dyn Future<Output = Result<(), BackendError>> + Send + '_>> {
        Box::pin(self.attempt())
    }

    async fn attempt(self: &Arc<Self>) -> Result<(), BackendError> {
        if self.lock().snapshot.state.is_active() {
            return Err(BackendError::AlreadyRunning {
                name: self.name.clone(),
            });
        }
        let (epoch, attempt) = self.update(|s| {
            if let Some(retry) = s.retry.take() {
                retry.cancel();
            }
            s.epoch += 1;
            s.lost_stdio = false;
            let token = CancellationToken::new();
            s.attempt = Some(token.clone());
            transition::attempt_started(&mut s.snapshot, Utc::now());
            (s.epoch, token)
        });
        self.ensure_health_task();
        let budget = self.spec.timeout();
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(budget, self.open_and_list()) => match outcome {
                Ok(outcome) => outcome,
                Err(_) => Err(Failure::new(
                    FailureKind::Transient,
                    format!("connecting timed out after {}s", budget.as_secs_f64()),
                )),
            },
            () = attempt.cancelled() => {
                return Err(BackendError::Stopped { name: self.name.clone() });
            }
        };
        match outcome {
            Ok(ready) => self.install(epoch, &attempt, ready).await,
            Err(failure) => Err(self.fail(epoch, failure)),
        }
    }

    async fn open_and_list(&self) -> Result<Ready, Failure> {
        let handler = UpstreamHandler::new();
        let stop = CancellationToken::new();
        let opened = connect::open(
            &self.name,
            &self.spec,
            &self.options,
            &self.redactor,
            handler.clone(),
            // A child token: the client cancels its own token when it ends, and `stop` must
            // only say whether muster ended it.
            stop.child_token(),
        )
        .await?;
        match catalog::fetch(opened.running.peer(), Revision::default()).await {
            Ok(catalog) => Ok(Ready {
                opened,
                handler,
                stop,
                catalog,
            }),
            Err(error) => {
                let failure = listing_failure(&error);
                stop.cancel();
                let Opened {
                    running,
                    #[cfg(feature = "stdio")]
                    child,
                    ..
                } = opened;
                let _ = running.waiting().await;
                #[cfg(feature = "stdio")]
                if let Some(mut child) = child {
                    child.terminate(self.options.stop_grace).await;
                }
                Err(failure)
            }
        }
    }

    async fn install(
        self: &Arc<Self>,
        epoch: u64,
        attempt: &CancellationToken,
        ready: Ready,
    ) -> Result<(), BackendError> {
        let Ready {
            opened,
            handler,
            stop,
            catalog,
        } = ready;
        let Opened {
            running,
            #[cfg(feature = "http-client")]
            lean,
            #[cfg(feature = "stdio")]
            child,
        } = opened;
        let peer = running.peer().clone();
        #[cfg(feature = "stdio")]
        let pid = child.as_ref().and_then(ChildProcess::pid);
        #[cfg(not(feature = "stdio"))]
        let pid = None;
        let info = peer.peer_info();
        let protocol = info.as_ref().map(|i| i.protocol_version.clone());
        let conn = Arc::new(Connection {
            epoch,
            peer: peer.clone(),
            progress: handler.progress.clone(),
            callers: handler.callers.clone(),
            #[cfg(feature = "http-client")]
            lean,
            stop: stop.clone(),
            supervisor: Mutex::new(None),
        });
        let task = tokio::spawn(supervise(
            Arc::downgrade(self),
            epoch,
            running,
            #[cfg(feature = "stdio")]
            child,
            stop.clone(),
            self.options.stop_grace,
        ));
        *conn
            .supervisor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(task);
        let installed = self.update(|s| {
            if attempt.is_cancelled() || s.epoch != epoch {
                return false;
            }
            s.attempt = None;
            transition::attempt_succeeded(&mut s.snapshot, Utc::now());
            s.snapshot.pid = pid;
            s.snapshot.protocol_version = protocol.as_ref().map(ToString::to_string);
            Inner::set_catalog(s, catalog);
            s.conn = Some(conn.clone());
            true
        });
        if !installed {
            conn.close().await;
            return Err(BackendError::Stopped {
                name: self.name.clone(),
            });
        }
        tokio::spawn(relist_on_change(
            Arc::downgrade(self),
            epoch,
            peer.clone(),
            handler.relist.clone(),
            stop.clone(),
        ));
        if protocol.as_ref() == Some(&ProtocolVersion::V_2026_07_28) {
            tokio::spawn(listen_for_changes(peer, handler.relist, stop));
        }
        Ok(())
    }

    /// Records a failed attempt and schedules the retry it calls for. The failure's text
    /// (an error chain, a stderr tail) is redacted here, before it reaches the state, the
    /// status, events or the caller.
    fn fail(self: &Arc<Self>, epoch: u64, mut failure: Failure) -> BackendError {
        failure.message = self.redactor.redact_string(failure.message);
        self.update(|s| {
            if s.epoch == epoch {
                s.attempt = None;
            }
            let delay = transition::attempt_failed(
                &mut s.snapshot,
                &failure,
                self.options.backoff,
                Utc::now(),
            );
            if let Some(delay) = delay {
                self.schedule_retry(s, delay);
            }
        });
        match failure.kind {
            FailureKind::AuthRequired => BackendError::AuthRequired {
                name: self.name.clone(),
            },
            FailureKind::Transient | FailureKind::Permanent => BackendError::Connect {
                name: self.name.clone(),
                message: failure.message,
                http_status: failure.http_status,
                retry_scheduled: self.lock().retry.is_some(),
            },
        }
    }

    fn schedule_retry(self: &Arc<Self>, s: &mut Shared, delay: Duration) {
        if let Some(old) = s.retry.take() {
            old.cancel();
        }
        let token = CancellationToken::new();
        s.retry = Some(token.clone());
        tokio::spawn(retry_after(Arc::downgrade(self), token, delay));
    }

    /// A live connection of attempt `epoch` died with `message`.
    pub(crate) fn connection_lost(self: &Arc<Self>, epoch: u64, message: String) {
        let message = self.redactor.redact_string(message);
        self.update(|s| {
            if s.conn.as_ref().is_none_or(|c| c.epoch != epoch) {
                return;
            }
            if let Some(conn) = s.conn.take() {
                conn.stop.cancel();
            }
            Inner::clear_catalog(s);
            let failure = Failure::new(FailureKind::Transient, message);
            let remote = s.snapshot.server_type.is_remote();
            let restart_planned = !remote && self.options.health_interval.is_some();
            let delay = transition::connection_lost(
                &mut s.snapshot,
                &failure,
                self.options.backoff,
                restart_planned,
                Utc::now(),
            );
            if remote {
                if let Some(delay) = delay {
                    self.schedule_retry(s, delay);
                }
            } else {
                s.lost_stdio = true;
            }
        });
    }

    /// Closes the connection; the caller holds `ops`.
    pub(crate) async fn stop_locked(&self) {
        let conn = self.update(|s| {
            s.lost_stdio = false;
            s.snapshot.next_retry_after = None;
            s.snapshot.recovering = false;
            let conn = s.conn.take();
            if conn.is_some() || s.snapshot.state.is_active() || s.snapshot.state.is_failed() {
                s.snapshot.state = ServiceState::Stopping;
            }
            conn
        });
        if let Some(conn) = conn {
            conn.close().await;
        }
        let stopped = ServiceState::stopped_for(self.spec.server_type());
        self.update(|s| {
            s.snapshot.state = stopped;
            s.snapshot.health = Health::Unknown;
            s.snapshot.client_ready = false;
            s.snapshot.pid = None;
            Inner::clear_catalog(s);
        });
    }

    fn ensure_health_task(self: &Arc<Self>) {
        let Some(interval) = self.options.health_interval else {
            return;
        };
        let start = {
            let mut s = self.lock();
            !std::mem::replace(&mut s.health_started, true)
        };
        if start {
            tokio::spawn(super::health::probe_every(
                Arc::downgrade(self),
                self.closed.clone(),
                interval,
            ));
        }
    }
}

/// Owns the client (and the process) of one connection until it ends, then reaps the
/// process and reports an unexpected end.
async fn supervise(
    inner: Weak<Inner>,
    epoch: u64,
    running: RunningService<RoleClient, UpstreamHandler>,
    #[cfg(feature = "stdio")] mut child: Option<ChildProcess>,
    stop: CancellationToken,
    grace: Duration,
) {
    let _ = running.waiting().await;
    let stopped = stop.is_cancelled();
    #[cfg(feature = "stdio")]
    let report = match child.as_mut() {
        Some(child) if stopped => {
            child.terminate(grace).await;
            None
        }
        Some(child) => {
            child.reap(grace).await;
            Some(child.exit_report("the server process exited").await)
        }
        None => (!stopped).then(|| "the connection to the server closed".to_owned()),
    };
    #[cfg(not(feature = "stdio"))]
    let report = {
        let _ = grace;
        (!stopped).then(|| "the connection to the server closed".to_owned())
    };
    stop.cancel();
    if let (Some(message), Some(inner)) = (report, inner.upgrade()) {
        inner.connection_lost(epoch, message);
    }
}

/// Re-lists the catalog whenever the server says a list changed.
async fn relist_on_change(
    inner: Weak<Inner>,
    epoch: u64,
    peer: Peer<RoleClient>,
    relist: Arc<Notify>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = relist.notified() => {}
            () = stop.cancelled() => return,
        }
        let Some(backend) = inner.upgrade() else {
            return;
        };
        match catalog::fetch(&peer, Revision::default()).await {
            Ok(catalog) => backend.update(|s| {
                if s.conn.as_ref().is_some_and(|c| c.epoch == epoch) {
                    Inner::set_catalog(s, catalog);
                }
            }),
            Err(error) => {
                let error = backend.redactor.redact_string(error.to_string());
                tracing::warn!(server = %backend.name, %error, "re-listing failed");
            }
        }
    }
}

/// On 2026-07-28 connections, list changes arrive on a `subscriptions/listen` stream.
async fn listen_for_changes(peer: Peer<RoleClient>, relist: Arc<Notify>, stop: CancellationToken) {
    let filter = SubscriptionFilter::builder()
        .tools_list_changed()
        .prompts_list_changed()
        .resources_list_changed()
        .build();
    let mut subscription = tokio::select! {
        s = peer.listen(filter) => match s {
            Ok(s) => s,
            Err(error) => {
                tracing::debug!(%error, "no list-change subscription");
                return;
            }
        },
        () = stop.cancelled() => return,
    };
    loop {
        tokio::select! {
            n = subscription.next() => match n {
                Ok(Some(_)) => relist.notify_one(),
                Ok(None) | Err(_) => return,
            },
            () = stop.cancelled() => return,
        }
    }
}

/// Waits `delay`, then makes the scheduled attempt unless it was cancelled meanwhile.
async fn retry_after(inner: Weak<Inner>, token: CancellationToken, delay: Duration) {
    tokio::select! {
        () = tokio::time::sleep(delay) => {}
        () = token.cancelled() => return,
    }
    let Some(backend) = inner.upgrade() else {
        return;
    };
    let _op = backend.ops.lock().await;
    if token.is_cancelled() {
        return;
    }
    if let Err(error) = backend.start_locked().await {
        tracing::debug!(server = %backend.name, %error, "retry failed");
    }
}
