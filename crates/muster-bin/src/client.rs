//! The CLI's session with a muster server: [`muster_aggregator::client::MusterClient`]
//! (rmcp's streamable-HTTP client) with the CLI's error texts and the `call_tool` envelope.
//!
//! [`Client::connect`] initializes a session (protocol 2025-06-18); [`Client::call_tool`]
//! calls a tool through the `call_tool` meta-tool and unwraps its envelope; progress of a
//! call reaches a callback; [`Client::notifications`] streams what the server sends the
//! session on its own.

pub(crate) mod endpoint;
mod envelope;

use http::HeaderValue;
use http::header::AUTHORIZATION;
use muster_aggregator::client::{ClientError, ClientOptions, MusterClient, Notifications};
use serde_json::{Value, json};

pub(crate) use self::endpoint::{Contexts, resolve_endpoint};
pub(crate) use self::envelope::ToolResult;

/// The notifications of a session, as JSON messages.
pub(crate) type Messages = Notifications;

/// One MCP session with a muster server.
#[derive(Debug)]
pub(crate) struct Client {
    session: MusterClient,
}

impl Client {
    /// Opens a session with the server at `endpoint`, sending `authorization` as the
    /// `Authorization` header when given.
    pub(crate) async fn connect(
        endpoint: &str,
        authorization: Option<HeaderValue>,
    ) -> anyhow::Result<Self> {
        let mut options = ClientOptions::default();
        if let Some(value) = authorization {
            options.headers.insert(AUTHORIZATION, value);
        }
        let session = MusterClient::connect_with(endpoint, options)
            .await
            .map_err(cli_error)?;
        Ok(Self { session })
    }

    /// The underlying session, for commands that speak to the endpoint's tools directly.
    pub(crate) fn session(&self) -> &MusterClient {
        &self.session
    }

    /// Calls `name` through `call_tool`. `on_progress` sees each progress notification
    /// (`params` of `notifications/progress`).
    pub(crate) async fn call_tool(
        &mut self,
        name: &str,
        arguments: Value,
        on_progress: impl FnMut(&Value),
    ) -> anyhow::Result<ToolResult> {
        let arguments = json!({"name": name, "arguments": arguments});
        let result = self
            .session
            .call("call_tool", arguments, on_progress)
            .await
            .map_err(cli_error)?;
        ToolResult::from_call_tool(&result)
    }

    /// Calls a meta-tool (such as `list_tools`) directly, not through `call_tool`.
    pub(crate) async fn call_meta(
        &mut self,
        name: &str,
        arguments: Value,
    ) -> anyhow::Result<ToolResult> {
        let result = self
            .session
            .call(name, arguments, |_| {})
            .await
            .map_err(cli_error)?;
        Ok(ToolResult::from_result(&result))
    }

    /// The session's notifications from now on: what the server sends that belongs to no
    /// request.
    pub(crate) async fn notifications(&self) -> anyhow::Result<Messages> {
        Ok(self.session.notifications())
    }

    /// Ends the session (best effort).
    pub(crate) async fn close(self) {
        self.session.close().await;
    }
}

/// The client's error in the CLI's words.
pub(crate) fn cli_error(error: ClientError) -> anyhow::Error {
    match error {
        ClientError::NotFound { endpoint } => anyhow::anyhow!(
            "no MCP endpoint at {endpoint} (HTTP 404): check --endpoint or the context"
        ),
        ClientError::Unauthorized { endpoint, .. } => anyhow::anyhow!(
            "Authentication required - run: muster auth login --endpoint {endpoint}"
        ),
        other => anyhow::Error::new(other),
    }
}
