//! What a session is signed in to: the `auth://status` resource, and the session state
//! `core_mcpserver_list` adds to each server.

use muster_core::tool::{SessionId, ToolProvider};
use rmcp::model::{ReadResourceResult, ResourceContents};
use serde_json::{Map, Value, json};

use super::login::{is_sso, needs_sign_in};
use super::{BackendAuth, STATUS_URI};
use crate::backend::ServiceState;

/// One server's state for one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionServerStatus {
    /// `connected`, `auth_required`, `unreachable` or `disconnected`.
    pub status: &'static str,
    /// The server refused the session's forwarded token.
    pub sso_attempt_failed: bool,
    /// How many tools the session's own connection offers.
    pub tools_count: usize,
}

impl BackendAuth {
    /// The state of `server` for `session`, for servers that take per-session sign-in;
    /// `None` for the others.
    pub fn session_status(&self, session: &SessionId, server: &str) -> Option<SessionServerStatus> {
        if let Some(pooled) = self.inner.pool.get(session, server) {
            return Some(SessionServerStatus {
                status: "connected",
                sso_attempt_failed: false,
                tools_count: pooled.backend.catalog().tools.len(),
            });
        }
        let global = self.inner.services.backend(server)?;
        if is_sso(global.spec()) {
            // Until the session brings a token to forward (a sign-in to muster), the server
            // waits for it as any protected server does.
            return Some(SessionServerStatus {
                status: "auth_required",
                sso_attempt_failed: self.inner.forwarding.refusal(session, server).is_some(),
                tools_count: 0,
            });
        }
        needs_sign_in(&global).then_some(SessionServerStatus {
            status: "auth_required",
            sso_attempt_failed: false,
            tools_count: 0,
        })
    }

    /// The `auth://status` document of `session`.
    pub async fn status_document(&self, session: &SessionId) -> Value {
        let mut servers = Vec::new();
        for name in self.inner.services.names() {
            let Some(global) = self.inner.services.backend(&name) else {
                continue;
            };
            let mut entry = Map::new();
            entry.insert("name".to_owned(), json!(name));
            let per_session = self.session_status(session, &name);
            let status = match &per_session {
                Some(s) => s.status,
                None => match global.snapshot().state {
                    s if s.is_active() => "connected",
                    ServiceState::Failed | ServiceState::Unreachable => "unreachable",
                    _ => "disconnected",
                },
            };
            entry.insert("status".to_owned(), json!(status));
            if per_session.as_ref().is_some_and(|s| s.sso_attempt_failed) {
                entry.insert("sso_attempt_failed".to_owned(), json!(true));
            }
            if per_session.is_some() && !is_sso(global.spec()) {
                if let Ok(resource) = self.resource_of(&name, global.spec()).await {
                    entry.insert("issuer".to_owned(), json!(resource.issuer));
                    if let Some(scope) = resource.scope {
                        entry.insert("scope".to_owned(), json!(scope));
                    }
                }
                if status == "auth_required" {
                    entry.insert("auth_tool".to_owned(), json!("core_auth_login"));
                }
            }
            let auth = global
                .spec()
                .transport
                .remote()
                .and_then(|r| r.auth.clone());
            if let Some(auth) = auth {
                if auth.forward_token {
                    entry.insert("token_forwarding_enabled".to_owned(), json!(true));
                }
                if auth.token_exchange.is_some_and(|t| t.enabled) {
                    entry.insert("token_exchange_enabled".to_owned(), json!(true));
                }
            }
            servers.push(Value::Object(entry));
        }
        json!({ "servers": servers })
    }

    /// `auth://status` as a resource read.
    pub async fn read_status(&self, session: &SessionId) -> ReadResourceResult {
        let doc = self.status_document(session).await;
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        ReadResourceResult::new(vec![
            ResourceContents::text(text, STATUS_URI).with_mime_type("application/json"),
        ])
    }
}

impl crate::core_tools::SessionAuthStatus for BackendAuth {
    fn session_status(&self, session: &SessionId, server: &str) -> Option<(&'static str, usize)> {
        BackendAuth::session_status(self, session, server).map(|s| (s.status, s.tools_count))
    }
}
