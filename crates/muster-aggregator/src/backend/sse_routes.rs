//! The lean calls waiting on a legacy SSE server's event stream. A lean call `POST`s its
//! request to the message endpoint, which answers `202`; the response, and the progress
//! notifications before it, come back on the connection's one event stream. The stream's
//! reader hands each message that belongs to a lean call (its response, by request id, or
//! its progress, by progress token: both are the call's `"muster-N"` id) to that call, and
//! every other message to rmcp's client as before.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

/// The calls of one connection waiting for their messages.
#[derive(Debug)]
pub(crate) struct CallRoutes {
    /// What the request ids of lean calls start with (rmcp numbers its own requests).
    prefix: &'static str,
    routes: Mutex<Routes>,
}

#[derive(Debug)]
struct Routes {
    /// Whether the event stream is still read; no call waits on a closed one.
    open: bool,
    /// Each waiting call's messages, by its request id as JSON (`"muster-7"`).
    calls: HashMap<Box<str>, mpsc::UnboundedSender<String>>,
}

/// What the reader needs of a message to route it.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// `params` of `notifications/progress`, as far as routing goes.
#[derive(Deserialize)]
struct ProgressToken<'a> {
    #[serde(rename = "progressToken", borrow)]
    token: &'a RawValue,
}

impl CallRoutes {
    /// Routes for the calls whose request ids start with `prefix`.
    pub(crate) fn new(prefix: &'static str) -> Self {
        Self {
            prefix,
            routes: Mutex::new(Routes {
                open: true,
                calls: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Routes the messages of the call whose request id is `id_json` (the id as JSON) to
    /// the returned route, until it is dropped; `None` once the event stream has ended.
    pub(crate) fn register(self: &Arc<Self>, id_json: &str) -> Option<Route> {
        let (tx, rx) = mpsc::unbounded_channel();
        let key: Box<str> = Box::from(id_json);
        let mut routes = self.lock();
        if !routes.open {
            return None;
        }
        routes.calls.insert(key.clone(), tx);
        Some(Route {
            routes: Arc::clone(self),
            key,
            messages: rx,
        })
    }

    /// Hands `data`, one message of the stream, to the lean call it belongs to; gives it
    /// back when it belongs to none (it is rmcp's). A response or progress of a lean call
    /// that no longer waits (it gave up) is dropped.
    pub(crate) fn dispatch(&self, data: String) -> Option<String> {
        // Messages without a lean call's id are most of what a busy stream carries that is
        // not a lean response; they skip the parse.
        if !data.contains(self.prefix) {
            return Some(data);
        }
        let Some(key) = lean_key(&data, self.prefix) else {
            return Some(data);
        };
        let call = self.lock().calls.get(key).cloned();
        match call {
            // A call whose route is gone has removed its entry when the route was dropped.
            Some(call) => drop(call.send(data)),
            None => tracing::debug!(id = %key, "dropping a message of a call that gave up"),
        }
        None
    }

    /// The event stream ended: every waiting call learns it, and later ones are refused.
    pub(crate) fn close(&self) {
        let mut routes = self.lock();
        routes.open = false;
        routes.calls.clear();
    }
}

/// The request id (as JSON) of the lean call `data` answers or reports progress for: one
/// that starts with `prefix`.
fn lean_key<'a>(data: &'a str, prefix: &str) -> Option<&'a str> {
    let probe: Probe<'_> = serde_json::from_str(data).ok()?;
    let key = match probe.method.as_deref() {
        None => probe.id?,
        Some("notifications/progress") => {
            serde_json::from_str::<ProgressToken<'_>>(probe.params?.get())
                .ok()?
                .token
        }
        Some(_) => return None,
    };
    let key = key.get();
    key.strip_prefix('"')
        .is_some_and(|k| k.starts_with(prefix))
        .then_some(key)
}

/// The messages of one lean call, routed until it is dropped.
#[derive(Debug)]
pub(crate) struct Route {
    routes: Arc<CallRoutes>,
    key: Box<str>,
    messages: mpsc::UnboundedReceiver<String>,
}

impl Route {
    /// The call's next message; `None` when the event stream ended first.
    pub(crate) async fn next(&mut self) -> Option<String> {
        self.messages.recv().await
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes.lock().calls.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn responses_and_progress_reach_their_call_and_the_rest_goes_on() {
        let routes = Arc::new(CallRoutes::new("muster-"));
        let mut route = routes.register(r#""muster-3""#).unwrap();
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"muster-3","progress":1}}"#;
        let response = r#"{"jsonrpc":"2.0","id":"muster-3","result":{"content":[]}}"#;
        assert_eq!(routes.dispatch(progress.to_owned()), None);
        assert_eq!(routes.dispatch(response.to_owned()), None);
        assert_eq!(route.next().await.as_deref(), Some(progress));
        assert_eq!(route.next().await.as_deref(), Some(response));

        // rmcp's own traffic, and a text that merely mentions the prefix, go on.
        for other in [
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
            r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"muster-3"}]}}"#,
            r#"{"jsonrpc":"2.0","id":"muster-9","method":"ping"}"#,
        ] {
            assert_eq!(routes.dispatch(other.to_owned()).as_deref(), Some(other));
        }
    }

    #[tokio::test]
    async fn a_call_that_gave_up_loses_its_messages_and_a_closed_stream_ends_the_rest() {
        let routes = Arc::new(CallRoutes::new("muster-"));
        drop(routes.register(r#""muster-1""#).unwrap());
        let late = r#"{"jsonrpc":"2.0","id":"muster-1","result":{}}"#;
        assert_eq!(routes.dispatch(late.to_owned()), None);
        assert!(routes.lock().calls.is_empty());

        let mut waiting = routes.register(r#""muster-2""#).unwrap();
        routes.close();
        assert_eq!(waiting.next().await, None);
        assert!(routes.register(r#""muster-3""#).is_none());
    }
}
