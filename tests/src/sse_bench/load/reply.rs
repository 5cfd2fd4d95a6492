//! Reading JSON-RPC messages off the event stream: which call a response answers, and whether
//! a `tools/call` result counts as a success (the checks of the harness's `mcp-load`).

use serde_json::Value;

/// The id of a JSON-RPC response (a message with `result` or `error`) whose id is a number or
/// a string holding one, as the load generator numbers its requests.
pub(super) fn response_id(message: &Value) -> Option<u64> {
    let fields = message.as_object()?;
    if !fields.contains_key("result") && !fields.contains_key("error") {
        return None;
    }
    match fields.get("id")? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// Whether the response to a `tools/call` is a success: no JSON-RPC error, a result whose
/// `isError` is not true, and, with `expect`, result text containing it.
///
/// # Errors
///
/// Why the call failed, as `mcp-load` words it.
pub(super) fn check_call_result(message: &Value, expect: Option<&str>) -> Result<(), String> {
    if let Some(err) = message.get("error") {
        return Err(format!(
            "JSON-RPC error {}: {}",
            err.get("code").map(Value::to_string).unwrap_or_default(),
            clip(
                err.get("message").and_then(Value::as_str).unwrap_or(""),
                160
            )
        ));
    }
    let result = message.get("result").ok_or("response has no result")?;
    let text: String = result
        .get("content")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(format!("tool result isError: {}", clip(&text, 160)));
    }
    if let Some(want) = expect
        && !text.contains(want)
    {
        return Err(format!("result text lacks {want:?}: {}", clip(&text, 160)));
    }
    Ok(())
}

/// `s` cut to `n` characters, with `…` when cut.
pub(super) fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ids_of_responses_only() {
        assert_eq!(
            response_id(&json!({"jsonrpc":"2.0","id":7,"result":{}})),
            Some(7)
        );
        assert_eq!(
            response_id(&json!({"id":"7","error":{"code":-1,"message":"m"}})),
            Some(7)
        );
        assert_eq!(response_id(&json!({"id":7,"method":"ping"})), None);
        assert_eq!(response_id(&json!({"id":"x","result":{}})), None);
        assert_eq!(response_id(&json!([{"id":7,"result":{}}])), None);
    }

    #[test]
    fn result_checks() {
        let ok = json!({"result":{"content":[{"type":"text","text":"hello"}],"isError":false}});
        assert!(check_call_result(&ok, Some("hell")).is_ok());
        assert!(check_call_result(&ok, Some("bye")).is_err());
        let tool_err = json!({"result":{"content":[{"type":"text","text":"boom"}],"isError":true}});
        assert!(
            check_call_result(&tool_err, None)
                .unwrap_err()
                .contains("boom")
        );
        let rpc_err = json!({"error":{"code":-32601,"message":"no such method"}});
        assert!(
            check_call_result(&rpc_err, None)
                .unwrap_err()
                .contains("-32601")
        );
        // a muster-style envelope: the inner result is JSON text inside the outer text
        let env = json!({"result":{"content":[{"type":"text","text":"{\"isError\":false,\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}"}]}});
        assert!(check_call_result(&env, Some("\"text\":\"x\"")).is_ok());
    }
}
