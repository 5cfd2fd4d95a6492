//! Routes the requests a server sends to muster during a call (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`) to the client that made the call.
//!
//! Over streamable HTTP the request arrives on the response stream of the call it belongs
//! to, and rmcp says which ([`InboundStreamOrigin`]). Over stdio and legacy SSE nothing on
//! the wire ties it to a call: it goes to the caller when exactly one call that can be asked
//! is in flight on the connection, and is refused otherwise, so one session's request never
//! reaches another session's client.

#![allow(
    deprecated,
    reason = "sampling and roots are deprecated by SEP-2577 but still sent by servers on 2025-11-25"
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use muster_core::tool::CallerChannel;
use rmcp::model::{ErrorCode, ErrorData, RequestId};
use rmcp::service::{InboundStreamOrigin, RequestContext, RoleClient};
use tokio::sync::Notify;

/// How long a request that arrived on the stream of a call waits for that call's request id
/// to be known (it is known once the call is sent, a moment after the server may ask).
const BIND_WAIT: Duration = Duration::from_secs(2);

#[derive(Default)]
struct Calls {
    next: u64,
    entries: HashMap<u64, Entry>,
}

struct Entry {
    /// The id of the call's request, once it is sent.
    id: Option<RequestId>,
    caller: CallerChannel,
}

/// The calls in flight on one connection whose callers can be asked. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct CallerRouter {
    calls: Arc<Mutex<Calls>>,
    bound: Arc<Notify>,
}

impl std::fmt::Debug for CallerRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallerRouter")
            .field("calls", &self.lock().entries.len())
            .finish()
    }
}

/// Forgets a call when dropped.
#[derive(Debug)]
pub(crate) struct CallerRegistration {
    router: CallerRouter,
    key: u64,
}

impl CallerRegistration {
    /// Records the id the call was sent with.
    pub(crate) fn bind(&self, id: RequestId) {
        if let Some(entry) = self.router.lock().entries.get_mut(&self.key) {
            entry.id = Some(id);
        }
        self.router.bound.notify_waiters();
    }
}

impl Drop for CallerRegistration {
    fn drop(&mut self) {
        self.router.lock().entries.remove(&self.key);
        self.router.bound.notify_waiters();
    }
}

/// Why a request found no caller.
enum Unresolved {
    /// It names a call whose id is not known yet: ask again once it is.
    Unbound,
    Refused(ErrorData),
}

impl CallerRouter {
    fn lock(&self) -> MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Routes the server's requests during one call to `caller` until the registration is
    /// dropped. Register before sending the call, so no request of the server can come
    /// first, then [`bind`](CallerRegistration::bind) the request id.
    pub(crate) fn register(&self, caller: CallerChannel) -> CallerRegistration {
        let mut calls = self.lock();
        let key = calls.next;
        calls.next = calls.next.wrapping_add(1);
        calls.entries.insert(key, Entry { id: None, caller });
        CallerRegistration {
            router: self.clone(),
            key,
        }
    }

    /// Whether no call that can be asked is in flight.
    pub(crate) fn is_idle(&self) -> bool {
        self.lock().entries.is_empty()
    }

    /// The caller a request of the server with `context` goes to.
    pub(crate) async fn caller_of(
        &self,
        context: &RequestContext<RoleClient>,
        method: &str,
    ) -> Result<CallerChannel, ErrorData> {
        let origin = context.extensions.get::<InboundStreamOrigin>();
        let deadline = tokio::time::Instant::now() + BIND_WAIT;
        loop {
            let bound = self.bound.notified();
            match self.resolve(origin, method) {
                Ok(caller) => return Ok(caller),
                Err(Unresolved::Refused(error)) => return Err(error),
                Err(Unresolved::Unbound) => {
                    if tokio::time::timeout_at(deadline, bound).await.is_err() {
                        return Err(unroutable(format!(
                            "{method} arrived for a call muster no longer tracks"
                        )));
                    }
                }
            }
        }
    }

