//! The calling session as a [`CallerRequests`]: a backend's sampling, elicitation and roots
//! requests made during a call go to the client that made the call, on the response stream
//! of its `tools/call`, and the client's answers go back to the backend.

#![allow(
    deprecated,
    reason = "sampling and roots are deprecated by SEP-2577 but still sent by servers on 2025-11-25"
)]

use futures::future::BoxFuture;
use muster_core::tool::{CallerChannel, CallerRequests};
use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult, ErrorCode, ErrorData,
    ListRootsRequest, ListRootsResult, RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, RequestContext, RoleServer, ServiceError};

/// The client of one `tools/call`.
struct CallingSession {
    peer: Peer<RoleServer>,
    /// The caller's request: what the client sends us goes on its response stream.
    request: RequestId,
    capabilities: ClientCapabilities,
}

/// The caller of the request of `context`.
pub(super) fn channel(context: &RequestContext<RoleServer>) -> CallerChannel {
    CallerChannel::new(CallingSession {
        peer: context.peer.clone(),
        request: context.id.clone(),
        capabilities: context.client_capabilities().unwrap_or_default(),
    })
}

impl CallingSession {
    fn unsupported(what: &str, capability: &str) -> ErrorData {
        ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("{what}: the calling client did not declare the {capability} capability"),
            None,
        )
    }

    fn send(&self, request: ServerRequest) -> BoxFuture<'static, Result<ClientResult, ErrorData>> {
        let peer = self.peer.clone();
        Box::pin(async move { peer.send_request(request).await.map_err(relay_error) })
    }

    fn origin(&self) -> rmcp::model::Extensions {
        let mut extensions = rmcp::model::Extensions::new();
        extensions.insert(OriginatingRequestId(self.request.clone()));
        extensions
    }
}

impl CallerRequests for CallingSession {
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorData>> {
        if self.capabilities.sampling.is_none() {
            let error = Self::unsupported("sampling/createMessage", "sampling");
            return Box::pin(std::future::ready(Err(error)));
        }
        let mut request = CreateMessageRequest::new(params);
        request.extensions = self.origin();
        let sent = self.send(ServerRequest::CreateMessageRequest(request));
        Box::pin(async move {
            match sent.await? {
                ClientResult::CreateMessageResult(result) => Ok(*result),
                _ => Err(unexpected("sampling/createMessage")),
            }
        })
    }

    fn create_elicitation(
        &self,
        params: ElicitRequestParams,
    ) -> BoxFuture<'static, Result<ElicitResult, ErrorData>> {
        if self.capabilities.elicitation.is_none() {
            let error = Self::unsupported("elicitation/create", "elicitation");
            return Box::pin(std::future::ready(Err(error)));
        }
        let mut request = ElicitRequest::new(params);
        request.extensions = self.origin();
        let sent = self.send(ServerRequest::ElicitRequest(request));
        Box::pin(async move {
            match sent.await? {
                ClientResult::ElicitResult(result) => Ok(result),
                _ => Err(unexpected("elicitation/create")),
            }
        })
    }

    fn list_roots(&self) -> BoxFuture<'static, Result<ListRootsResult, ErrorData>> {
        if self.capabilities.roots.is_none() {
            let error = Self::unsupported("roots/list", "roots");
            return Box::pin(std::future::ready(Err(error)));
        }
        let request = ListRootsRequest {
            extensions: self.origin(),
            ..ListRootsRequest::default()
        };
        let sent = self.send(ServerRequest::ListRootsRequest(request));
        Box::pin(async move {
            match sent.await? {
                ClientResult::ListRootsResult(result) => Ok(result),
                _ => Err(unexpected("roots/list")),
            }
        })
    }
}

/// The client's error as it is; a transport failure as an internal error.
fn relay_error(error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => ErrorData::internal_error(
            format!("the calling client could not be asked: {other}"),
            None,
        ),
    }
}

fn unexpected(method: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("the calling client answered {method} with an unexpected result"),
        None,
    )
}
