//! `MCPServerInfo`: how `core_mcpserver_get` and `_list` describe a server.

use muster_core::resource::mcp_server::{
    DISPLAY_NAME_ANNOTATION, McpServerDefinition, McpServerState, REGISTERED_BY_ANNOTATION,
    REGISTERED_BY_EMAIL_ANNOTATION, ServerType,
};
use muster_core::resource::{McpServer, Object};
use serde_json::{Map, Value, json};

/// The state a server shows: its written status, or Stopped/Disconnected when none exists.
pub(crate) fn effective_state(obj: &Object<McpServer>) -> McpServerState {
    obj.status
        .as_ref()
        .and_then(|s| s.state)
        .unwrap_or(match obj.spec.server_type() {
            ServerType::Stdio => McpServerState::Stopped,
            _ => McpServerState::Disconnected,
        })
}

/// The original's hint for a server's state and error.
pub(crate) fn status_message(name: &str, state: McpServerState, error: &str) -> String {
    match state {
        McpServerState::Starting | McpServerState::Connecting => "Starting...".to_owned(),
        McpServerState::Failed => {
            let e = error.to_ascii_lowercase();
            let has = |needles: &[&str]| needles.iter().any(|n| e.contains(n));
            let msg = if has(&["certificate", "x509"]) {
                "Certificate error - verify TLS configuration"
            } else if has(&["tls handshake"]) {
                "TLS error - check server certificate and TLS configuration"
            } else if has(&[
                "command not found",
                "executable file not found",
                "no such file",
            ]) {
                "Command not found - check the executable path"
            } else if has(&["permission denied"]) {
                "Permission denied - check file permissions"
            } else if has(&["401", "unauthorized"]) {
                return format!("Authentication required - run: muster auth login --server {name}");
            } else if has(&["403", "forbidden"]) {
                "Access forbidden - check server permissions and credentials"
            } else if has(&["connection reset", "econnreset"]) {
                "Connection was reset by server - check server logs"
            } else if has(&["protocol", "unsupported"]) {
                "Protocol error - check server type configuration"
            } else if has(&["json", "parse"]) {
                "Invalid response from server - check server compatibility"
            } else {
                "Server failed to start"
            };
            msg.to_owned()
        }
        _ => String::new(),
    }
}

/// The JSON description of one server; `with_error` includes the last error.
pub(crate) fn info(obj: &Object<McpServer>, with_error: bool) -> Value {
    let def = McpServerDefinition::from(obj.spec.clone());
    let mut m = Map::new();
    m.insert("name".into(), json!(obj.name()));
    m.insert("type".into(), json!(obj.spec.server_type().as_str()));
    fn put(m: &mut Map<String, Value>, key: &str, value: Option<Value>) {
        let empty =
            |v: &Value| v.is_null() || *v == json!("") || *v == json!({}) || *v == json!([]);
        if let Some(v) = value.filter(|v| !empty(v)) {
            m.insert(key.to_owned(), v);
        }
    }
    let annotations = &obj.metadata.annotations;
    put(
        &mut m,
        "displayName",
        annotations.get(DISPLAY_NAME_ANNOTATION).map(|v| json!(v)),
    );
    put(&mut m, "description", def.description.map(|v| json!(v)));
    put(&mut m, "autoStart", def.auto_start.map(|v| json!(v)));
    put(&mut m, "command", def.command.map(|v| json!(v)));
    put(&mut m, "args", def.args.map(|v| json!(v)));
    put(&mut m, "url", def.url.map(|v| json!(v)));
    put(&mut m, "env", def.env.map(|v| json!(v)));
    put(&mut m, "headers", def.headers.map(|v| json!(v)));
    put(&mut m, "headersFrom", def.headers_from.map(|v| json!(v)));
    put(
        &mut m,
        "auth",
        def.auth.and_then(|v| serde_json::to_value(v).ok()),
    );
    put(&mut m, "timeout", def.timeout.map(|v| json!(v)));
    put(
        &mut m,
        "progress",
        def.progress.and_then(|v| serde_json::to_value(v).ok()),
    );
    put(&mut m, "toolPrefix", def.tool_prefix.map(|v| json!(v)));
    put(
        &mut m,
        "family",
        def.family.and_then(|v| serde_json::to_value(v).ok()),
    );
    put(&mut m, "suspended", def.suspended.map(|v| json!(v)));
    let state = effective_state(obj);
    let status = obj.status.clone().unwrap_or_default();
    let error = status.last_error.clone().unwrap_or_default();
    if with_error {
        put(&mut m, "error", Some(json!(error)));
    }
    m.insert("state".into(), json!(state.as_str()));
    put(
        &mut m,
        "statusMessage",
        Some(json!(status_message(obj.name(), state, &error))),
    );
    if status.consecutive_failures > 0 {
        m.insert(
            "consecutiveFailures".into(),
            json!(status.consecutive_failures),
        );
    }
    put(&mut m, "lastAttempt", status.last_attempt.map(|v| json!(v)));
    put(
        &mut m,
        "nextRetryAfter",
        status.next_retry_after.map(|v| json!(v)),
    );
    put(
        &mut m,
        "lastFailureHTTPStatus",
        status.last_failure_http_status.map(|v| json!(v)),
    );
    put(
        &mut m,
        "connectedAt",
        status.last_connected.map(|v| json!(v)),
    );
    put(
        &mut m,
        "registeredBy",
        annotations.get(REGISTERED_BY_ANNOTATION).map(|v| json!(v)),
    );
    put(
        &mut m,
        "registeredByEmail",
        annotations
            .get(REGISTERED_BY_EMAIL_ANNOTATION)
            .map(|v| json!(v)),
    );
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_for_failed_servers() {
        let failed = McpServerState::Failed;
        assert_eq!(
            status_message("s", failed, "exec: executable file not found in $PATH"),
            "Command not found - check the executable path"
        );
        assert_eq!(
            status_message("s", failed, "HTTP 401 Unauthorized"),
            "Authentication required - run: muster auth login --server s"
        );
        assert_eq!(status_message("s", failed, ""), "Server failed to start");
        assert_eq!(
            status_message("s", McpServerState::Connecting, ""),
            "Starting..."
        );
        assert_eq!(status_message("s", McpServerState::Running, "x"), "");
    }
}
