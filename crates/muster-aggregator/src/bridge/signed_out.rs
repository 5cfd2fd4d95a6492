//! What the bridge answers by itself while muster refuses it (`401`): an MCP server with one
//! tool, `authenticate_muster`, that signs in to muster in the browser.

use serde_json::{Value, json};

use super::messages;

/// The one tool offered while signed out.
pub(super) const TOOL: &str = "authenticate_muster";
/// The protocol version answered when the client names none.
const DEFAULT_PROTOCOL: &str = "2025-06-18";

/// The answer to `initialize`: the bridge's own capabilities (tools, whose list changes once
/// the sign-in completes), in the protocol version the client asked for.
pub(super) fn initialize(id: &Value, params: Option<&Value>) -> Value {
    let protocol = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_PROTOCOL);
    result(
        id,
        json!({
            "protocolVersion": protocol,
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "muster-agent", "version": env!("CARGO_PKG_VERSION")},
            "instructions": format!(
                "muster asks for a sign-in: call the {TOOL} tool and open the link it \
                 returns; muster's tools appear once the sign-in completes."
            ),
        }),
    )
}

/// The answer to `tools/list`: only [`TOOL`].
pub(super) fn tools_list(id: &Value) -> Value {
    result(
        id,
        json!({"tools": [{
            "name": TOOL,
            "description": "Signs in to muster in the browser: answers with the sign-in URL \
                            to open (and opens it when it can). Once the sign-in completes, \
                            muster's tools are listed instead of this one.",
            "inputSchema": {"type": "object", "properties": {}},
        }]}),
    )
}

/// The answer to a call of [`TOOL`] that started a sign-in at `url`.
pub(super) fn sign_in_started(id: &Value, url: &str) -> Value {
    result(
        id,
        json!({
            "content": [{"type": "text", "text": format!(
                "Sign in to muster by opening this link in your browser:\n\n{url}\n\n\
                 muster's tools become available once the sign-in completes."
            )}],
            "structuredContent": {"authUrl": url},
            "isError": false,
        }),
    )
}

/// The answer to a call of [`TOOL`] that could not start a sign-in.
pub(super) fn sign_in_failed(id: &Value, reason: &str) -> Value {
    result(
        id,
        json!({
            "content": [{"type": "text", "text": format!("Cannot sign in to muster: {reason}")}],
            "isError": true,
        }),
    )
}

/// The answer to a call of [`TOOL`] after the bridge is signed in again.
pub(super) fn already_signed_in(id: &Value) -> Value {
    result(
        id,
        json!({
            "content": [{"type": "text", "text": "Already signed in to muster."}],
            "isError": false,
        }),
    )
}

/// The answer to every other request: call [`TOOL`] first.
pub(super) fn refused(id: &Value, method: &str, endpoint: &str) -> Value {
    messages::error(
        id,
        format!(
            "muster at {endpoint} asks for a sign-in before {method}: call the {TOOL} tool \
             and open the link it returns"
        ),
    )
}

/// The empty answer (to `ping`).
pub(super) fn empty(id: &Value) -> Value {
    result(id, json!({}))
}

/// Whether the `tools/call` `message` calls [`TOOL`].
pub(super) fn calls_tool(message: &Value) -> bool {
    message.pointer("/params/name").and_then(Value::as_str) == Some(TOOL)
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_as_a_server_with_one_tool() {
        let init = initialize(&json!(1), Some(&json!({"protocolVersion": "2025-03-26"})));
        assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(
            init["result"]["capabilities"],
            json!({"tools": {"listChanged": true}})
        );
        let list = tools_list(&json!(2));
        assert_eq!(list["result"]["tools"][0]["name"], TOOL);
        assert_eq!(
            list["result"]["tools"][0]["inputSchema"]["properties"],
            json!({})
        );
        let started = sign_in_started(&json!(3), "http://x/authorize?a=b");
        assert_eq!(
            started["result"]["structuredContent"]["authUrl"],
            "http://x/authorize?a=b"
        );
        assert!(
            started["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("http://x/authorize?a=b")
        );
        let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                          "params": {"name": TOOL, "arguments": {}}});
        assert!(calls_tool(&call));
        let no = refused(&json!(5), "resources/list", "http://m/mcp");
        assert!(
            no["error"]["message"]
                .as_str()
                .unwrap()
                .contains("call the authenticate_muster tool")
        );
    }
}
