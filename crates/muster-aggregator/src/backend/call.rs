//! The tool service of a backend: forwards a [`ToolCall`] to the server without loss
//! (arguments, the caller's `_meta`, structured content, `isError`, every content kind),
//! relays progress and the server's requests to the caller and sends
//! `notifications/cancelled` when the caller gives up.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use muster_core::secret::Redactor;
use muster_core::tool::{ToolCall, ToolError};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ContentBlock, ErrorCode,
    RequestMetaObject,
};
use rmcp::service::{PeerRequestOptions, ServiceError};

use super::cancel_guard::CancelGuard;
use super::inner::{Connection, Inner};
use super::tool_result::tool_result;

/// Maps a client error of a request to the server named `provider` to a [`ToolError`].
pub(crate) fn tool_error(provider: &str, error: ServiceError) -> ToolError {
    match error {
        ServiceError::McpError(e) if e.code == ErrorCode::INVALID_PARAMS => {
            ToolError::InvalidArguments {
                message: e.message.into_owned(),
            }
        }
        ServiceError::McpError(e) => ToolError::Failed {
            message: e.message.into_owned(),
            retryable: false,
        },
        ServiceError::Timeout { timeout } => ToolError::Timeout { after: timeout },
        ServiceError::Cancelled { .. } => ToolError::Cancelled,
        ServiceError::TransportClosed => ToolError::Backend {
            provider: provider.to_owned(),
            retryable: true,
            source: "the connection to the server closed".into(),
        },
        // rmcp's wrapper names the transport's Rust type; what failed is inside it.
        ServiceError::TransportSend(sent) => ToolError::Backend {
            provider: provider.to_owned(),
            retryable: true,
            source: format!("sending the request failed: {}", sent.error).into(),
        },
        other => ToolError::Backend {
            provider: provider.to_owned(),
            retryable: false,
            source: Box::new(other),
        },
    }
}

/// The connection of a backend, or why there is none.
pub(crate) fn live_connection(inner: &Weak<Inner>) -> Result<(Arc<Connection>, String), ToolError> {
    let backend = inner.upgrade().ok_or_else(|| ToolError::Unavailable {
        provider: String::from("backend"),
        reason: "the backend was removed".to_owned(),
    })?;
    let s = backend.lock();
    match &s.conn {
        Some(conn) => Ok((conn.clone(), backend.name.clone())),
        None => Err(ToolError::Unavailable {
            provider: backend.name.clone(),
            reason: format!("not connected (state {})", s.snapshot.state),
        }),
    }
}

/// Calls one tool on a live connection: on the lean hop when the connection has one and the
/// call needs nothing only the rmcp path does, else through rmcp's client.
pub(crate) async fn forward(
    inner: &Weak<Inner>,
    conn: &Connection,
    provider: &str,
    call: ToolCall,
) -> Result<CallToolResult, ToolError> {
    #[cfg(feature = "http-client")]
    if call.context.caller_requests.is_none()
        && let Some(lean) = &conn.lean
        && let Some(session) = lean.session_for(call.name.as_str())
        && !(lean.is_stateless_era() && promotes_arguments(inner, call.name.as_str()))
    {
        match lean.call(&conn.peer, provider, &session, &call).await {
            super::lean_call::Outcome::Done(result) => return result,
            super::lean_call::Outcome::Refused => {
                tracing::debug!(server = %provider, "the lean call was refused; sending it through the client");
            }
        }
    }
    // Boxed: the rmcp path's state would otherwise double the size of every call's future,
    // lean ones included, and the future is moved whole on its way to the runtime.
    Box::pin(forward_rmcp(conn, provider, call)).await
}

/// Whether the catalog's schema of `tool` promotes arguments to `Mcp-Param-*` headers.
#[cfg(feature = "http-client")]
fn promotes_arguments(inner: &Weak<Inner>, tool: &str) -> bool {
    let Some(backend) = inner.upgrade() else {
        return false;
    };
    let catalog = backend.lock().catalog.clone();
    catalog
        .tool(tool)
        .is_some_and(|t| super::lean_call::has_param_headers(&t.input_schema))
}