    fn resolve(
        &self,
        origin: Option<&InboundStreamOrigin>,
        method: &str,
    ) -> Result<CallerChannel, Unresolved> {
        let calls = self.lock();
        if let Some(InboundStreamOrigin::OutboundRequest(id)) = origin {
            if let Some(entry) = calls.entries.values().find(|e| e.id.as_ref() == Some(id)) {
                return Ok(entry.caller.clone());
            }
            if calls.entries.values().any(|e| e.id.is_none()) {
                return Err(Unresolved::Unbound);
            }
        }
        let mut entries = calls.entries.values();
        match (entries.next(), entries.next()) {
            (Some(entry), None) => Ok(entry.caller.clone()),
            (None, _) => Err(Unresolved::Refused(unroutable(format!(
                "{method} reached muster outside any call that can relay it to a client"
            )))),
            (Some(_), Some(_)) => Err(Unresolved::Refused(unroutable(format!(
                "{method} cannot be attributed to one of the calls in flight on this \
                 connection; muster relays it only when exactly one call is running"
            )))),
        }
    }
}

fn unroutable(message: String) -> ErrorData {
    ErrorData::new(ErrorCode::INVALID_REQUEST, message, None)
}

#[cfg(test)]
mod tests {
    use futures::future::BoxFuture;
    use muster_core::tool::CallerRequests;
    use rmcp::model::{
        CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
        ListRootsResult, NumberOrString,
    };

    use super::*;

    struct Nobody;

    impl CallerRequests for Nobody {
        fn create_message(
            &self,
            _: CreateMessageRequestParams,
        ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorData>> {
            Box::pin(std::future::ready(Err(ErrorData::internal_error(
                "no", None,
            ))))
        }
        fn create_elicitation(
            &self,
            _: ElicitRequestParams,
        ) -> BoxFuture<'static, Result<ElicitResult, ErrorData>> {
            Box::pin(std::future::ready(Err(ErrorData::internal_error(
                "no", None,
            ))))
        }
        fn list_roots(&self) -> BoxFuture<'static, Result<ListRootsResult, ErrorData>> {
            Box::pin(std::future::ready(Ok(ListRootsResult::default())))
        }
    }

    fn id(n: i64) -> RequestId {
        NumberOrString::Number(n)
    }

    fn refused(result: Result<CallerChannel, Unresolved>) -> ErrorData {
        match result {
            Err(Unresolved::Refused(error)) => error,
            Err(Unresolved::Unbound) => panic!("unbound"),
            Ok(_) => panic!("resolved"),
        }
    }

    fn resolved(result: Result<CallerChannel, Unresolved>) -> CallerChannel {
        match result {
            Ok(caller) => caller,
            Err(_) => panic!("not resolved"),
        }
    }

    #[test]
    fn routes_by_stream_then_by_the_only_call_and_refuses_ambiguity() {
        let router = CallerRouter::default();
        let (a, b) = (CallerChannel::new(Nobody), CallerChannel::new(Nobody));
        refused(router.resolve(None, "sampling/createMessage"));

        let ra = router.register(a.clone());
        assert!(resolved(router.resolve(None, "m")).same_as(&a));
        ra.bind(id(1));

        let rb = router.register(b.clone());
        let on_b = InboundStreamOrigin::OutboundRequest(id(2));
        assert!(matches!(
            router.resolve(Some(&on_b), "m"),
            Err(Unresolved::Unbound)
        ));
        rb.bind(id(2));
        assert!(resolved(router.resolve(Some(&on_b), "m")).same_as(&b));
        let error = refused(router.resolve(None, "roots/list"));
        assert!(error.message.contains("exactly one call"), "{error:?}");
        refused(router.resolve(Some(&InboundStreamOrigin::Unassociated), "m"));

        drop(ra);
        assert!(resolved(router.resolve(None, "m")).same_as(&b));
        drop(rb);
        assert!(router.is_idle());
        refused(router.resolve(None, "m"));
    }
}
