//! What a call can ask of its caller: the requests an MCP server sends to its client while
//! it handles a call (`sampling/createMessage`, `elicitation/create`, `roots/list`), and the
//! caller's request `_meta` that goes upstream with the call.

#![allow(
    deprecated,
    reason = "sampling and roots are deprecated by SEP-2577 but still sent by servers on 2025-11-25"
)]

use std::fmt;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorData,
    JsonObject, ListRootsResult,
};

/// The requests a tool's server may send to the client that called it.
///
/// muster's front door implements it over the calling session, so a backend's sampling,
/// elicitation and roots requests made during a call reach the client that made the call.
/// Errors are JSON-RPC errors, handed back to the server as they are.
pub trait CallerRequests: Send + Sync {
    /// Asks the caller's model for a completion (`sampling/createMessage`).
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorData>>;

    /// Asks the caller's user for input (`elicitation/create`).
    fn create_elicitation(
        &self,
        params: ElicitRequestParams,
    ) -> BoxFuture<'static, Result<ElicitResult, ErrorData>>;

    /// Asks the caller for its roots (`roots/list`).
    fn list_roots(&self) -> BoxFuture<'static, Result<ListRootsResult, ErrorData>>;
}

/// The caller of a call, as far as its server may send it requests. Cheap to clone.
#[derive(Clone)]
pub struct CallerChannel(Arc<dyn CallerRequests>);

impl CallerChannel {
    /// A channel over `requests`.
    pub fn new(requests: impl CallerRequests + 'static) -> Self {
        Self(Arc::new(requests))
    }

    /// The requests the caller answers.
    pub fn requests(&self) -> &dyn CallerRequests {
        &*self.0
    }

    /// Whether both handles lead to the same caller.
    pub fn same_as(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for CallerChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CallerChannel")
    }
}

/// The `_meta` of the caller's request that goes upstream with the call: trace context
/// (`traceparent`, `tracestate`) and any other key of the caller's, but never the keys the
/// protocol reserves for its own lifecycle (`io.modelcontextprotocol/…`, `progressToken`),
/// which each connection sets itself.
pub fn upstream_meta(meta: &JsonObject) -> Option<JsonObject> {
    let kept: JsonObject = meta
        .iter()
        .filter(|(key, _)| !is_connection_key(key))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    (!kept.is_empty()).then_some(kept)
}

/// Keys that belong to one connection: the progress token and the reserved
/// `io.modelcontextprotocol/` and `modelcontextprotocol.io/` namespaces.
fn is_connection_key(key: &str) -> bool {
    key == "progressToken"
        || key.starts_with("io.modelcontextprotocol/")
        || key.starts_with("modelcontextprotocol.io/")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn upstream_meta_keeps_trace_context_and_drops_connection_keys() {
        let meta = json!({
            "progressToken": 7,
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "tracestate": "vendor=1",
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "example.com/tenant": "acme",
        });
        let kept = upstream_meta(meta.as_object().unwrap()).unwrap();
        let mut keys: Vec<&str> = kept.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["example.com/tenant", "traceparent", "tracestate"]);
    }

    #[test]
    fn upstream_meta_of_only_connection_keys_is_none() {
        let meta = json!({"progressToken": "t"});
        assert!(upstream_meta(meta.as_object().unwrap()).is_none());
    }
}
