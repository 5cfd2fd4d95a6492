//! The state of a server served per session (`auth.forwardToken`, `auth.tokenExchange`):
//! muster's own, token-less connection only establishes that the endpoint answers, so a
//! server it finds protected is `Awaiting Session` while no session is connected (there is
//! no sign-in for a person to run: each caller's own identity is used), `Connected` while a
//! session holds a connection of its own, and `Failed` while its token exchange fails for
//! every caller.

use muster_core::resource::ConditionStatus;

use super::ExchangeFailure;
use muster_core::resource::mcp_server::{
    McpServerAuth, McpServerSpec, McpServerState, McpServerStatus,
};

/// Whether `spec` is served per session with the caller's own identity.
pub(super) fn is_per_session(spec: &McpServerSpec) -> bool {
    spec.transport
        .remote()
        .and_then(|r| r.auth.as_ref())
        .is_some_and(McpServerAuth::is_per_session)
}

/// Rewrites `status` of the per-session server `spec` (a reachable server that asks for
/// authentication) for `sessions` connected sessions, or to `Failed` while its token
/// exchange fails for every caller (`broken`); other states stay as they are.
pub(super) fn apply(
    status: &mut McpServerStatus,
    spec: &McpServerSpec,
    sessions: usize,
    broken: Option<&ExchangeFailure>,
) {
    if status.state != Some(McpServerState::AuthRequired) || !is_per_session(spec) {
        return;
    }
    if let Some(failure) = broken {
        status.state = Some(McpServerState::Failed);
        status.last_error = Some(failure.error.clone());
        if let Some(ready) = status.conditions.first_mut() {
            ready.status = ConditionStatus::False;
            failure.reason.clone_into(&mut ready.reason);
            ready.message = format!("{}.", failure.error.trim_end_matches('.'));
        }
        return;
    }
    let (state, message) = if sessions > 0 {
        (
            McpServerState::Connected,
            format!(
                "Served per session with the caller's own identity ({}); {sessions} {} connected.",
                mechanism(spec),
                if sessions == 1 {
                    "session is"
                } else {
                    "sessions are"
                }
            ),
        )
    } else {
        (
            McpServerState::AwaitingSession,
            format!(
                "The server is reachable and served per session with the caller's own identity \
                 ({}); no session is connected.",
                mechanism(spec)
            ),
        )
    };
    status.state = Some(state);
    if let Some(ready) = status.conditions.first_mut() {
        ready.status = ConditionStatus::True;
        state.reason().clone_into(&mut ready.reason);
        ready.message = message;
    }
}

/// How the caller's identity reaches the server, as the condition message names it.
fn mechanism(spec: &McpServerSpec) -> String {
    let exchange = spec
        .transport
        .remote()
        .and_then(|r| r.auth.as_ref())
        .and_then(|a| a.token_exchange.as_ref())
        .filter(|t| t.enabled);
    match exchange {
        Some(t) => format!(
            "token exchange at {} with connector {}",
            t.dex_token_endpoint.as_deref().unwrap_or(""),
            t.connector_id.as_deref().unwrap_or("")
        ),
        None => "token forwarding".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{BackendSnapshot, ServiceState, compute_status};

    fn spec(auth: serde_json::Value) -> McpServerSpec {
        serde_json::from_value(serde_json::json!({
            "type": "streamable-http",
            "url": "https://mcp.example.com/mcp",
            "auth": auth,
        }))
        .unwrap_or_else(|e| panic!("spec: {e}"))
    }

    fn status_of(state: ServiceState) -> McpServerStatus {
        let mut snapshot = BackendSnapshot::initial(
            "s",
            muster_core::resource::mcp_server::ServerType::StreamableHttp,
            chrono::Utc::now(),
        );
        snapshot.state = state;
        compute_status(&snapshot)
    }

    #[test]
    fn a_protected_per_session_server_waits_for_a_session_then_is_connected() {
        let exchange = spec(serde_json::json!({"tokenExchange": {
            "enabled": true,
            "dexTokenEndpoint": "https://dex.remote.example/token",
            "connectorId": "local-dex",
        }}));
        let mut status = status_of(ServiceState::AuthRequired);
        apply(&mut status, &exchange, 0, None);
        assert_eq!(status.state, Some(McpServerState::AwaitingSession));
        let ready = &status.conditions[0];
        assert_eq!(
            (ready.status, ready.reason.as_str()),
            (ConditionStatus::True, "AwaitingSession")
        );
        assert_eq!(
            ready.message,
            "The server is reachable and served per session with the caller's own identity \
             (token exchange at https://dex.remote.example/token with connector local-dex); no \
             session is connected."
        );

        let mut status = status_of(ServiceState::AuthRequired);
        apply(
            &mut status,
            &spec(serde_json::json!({"forwardToken": true})),
            2,
            None,
        );
        assert_eq!(status.state, Some(McpServerState::Connected));
        assert_eq!(
            status.conditions[0].message,
            "Served per session with the caller's own identity (token forwarding); 2 sessions \
             are connected."
        );
    }

    #[test]
    fn an_exchange_broken_for_every_caller_fails_the_server() {
        let exchange = spec(serde_json::json!({"tokenExchange": {
            "enabled": true,
            "dexTokenEndpoint": "https://dex.remote.example/token",
            "connectorId": "local-dex",
        }}));
        let broken = ExchangeFailure {
            reason: "TokenExchangeCredentials",
            error: "client credentials: invalid_client".to_owned(),
        };
        let mut status = status_of(ServiceState::AuthRequired);
        apply(&mut status, &exchange, 3, Some(&broken));
        assert_eq!(status.state, Some(McpServerState::Failed));
        assert_eq!(
            status.last_error.as_deref(),
            Some("client credentials: invalid_client")
        );
        let ready = &status.conditions[0];
        assert_eq!(
            (ready.status, ready.reason.as_str(), ready.message.as_str()),
            (
                ConditionStatus::False,
                "TokenExchangeCredentials",
                "client credentials: invalid_client."
            )
        );
    }

    #[test]
    fn other_states_and_servers_signed_in_to_are_left_alone() {
        let forwarding = spec(serde_json::json!({"forwardToken": true}));
        let mut failed = status_of(ServiceState::Failed);
        apply(&mut failed, &forwarding, 1, None);
        assert_eq!(failed.state, Some(McpServerState::Failed));
        let mut oauth = status_of(ServiceState::AuthRequired);
        apply(
            &mut oauth,
            &spec(serde_json::json!({"type": "oauth"})),
            1,
            None,
        );
        assert_eq!(oauth.state, Some(McpServerState::AuthRequired));
    }
}
