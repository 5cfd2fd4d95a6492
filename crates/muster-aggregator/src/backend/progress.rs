//! Routes `notifications/progress` from the server to the caller of the matching call.
//!
//! The client stamps its own progress token on every request, so the router maps that token
//! to the caller's [`ProgressSink`]. A notification can arrive before the call registers its
//! token; such early notifications are held (a few, briefly) and delivered on registration.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use muster_core::tool::{ProgressSink, ProgressUpdate};
use rmcp::model::{ProgressNotificationParam, ProgressToken};

const EARLY_LIMIT: usize = 64;

#[derive(Default)]
struct Routes {
    sinks: HashMap<ProgressToken, ProgressSink>,
    early: VecDeque<(ProgressToken, ProgressUpdate)>,
}

/// The token → sink map of one connection. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct ProgressRouter {
    routes: Arc<Mutex<Routes>>,
}

impl std::fmt::Debug for ProgressRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("ProgressRouter")
            .field("calls", &routes.sinks.len())
            .finish()
    }
}

/// Unregisters a token when dropped.
#[derive(Debug)]
pub(crate) struct Registration {
    router: ProgressRouter,
    token: ProgressToken,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut routes = self.router.lock();
        routes.sinks.remove(&self.token);
    }
}

impl ProgressRouter {
    fn lock(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends progress of `token` to `sink` until the registration is dropped, first
    /// delivering what arrived early.
    pub(crate) fn register(&self, token: ProgressToken, sink: ProgressSink) -> Registration {
        let early: Vec<ProgressUpdate> = {
            let mut routes = self.lock();
            routes.sinks.insert(token.clone(), sink.clone());
            let (mine, rest): (Vec<_>, Vec<_>) =
                routes.early.drain(..).partition(|(t, _)| *t == token);
            routes.early = rest.into();
            mine.into_iter().map(|(_, u)| u).collect()
        };
        for update in early {
            sink.report(update);
        }
        Registration {
            router: self.clone(),
            token,
        }
    }

    /// Delivers one notification from the server.
    pub(crate) fn deliver(&self, param: ProgressNotificationParam) {
        let update = ProgressUpdate {
            progress: param.progress,
            total: param.total,
            message: param.message,
        };
        let sink = {
            let mut routes = self.lock();
            match routes.sinks.get(&param.progress_token) {
                Some(sink) => sink.clone(),
                None => {
                    if routes.early.len() >= EARLY_LIMIT {
                        routes.early.pop_front();
                    }
                    routes.early.push_back((param.progress_token, update));
                    return;
                }
            }
        };
        sink.report(update);
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    fn recorder() -> (ProgressSink, Arc<Mutex<Vec<f64>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        (
            ProgressSink::new(move |u| s.lock().unwrap().push(u.progress)),
            seen,
        )
    }

    #[test]
    fn routes_by_token_and_holds_early_notifications() {
        let router = ProgressRouter::default();
        router.deliver(ProgressNotificationParam::new(token(2), 0.5));
        let (sink1, seen1) = recorder();
        let (sink2, seen2) = recorder();
        let r1 = router.register(token(1), sink1);
        let r2 = router.register(token(2), sink2);
        router.deliver(ProgressNotificationParam::new(token(1), 1.0));
        router.deliver(ProgressNotificationParam::new(token(2), 2.0));
        drop(r1);
        router.deliver(ProgressNotificationParam::new(token(1), 3.0));
        assert_eq!(*seen1.lock().unwrap(), [1.0]);
        assert_eq!(*seen2.lock().unwrap(), [0.5, 2.0]);
        drop(r2);
    }
}
