//! JSON-RPC message shapes the bridge reads or makes itself.

use serde_json::{Value, json};

/// The JSON-RPC code of errors the bridge reports for transport failures.
pub(super) const TRANSPORT_ERROR: i64 = -32000;

/// What a message is, as far as forwarding cares.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kind {
    /// A request: it has an id and a method.
    Request {
        /// The request id.
        id: Value,
        /// The method.
        method: String,
    },
    /// A notification: a method and no id.
    Notification {
        /// The method.
        method: String,
    },
    /// A response (or anything else, such as a batch): forwarded as is.
    Other,
}

impl Kind {
    /// Classifies `message`.
    pub(super) fn of(message: &Value) -> Self {
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (Some(method), Some(id)) if !id.is_null() => Self::Request {
                id: id.clone(),
                method: method.to_owned(),
            },
            (Some(method), _) => Self::Notification {
                method: method.to_owned(),
            },
            (None, _) => Self::Other,
        }
    }
}

/// Whether `message` is the response to the request `id`.
pub(super) fn answers(message: &Value, id: &Value) -> bool {
    message.get("method").is_none() && message.get("id") == Some(id)
}

/// An error response to the request `id`.
pub(super) fn error(id: &Value, message: impl Into<String>) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": TRANSPORT_ERROR, "message": message.into()},
    })
}

/// The response to a line that is not JSON.
pub(super) fn parse_error(e: &serde_json::Error) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {e}")},
    })
}

/// A notification without parameters.
pub(super) fn notification(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method})
}

/// The request id a `notifications/cancelled` names.
pub(super) fn cancelled_request(message: &Value) -> Option<Value> {
    message.pointer("/params/requestId").cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_messages() {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        assert_eq!(
            Kind::of(&request),
            Kind::Request {
                id: json!(1),
                method: "tools/list".to_owned()
            }
        );
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert!(matches!(Kind::of(&note), Kind::Notification { .. }));
        let response = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
        assert_eq!(Kind::of(&response), Kind::Other);
        assert!(answers(&response, &json!(1)));
        assert!(!answers(&request, &json!(1)));
    }
}
