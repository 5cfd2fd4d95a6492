//! The MCP methods of the server: what each JSON-RPC message posted to a session answers.
//!
//! As the shared harness's rmcp-based `bench-backend` answers: `initialize` (capabilities
//! `tools`), `ping`, `tools/list` and `tools/call`; notifications and responses from the
//! client are taken silently; any other method is JSON-RPC error -32601 naming the method.

use std::time::Duration;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use super::tools::{self, CallOutcome};

/// Protocol revisions the server speaks; `initialize` echoes the client's if it is one.
pub(super) const PROTOCOL_VERSIONS: [&str; 3] = ["2024-11-05", "2025-03-26", "2025-06-18"];

/// The revision `initialize` answers when the client asks for none of
/// [`PROTOCOL_VERSIONS`]: that of the legacy HTTP+SSE transport.
pub(super) const DEFAULT_PROTOCOL_VERSION: &str = "2024-11-05";

/// One JSON-RPC message as posted: a request, a notification or a response.
#[derive(Debug, Deserialize)]
pub(super) struct Incoming {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    result: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// What to send on the session's stream for one message.
#[derive(Debug, PartialEq)]
pub(super) enum Handled {
    /// Nothing: a notification or a response.
    Nothing,
    /// This serialized JSON-RPC response, now.
    Reply(String),
    /// This serialized JSON-RPC response, after this long.
    Later(Duration, String),
}

/// A JSON-RPC error object.
#[derive(Debug, PartialEq)]
pub(super) struct RpcError {
    /// The error code.
    pub(super) code: i64,
    /// The message.
    pub(super) message: String,
}

/// Handles one posted message.
///
/// # Errors
///
/// A message that is neither a request, a notification nor a response (an explanation for
/// the `400` answer).
pub(super) fn handle(message: Incoming) -> Result<Handled, String> {
    let Some(method) = message.method else {
        return if message.result.is_some() || message.error.is_some() {
            Ok(Handled::Nothing)
        } else {
            Err("message has neither method nor result nor error".to_owned())
        };
    };
    let Some(id) = message.id else {
        return Ok(Handled::Nothing);
    };
    let params = message.params.as_ref();
    let (delay, outcome) = match method.as_str() {
        "initialize" => (None, Ok(initialize(params))),
        "ping" => (None, Ok(json!({}))),
        "tools/list" => (None, Ok(tools::list().clone())),
        "tools/call" => match tools::call(params) {
            Ok(CallOutcome::Now(result)) => (None, Ok(result)),
            Ok(CallOutcome::After(delay, result)) => (Some(delay), Ok(result)),
            Err(e) => (None, Err(e)),
        },
        _ => (
            None,
            Err(RpcError {
                code: -32601,
                message: method,
            }),
        ),
    };
    let reply = response(id, outcome);
    Ok(match delay {
        Some(delay) => Handled::Later(delay, reply),
        None => Handled::Reply(reply),
    })
}

/// The result of `initialize`.
fn initialize(params: Option<&Value>) -> Value {
    let asked = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str);
    let version = PROTOCOL_VERSIONS
        .into_iter()
        .find(|v| Some(*v) == asked)
        .unwrap_or(DEFAULT_PROTOCOL_VERSION);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "sse-bench", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Benchmark backend: echo and sleep_ms.",
    })
}

/// The serialized JSON-RPC response with this id.
fn response(id: Value, outcome: Result<Value, RpcError>) -> String {
    let message = match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(RpcError { code, message }) => json!({
            "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}
        }),
    };
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(message: Value) -> Value {
        let message: Incoming = serde_json::from_value(message).unwrap();
        match handle(message).unwrap() {
            Handled::Reply(json) | Handled::Later(_, json) => serde_json::from_str(&json).unwrap(),
            Handled::Nothing => Value::Null,
        }
    }

    #[test]
    fn initialize_echoes_a_supported_version_and_defaults_to_2024_11_05() {
        for (asked, answered) in [
            ("2025-06-18", "2025-06-18"),
            ("2025-03-26", "2025-03-26"),
            ("2024-11-05", "2024-11-05"),
            ("1999-01-01", "2024-11-05"),
        ] {
            let reply = answer(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": asked, "capabilities": {}}}));
            assert_eq!(reply["result"]["protocolVersion"], answered);
            assert_eq!(reply["result"]["capabilities"], json!({"tools": {}}));
            assert_eq!(reply["id"], 0);
        }
    }

    #[test]
    fn notifications_and_responses_are_taken_silently() {
        for message in [
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
        ] {
            let message: Incoming = serde_json::from_value(message).unwrap();
            assert_eq!(handle(message).unwrap(), Handled::Nothing);
        }
        let neither: Incoming = serde_json::from_value(json!({"jsonrpc": "2.0", "id": 1})).unwrap();
        assert!(handle(neither).is_err());
    }

    #[test]
    fn ping_and_unknown_methods() {
        assert_eq!(
            answer(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"})),
            json!({"jsonrpc": "2.0", "id": "p", "result": {}})
        );
        assert_eq!(
            answer(json!({"jsonrpc": "2.0", "id": 5, "method": "foo/bar"})),
            json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "foo/bar"}})
        );
    }

    #[test]
    fn sleep_ms_is_answered_later() {
        let message: Incoming = serde_json::from_value(json!({"jsonrpc": "2.0", "id": 7,
            "method": "tools/call", "params": {"name": "sleep_ms", "arguments": {"ms": 5}}}))
        .unwrap();
        let Handled::Later(delay, json) = handle(message).unwrap() else {
            panic!("not delayed")
        };
        assert_eq!(delay, Duration::from_millis(5));
        assert!(json.contains("slept 5 ms"), "{json}");
    }
}
