//! `core_auth_login` and `core_auth_logout` as a [`ToolProvider`].

use std::sync::Arc;

use muster_core::tool::{Catalog, Revision, ToolCall, ToolError, ToolProvider, ToolService};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};
use tokio::sync::watch;
use tower::util::BoxCloneSyncService;

use super::{BackendAuth, LoginOutcome};

/// The name of the sign-in tool.
pub const LOGIN_TOOL: &str = "core_auth_login";
/// The name of the sign-out tool.
pub const LOGOUT_TOOL: &str = "core_auth_logout";

/// The auth tools; register them after the other core tools.
#[derive(Debug, Clone)]
pub struct AuthTools {
    auth: BackendAuth,
    catalog: Arc<Catalog>,
    revisions: watch::Sender<Revision>,
}

fn server_schema(description: &str) -> Arc<JsonObject> {
    let schema = json!({
        "type": "object",
        "properties": { "server": { "type": "string", "description": description } },
        "required": ["server"],
    });
    match schema {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

impl AuthTools {
    pub(super) fn new(auth: BackendAuth) -> Self {
        let tools = vec![
            Tool::new(
                LOGIN_TOOL,
                "Sign in to an OAuth-protected MCP server: answers a link to open in a browser, \
                 or connects at once when you already signed in to the server's issuer",
                server_schema("Name of the MCP server to sign in to"),
            ),
            Tool::new(
                LOGOUT_TOOL,
                "Sign out of an OAuth-protected MCP server: closes your connection to it and \
                 drops your token unless another of your servers uses the same issuer",
                server_schema("Name of the MCP server to sign out of"),
            ),
        ];
        Self {
            auth,
            catalog: Arc::new(Catalog {
                tools,
                ..Catalog::default()
            }),
            revisions: watch::Sender::new(Revision::default()),
        }
    }

    async fn call(self, mut call: ToolCall) -> Result<CallToolResult, ToolError> {
        let arguments = call.take_arguments()?;
        let server = arguments
            .as_ref()
            .and_then(|a| a.get("server"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let Some(server) = server else {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "Error: 'server' argument is required and must be a string",
            )]));
        };
        let session = &call.context.session;
        let outcome = match call.name.as_str() {
            LOGIN_TOOL => {
                self.auth
                    .login(session, call.context.caller.as_deref(), &server)
                    .await
            }
            LOGOUT_TOOL => {
                self.auth
                    .logout(session, call.context.caller.as_deref(), &server)
                    .await
            }
            other => {
                return Err(ToolError::UnknownTool {
                    name: other.to_owned(),
                });
            }
        };
        Ok(match outcome {
            LoginOutcome::Done(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            LoginOutcome::Failed(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
            LoginOutcome::Challenge { text, auth_url } => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(json!({ "authUrl": auth_url }));
                result
            }
        })
    }
}

impl ToolProvider for AuthTools {
    fn name(&self) -> &str {
        "auth"
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog)
    }

    fn revisions(&self) -> watch::Receiver<Revision> {
        self.revisions.subscribe()
    }

    fn service(&self) -> ToolService {
        let tools = self.clone();
        BoxCloneSyncService::new(tower::service_fn(move |call| tools.clone().call(call)))
    }
}
