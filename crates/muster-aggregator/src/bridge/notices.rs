//! Auth notices on tool results, as the original muster's agent adds them (its ADR-008): the
//! servers of the session's `auth://status` that wait for a sign-in, read every
//! [`AUTH_STATUS_INTERVAL`](super::AUTH_STATUS_INTERVAL), are named at the end of every
//! `tools/call` result, as text and under `_meta["giantswarm.io/auth_required"]`.

use serde::Serialize;
use serde_json::{Map, Value, json};

/// The `_meta` key of the servers waiting for a sign-in.
pub(super) const META_KEY: &str = "giantswarm.io/auth_required";
/// The resource read.
const STATUS_URI: &str = "auth://status";
/// The tool that signs a session in to a server.
const AUTH_TOOL: &str = "core_auth_login";

/// One server that waits for the session to sign in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct AuthRequired {
    /// The server's name.
    pub(super) server: String,
    /// Its authorization server; empty when unknown.
    pub(super) issuer: String,
    /// The scope it asks for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) scope: Option<String>,
    /// The tool to call.
    pub(super) auth_tool: &'static str,
}

/// The `resources/read` of `auth://status`, with the bridge's own request `id`.
pub(super) fn status_request(id: &Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "resources/read",
        "params": {"uri": STATUS_URI},
    })
}

/// The servers waiting for a sign-in, from the response to [`status_request`]; `None` when
/// the response is an error or carries no status document.
pub(super) fn from_response(response: &Value) -> Option<Vec<AuthRequired>> {
    let contents = response.pointer("/result/contents")?.as_array()?;
    let text = contents
        .iter()
        .find_map(|c| c.get("text").and_then(Value::as_str))?;
    let document: Value = serde_json::from_str(text).ok()?;
    let servers = document.get("servers")?.as_array()?;
    let text_of = |server: &Value, key: &str| {
        server
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Some(
        servers
            .iter()
            .filter(|s| s.get("status").and_then(Value::as_str) == Some("auth_required"))
            .filter_map(|s| {
                Some(AuthRequired {
                    server: text_of(s, "name")?,
                    issuer: text_of(s, "issuer").unwrap_or_default(),
                    scope: text_of(s, "scope"),
                    auth_tool: AUTH_TOOL,
                })
            })
            .collect(),
    )
}

/// Adds the notice about `servers` to the `tools/call` response `message`: one text block at
/// the end of its content and the list under `_meta`. Error responses and an empty list leave
/// it unchanged.
pub(super) fn decorate(message: &mut Value, servers: &[AuthRequired]) {
    if servers.is_empty() {
        return;
    }
    let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) else {
        return;
    };
    let block = json!({"type": "text", "text": notice(servers)});
    match result.get_mut("content").and_then(Value::as_array_mut) {
        Some(content) => content.push(block),
        None => {
            result.insert("content".to_owned(), Value::Array(vec![block]));
        }
    }
    let listed = serde_json::to_value(servers).unwrap_or(Value::Null);
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(META_KEY.to_owned(), listed);
    }
}

/// The text of the notice: each server and how to sign in to it, then which of them share an
/// identity provider.
fn notice(servers: &[AuthRequired]) -> String {
    let mut text = String::from("\n---\nAuthentication Required:\n");
    for s in servers {
        text.push_str(&format!(
            "- {0}: call '{AUTH_TOOL}' with server='{0}' to sign in\n",
            s.server
        ));
    }
    let mut issuers: Vec<(&str, Vec<&str>)> = Vec::new();
    for s in servers.iter().filter(|s| !s.issuer.is_empty()) {
        match issuers.iter_mut().find(|(issuer, _)| *issuer == s.issuer) {
            Some((_, names)) => names.push(&s.server),
            None => issuers.push((&s.issuer, vec![&s.server])),
        }
    }
    for (issuer, names) in issuers.iter().filter(|(_, names)| names.len() > 1) {
        text.push_str(&format!(
            "\nNote: {} use the same identity provider ({issuer}). Signing in to one will \
             authenticate all of them.\n",
            names.join(" and ")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(servers: Value) -> Value {
        let text = json!({ "servers": servers }).to_string();
        json!({"jsonrpc": "2.0", "id": "x", "result": {"contents": [
            {"uri": STATUS_URI, "mimeType": "application/json", "text": text}
        ]}})
    }

    #[test]
    fn reads_the_servers_that_wait_for_a_sign_in() {
        let response = status(json!([
            {"name": "a", "status": "auth_required", "issuer": "https://idp", "scope": "x y",
             "auth_tool": "core_auth_login"},
            {"name": "b", "status": "connected", "issuer": "https://idp"},
            {"name": "c", "status": "auth_required", "scope": ""},
        ]));
        let list = from_response(&response).unwrap();
        assert_eq!(
            serde_json::to_value(&list).unwrap(),
            json!([
                {"server": "a", "issuer": "https://idp", "scope": "x y",
                 "auth_tool": "core_auth_login"},
                {"server": "c", "issuer": "", "auth_tool": "core_auth_login"},
            ])
        );
        let error =
            json!({"jsonrpc": "2.0", "id": "x", "error": {"code": -32002, "message": "no"}});
        assert_eq!(from_response(&error), None);
        assert_eq!(from_response(&status(json!([]))), Some(Vec::new()));
    }

    #[test]
    fn decorates_results_as_the_original_does() {
        let list = from_response(&status(json!([
            {"name": "k8s", "status": "auth_required", "issuer": "https://dex"},
            {"name": "gitlab", "status": "auth_required", "issuer": "https://gl"},
            {"name": "argo", "status": "auth_required", "issuer": "https://dex"},
        ])))
        .unwrap();
        let mut message = json!({"jsonrpc": "2.0", "id": 3, "result": {
            "content": [{"type": "text", "text": "hi"}],
            "_meta": {"other": 1},
        }});
        decorate(&mut message, &list);
        let content = message["result"]["content"].as_array().unwrap();
        assert_eq!(content.len(), 2);
        assert_eq!(
            content[1]["text"],
            "\n---\nAuthentication Required:\n\
             - k8s: call 'core_auth_login' with server='k8s' to sign in\n\
             - gitlab: call 'core_auth_login' with server='gitlab' to sign in\n\
             - argo: call 'core_auth_login' with server='argo' to sign in\n\
             \nNote: k8s and argo use the same identity provider (https://dex). Signing in to \
             one will authenticate all of them.\n"
        );
        assert_eq!(message["result"]["_meta"]["other"], 1);
        assert_eq!(
            message["result"]["_meta"][META_KEY][1],
            json!({"server": "gitlab", "issuer": "https://gl", "auth_tool": "core_auth_login"})
        );

        let mut error = json!({"jsonrpc": "2.0", "id": 4, "error": {"code": 1, "message": "x"}});
        let before = error.clone();
        decorate(&mut error, &list);
        assert_eq!(error, before);
        let mut plain = json!({"jsonrpc": "2.0", "id": 5, "result": {"content": []}});
        let before = plain.clone();
        decorate(&mut plain, &[]);
        assert_eq!(plain, before);
    }
}