/// Calls one tool through rmcp's client.
async fn forward_rmcp(
    conn: &Connection,
    provider: &str,
    call: ToolCall,
) -> Result<CallToolResult, ToolError> {
    let mut params = CallToolRequestParams::new(call.name.as_str().to_owned());
    if let Some(arguments) = call.arguments {
        params = params.with_arguments(arguments.into_object()?);
    }
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let mut options = PeerRequestOptions::no_options();
    if let Some(meta) = call.context.request_meta.clone() {
        options = options.with_meta(RequestMetaObject::from(meta));
    }
    // Registered before the call goes out, so the server cannot ask before muster knows
    // whom to ask; the request id is bound once rmcp has assigned it.
    let caller = call
        .context
        .caller_requests
        .clone()
        .map(|caller| conn.callers.register(caller));
    let handle = conn
        .peer
        .send_request_with_option(request, options)
        .await
        .map_err(|e| tool_error(provider, e))?;
    if let Some(caller) = &caller {
        caller.bind(handle.id.clone());
    }
    let progress = call
        .context
        .progress
        .clone()
        .map(|sink| conn.progress.register(handle.progress_token.clone(), sink));
    let mut guard = CancelGuard::new(conn.peer.clone(), handle.id.clone());
    let response = tokio::select! {
        biased;
        () = call.context.cancellation.cancelled() => {
            guard.cancel_now().await;
            return Err(ToolError::Cancelled);
        }
        response = handle.await_response() => response,
    };
    guard.disarm();
    drop(progress);
    drop(caller);
    tool_result(provider, response.map_err(|e| tool_error(provider, e))?)
}

/// A result with `isError: true` is an error text of the server: its text content (and its
/// structured content) is redacted like any other error. Successful results are the tool's
/// data and pass unchanged.
fn redact_error_result(redactor: &Redactor, mut result: CallToolResult) -> CallToolResult {
    if result.is_error != Some(true) || redactor.is_empty() {
        return result;
    }
    for content in &mut result.content {
        if let ContentBlock::Text(text) = content {
            text.text = redactor.redact_string(std::mem::take(&mut text.text));
        }
    }
    if let Some(structured) = result.structured_content.as_mut() {
        redactor.redact_json(structured);
    }
    result
}

/// The tower service that calls a backend's tools; holds the backend weakly, so services
/// handed out never keep a removed backend (or its process) alive.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamCall {
    pub(crate) inner: Weak<Inner>,
    /// Cuts the server's secret values out of errors.
    pub(crate) redactor: Redactor,
}

impl tower::Service<ToolCall> for UpstreamCall {
    type Response = CallToolResult;
    type Error = ToolError;
    type Future = Pin<Box<dyn Future<Output = Result<CallToolResult, ToolError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: ToolCall) -> Self::Future {
        let inner = self.inner.clone();
        let redactor = self.redactor.clone();
        Box::pin(async move {
            let (conn, provider) = live_connection(&inner)?;
            forward(&inner, &conn, &provider, call)
                .await
                .map(|result| redact_error_result(&redactor, result))
                .map_err(|e| e.redacted(&redactor))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_results_are_redacted_and_data_is_not() {
        let redactor = Redactor::from_values(["tok-123456"]);
        let mut failed = CallToolResult::error(vec![ContentBlock::text("bad token tok-123456")]);
        failed.structured_content = Some(serde_json::json!({"detail": "tok-123456"}));
        let failed = redact_error_result(&redactor, failed);
        assert_eq!(
            failed.content[0].as_text().map(|t| t.text.as_str()),
            Some("bad token [redacted]")
        );
        assert_eq!(
            failed.structured_content,
            Some(serde_json::json!({"detail": "[redacted]"}))
        );
        let data = CallToolResult::success(vec![ContentBlock::text("tok-123456")]);
        let data = redact_error_result(&redactor, data);
        assert_eq!(
            data.content[0].as_text().map(|t| t.text.as_str()),
            Some("tok-123456")
        );
    }
}
