//! `?watch=1`: a stream of `{"type": ..., "object": ...}` lines, replayed from a
//! resourceVersion, with BOOKMARK events, `sendInitialEvents`, `timeoutSeconds`, and the
//! `ERROR` event with a 410 `Expired` Status when the resourceVersion was compacted.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::Shared;
use super::http::{Filter, Query};
use super::ops::Target;
use super::status::ApiError;
use super::store::{Change, EventKind};
use super::table::{self, Include};

struct Watch {
    target: Target,
    filter: Filter,
    bookmarks: bool,
    table: Option<Include>,
    last_rv: u64,
}

impl Watch {
    fn object(&self, obj: &Value) -> Value {
        let obj = self.target.present(obj.clone());
        match self.table {
            Some(include) => {
                let meta = json!({"resourceVersion": obj.pointer("/metadata/resourceVersion")});
                table::table(&self.target.rt, &self.target.version, &[obj], include, meta)
            }
            None => obj,
        }
    }

    fn line(&self, kind: &str, obj: &Value) -> Bytes {
        let mut s = json!({"type": kind, "object": self.object(obj)}).to_string();
        s.push('\n');
        Bytes::from(s)
    }

    fn bookmark(&self, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": self.last_rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({
            "kind": self.target.rt.kind,
            "apiVersion": self.target.rt.api_version(&self.target.version),
            "metadata": meta,
        });
        let mut s = json!({"type": "BOOKMARK", "object": obj}).to_string();
        s.push('\n');
        Bytes::from(s)
    }

    /// The event a change means for this watch, after its selectors.
    fn event(&self, c: &Change) -> Option<Bytes> {
        let t = &self.target;
        if (c.group.as_str(), c.resource.as_str())
            != (t.rt.storage_key().0.as_str(), t.rt.storage_key().1.as_str())
        {
            return None;
        }
        if !t.namespace.is_empty() && c.namespace != t.namespace {
            return None;
        }
        let now = self.filter.matches(&t.present(c.object.clone()));
        let before = c
            .old
            .as_ref()
            .is_some_and(|o| self.filter.matches(&t.present(o.clone())));
        let kind = match (c.kind, before, now) {
            (EventKind::Added, _, true) => "ADDED",
            (EventKind::Modified, true, true) => "MODIFIED",
            (EventKind::Modified, false, true) => "ADDED",
            (EventKind::Modified, true, false) => "DELETED",
            (EventKind::Deleted, true, _) => "DELETED",
            _ => return None,
        };
        Some(self.line(kind, &c.object))
    }
}

fn error_line(e: &ApiError) -> Bytes {
    let mut s = json!({"type": "ERROR", "object": e.status()}).to_string();
    s.push('\n');
    Bytes::from(s)
}

/// Starts a watch.
pub(crate) fn serve(
    shared: Arc<Shared>,
    target: Target,
    q: &Query,
    accept: &str,
) -> Result<Response, ApiError> {
    let filter = Filter::parse(&target, q)?;
    let bookmarks = q.flag("allowWatchBookmarks");
    let initial_events = q.flag("sendInitialEvents");
    if initial_events && !bookmarks {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            &[super::status::FieldError::forbidden(
                "allowWatchBookmarks",
                "allowWatchBookmarks must be set to true when sendInitialEvents is set",
            )],
        ));
    }
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs)
        .or(shared.config.watch_timeout);
    let table = table::wants_table(accept).then(|| Include::parse(q.get("includeObject")));
    let rv_param = q
        .get("resourceVersion")
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let mut w = Watch {
        target,
        filter,
        bookmarks,
        table,
        last_rv: 0,
    };

    // Under the lock: the initial events and the subscription, so nothing falls in between.
    let (initial, mut changes, expired) = {
        let st = shared.store.lock();
        let changes = shared.store.subscribe();
        w.last_rv = st.rv;
        let mut initial = Vec::new();
        let mut expired = None;
        let start_from_now = initial_events || rv_param.as_deref().is_none_or(|r| r == "0");
        if start_from_now {
            let ns = (!w.target.namespace.is_empty()).then_some(w.target.namespace.as_str());
            for obj in st.list(&w.target.rt, ns) {
                if w.filter.matches(&w.target.present(obj.clone())) {
                    initial.push(w.line("ADDED", obj));
                }
            }
            if initial_events {
                initial.push(w.bookmark(true));
            }
        } else if let Some(rv) = rv_param.as_deref().and_then(|r| r.parse::<u64>().ok()) {
            match st.since(rv) {
                Ok(replay) => {
                    for c in &replay {
                        if let Some(line) = w.event(c) {
                            initial.push(line);
                        }
                    }
                }
                Err(e) => expired = Some(e),
            }
        } else {
            return Err(ApiError::bad_request(format!(
                "resourceVersion: Invalid value: {:?}: must be a number",
                rv_param.unwrap_or_default()
            )));
        }
        (initial, changes, expired)
    };

    if let Some(e) = expired {
        let body = error_line(&e);
        return Ok(Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()));
    }

    let bookmark_every = shared.config.bookmark_interval;
    let mut epoch = shared.watch_epoch.subscribe();
    epoch.mark_unchanged();
    tokio::spawn(async move {
        for line in initial {
            if tx.send(line).await.is_err() {
                return;
            }
        }
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut ticker = tokio::time::interval(bookmark_every);
        ticker.tick().await;
        loop {
            let sleep_until = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = sleep_until => break,
                () = tx.closed() => return,
                _ = epoch.changed() => return,
                _ = ticker.tick() => {
                    if w.bookmarks && tx.send(w.bookmark(false)).await.is_err() {
                        return;
                    }
                }
                msg = changes.recv() => match msg {
                    Ok(c) => {
                        w.last_rv = w.last_rv.max(c.rv);
                        if let Some(line) = w.event(&c)
                            && tx.send(line).await.is_err()
                        {
                            return;
                        }
                    }
                    // a watcher too slow for the change feed is ended; it resumes from its last
                    // resourceVersion, replayed from the history
                    Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => break,
                },
            }
        }
        if w.bookmarks {
            let _ = tx.send(w.bookmark(false)).await;
        }
    });

    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(b), rx))
    });
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()))
}
