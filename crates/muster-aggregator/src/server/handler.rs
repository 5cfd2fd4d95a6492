//! The rmcp [`ServerHandler`]: `tools/list` answers the meta-tools, `tools/call` runs them;
//! `prompts/get` and `resources/read` reach the downstream prompts and resources, and
//! `subscriptions/listen` streams list changes to 2026-07-28 clients.

use std::sync::Arc;

use muster_core::tool::{CallContext, CallerIdentity, SessionId, upstream_meta};
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorData,
    GetPromptRequestParams, GetPromptResponse, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};

use super::Aggregator;
use super::notify;
use super::progress::Relay;
use super::{caller, invalid_params, listen, reads};
use crate::meta_tools;

/// How long a cancelled call may take to stop before it is dropped.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The header carrying the streamable HTTP session id.
const SESSION_HEADER: &str = "mcp-session-id";

impl ServerHandler for Aggregator {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .build();
        ServerConfig::new(capabilities).with_server_info(self.inner.implementation.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            meta_tools::definitions().to_vec(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        if !meta_tools::is_meta_tool(name) {
            return Err(ErrorData::invalid_params(
                format!("tool '{name}' not found: tool not found"),
                None,
            ));
        }
        let relay = Relay::start(&context);
        let call_context = CallContext {
            session: session_of(&context),
            caller: caller_of(&context),
            progress: relay.as_ref().map(Relay::sink),
            notifier: Some(notify::session_notifier(self.peer_of(&context))),
            cancellation: context.ct.child_token(),
            caller_requests: Some(caller::channel(&context)),
            request_meta: crate::observe::with_header_trace_context(
                upstream_meta(&context.meta),
                context
                    .extensions
                    .get::<http::request::Parts>()
                    .map(|p| &p.headers),
            ),
            ..CallContext::default()
        };
        self.before_call(&call_context).await;
        let mut call = std::pin::pin!(self.inner.meta.call(name, request.arguments, call_context));
        let result = tokio::select! {
            result = &mut call => result,
            () = context.ct.cancelled() => {
                // The call saw the same cancellation: let it stop and record how it ended
                // (a workflow run records itself cancelled) before it is dropped.
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
                return Err(ErrorData::internal_error("request cancelled", None));
            }
        };
        if let Some(relay) = relay {
            relay.finish().await;
        }
        match result {
            Some(result) => Ok(result.into()),
            None => Err(ErrorData::invalid_params(
                format!("tool '{name}' not found: tool not found"),
                None,
            )),
        }
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let session = session_of(&context);
        self.before_read(&session, caller_of(&context).as_deref())
            .await;
        reads::get_prompt(self.registry(), &session, request)
            .await
            .map(Into::into)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let session = session_of(&context);
        self.before_read(&session, caller_of(&context).as_deref())
            .await;
        #[cfg(feature = "http-client")]
        if let Some(auth) = self.inner.backend_auth.as_ref()
            && request.uri == crate::auth::STATUS_URI
        {
            return Ok(auth.read_status(&session).await.into());
        }
        reads::read_resource(self.registry(), &session, request)
            .await
            .map(Into::into)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(listen::accepted_filter(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        listen::listen(self.registry(), context, self.inner.shutdown.clone()).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(invalid_params::custom_request_error(&request))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let session = session_header(&context.extensions);
        let served_by_front_door = context
            .peer
            .peer_info()
            .is_some_and(|info| !super::sessions::answers_requests(&info));
        match session {
            // The front door serves this session's `GET` stream: what is sent before the
            // client opens it is kept there, not handed to a worker stream nobody reads.
            Some(session) if served_by_front_door => self.inner.peers.expect_stream(session),
            _ => self.inner.peers.register(session, context.peer),
        }
    }
}

impl Aggregator {
    /// Where the notifications of a request's session go: the session's `GET` stream when
    /// the front door serves it, else the session's worker.
    fn peer_of(&self, context: &RequestContext<RoleServer>) -> notify::SessionPeer {
        session_header(&context.extensions)
            .and_then(|session| self.inner.peers.stream_of(session))
            .unwrap_or_else(|| notify::SessionPeer::Worker(context.peer.clone()))
    }
}

/// The session a request belongs to: the one the front door's authentication established,
/// else its `mcp-session-id` (streamable HTTP), its `sessionId` query parameter (legacy
/// SSE), else `default-user`.
fn session_of(context: &RequestContext<RoleServer>) -> SessionId {
    let Some(parts) = context.extensions.get::<http::request::Parts>() else {
        return SessionId::default();
    };
    if let Some(session) = parts.extensions.get::<SessionId>() {
        return session.clone();
    }
    parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
        .or_else(|| {
            form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
                .find(|(k, _)| k == "sessionId")
                .map(|(_, v)| format!("sse-{v}"))
        })
        .filter(|id| !id.is_empty())
        .map(SessionId::new)
        .unwrap_or_default()
}

/// The caller the front door's authentication established, if any.
fn caller_of(context: &RequestContext<RoleServer>) -> Option<Arc<CallerIdentity>> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Arc<CallerIdentity>>())
        .cloned()
}

/// The `mcp-session-id` of the HTTP request a message came in: the transport's session, which
/// keys the peers notifications go to.
fn session_header(extensions: &rmcp::model::Extensions) -> Option<&str> {
    extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get(SESSION_HEADER))
        .and_then(|value| value.to_str().ok())
        .filter(|id| !id.is_empty())
}
