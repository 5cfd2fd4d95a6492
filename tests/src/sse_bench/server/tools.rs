//! The server's tools, with the names, descriptions, input schemas and results of the shared
//! harness's `bench-backend`:
//!
//! - `echo {message: string}`: text content equal to `message`;
//! - `sleep_ms {ms: integer}`: after `ms` milliseconds (capped at 60000), text `slept <ms> ms`.
//!
//! Arguments that do not fit a tool's schema give a tool error (`isError: true`) and an
//! unknown tool JSON-RPC error -32602, as rmcp answers them.

use std::sync::LazyLock;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::mcp::RpcError;

/// The longest `sleep_ms` sleeps.
const MAX_SLEEP_MS: u64 = 60_000;

/// A `tools/call` result, now or after a delay.
#[derive(Debug, PartialEq)]
pub(super) enum CallOutcome {
    /// This result, now.
    Now(Value),
    /// This result, after this long.
    After(Duration, Value),
}

#[derive(Debug, Deserialize)]
struct EchoArgs {
    message: String,
}

#[derive(Debug, Deserialize)]
struct SleepArgs {
    ms: u64,
}

/// The result of `tools/list`.
pub(super) fn list() -> &'static Value {
    static LIST: LazyLock<Value> = LazyLock::new(|| {
        json!({"tools": [
            {
                "name": "echo",
                "description": "Return the message argument unchanged as text.",
                "inputSchema": {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "properties": {"message": {
                        "description": "Text returned unchanged.", "type": "string"
                    }},
                    "required": ["message"],
                    "type": "object"
                }
            },
            {
                "name": "sleep_ms",
                "description": "Sleep for ms milliseconds, then answer.",
                "inputSchema": {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "properties": {"ms": {
                        "description": "Milliseconds to sleep before answering (capped at 60000).",
                        "format": "uint64", "minimum": 0, "type": "integer"
                    }},
                    "required": ["ms"],
                    "type": "object"
                }
            }
        ]})
    });
    &LIST
}

/// Calls the tool `params` names.
///
/// # Errors
///
/// JSON-RPC error -32602 when `params` name no tool, or an unknown one.
pub(super) fn call(params: Option<&Value>) -> Result<CallOutcome, RpcError> {
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| invalid_params("tools/call: params name no tool".to_owned()))?;
    // Missing or null arguments are no arguments, as rmcp takes them.
    let empty = Value::Object(serde_json::Map::new());
    let arguments = params
        .and_then(|p| p.get("arguments"))
        .filter(|a| !a.is_null())
        .unwrap_or(&empty);
    Ok(match name {
        "echo" => match EchoArgs::deserialize(arguments) {
            Ok(EchoArgs { message }) => CallOutcome::Now(text_result(message, false)),
            Err(e) => CallOutcome::Now(argument_error(&e)),
        },
        "sleep_ms" => match SleepArgs::deserialize(arguments) {
            Ok(SleepArgs { ms }) => {
                let ms = ms.min(MAX_SLEEP_MS);
                CallOutcome::After(
                    Duration::from_millis(ms),
                    text_result(format!("slept {ms} ms"), false),
                )
            }
            Err(e) => CallOutcome::Now(argument_error(&e)),
        },
        _ => return Err(invalid_params("tool not found".to_owned())),
    })
}

fn invalid_params(message: String) -> RpcError {
    RpcError {
        code: -32602,
        message,
    }
}

fn argument_error(e: &serde_json::Error) -> Value {
    text_result(format!("failed to deserialize parameters: {e}"), true)
}

fn text_result(text: String, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now(outcome: CallOutcome) -> Value {
        match outcome {
            CallOutcome::Now(v) => v,
            CallOutcome::After(..) => panic!("delayed"),
        }
    }

    #[test]
    fn echo_returns_its_message() {
        let params = json!({"name": "echo", "arguments": {"message": "hi"}});
        assert_eq!(
            now(call(Some(&params)).unwrap()),
            json!({"content": [{"type": "text", "text": "hi"}], "isError": false})
        );
    }

    #[test]
    fn bad_arguments_are_tool_errors() {
        for params in [
            json!({"name": "echo"}),
            json!({"name": "echo", "arguments": {}}),
        ] {
            assert_eq!(
                now(call(Some(&params)).unwrap()),
                json!({"content": [{"type": "text",
                    "text": "failed to deserialize parameters: missing field `message`"}],
                    "isError": true})
            );
        }
        let params = json!({"name": "sleep_ms", "arguments": {"ms": -1}});
        let result = now(call(Some(&params)).unwrap());
        assert_eq!(result["isError"], true);
    }

    #[test]
    fn unknown_tools_and_missing_names_are_invalid_params() {
        let params = json!({"name": "nope", "arguments": {}});
        assert_eq!(
            call(Some(&params)).unwrap_err(),
            RpcError {
                code: -32602,
                message: "tool not found".to_owned()
            }
        );
        assert_eq!(call(None).unwrap_err().code, -32602);
        assert_eq!(
            call(Some(&json!({"arguments": {}}))).unwrap_err().code,
            -32602
        );
    }

    #[test]
    fn sleep_ms_is_capped() {
        let params = json!({"name": "sleep_ms", "arguments": {"ms": 1_000_000}});
        assert_eq!(
            call(Some(&params)).unwrap(),
            CallOutcome::After(
                Duration::from_millis(MAX_SLEEP_MS),
                text_result("slept 60000 ms".to_owned(), false)
            )
        );
    }

    #[test]
    fn the_list_names_both_tools() {
        let names: Vec<&str> = list()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["echo", "sleep_ms"]);
    }
}
