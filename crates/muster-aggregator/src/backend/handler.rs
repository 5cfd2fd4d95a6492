//! The client side of a backend's MCP connection: who muster says it is, what a
//! `list_changed` notification triggers, and where the server's own requests (sampling,
//! elicitation, roots) go: to the client of the call they belong to. Progress is routed by
//! the transport tap.

#![allow(
    deprecated,
    reason = "sampling and roots are deprecated by SEP-2577 but still sent by servers on 2025-11-25"
)]

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorData, Implementation,
    ListRootsResult, RootsCapabilities, SamplingCapability,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::sync::Notify;

use super::caller::CallerRouter;
use super::progress::ProgressRouter;

/// The `clientInfo.name` muster sends.
pub const CLIENT_NAME: &str = "muster";

/// Handles what a server sends to muster on one connection.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamHandler {
    pub(crate) progress: ProgressRouter,
    pub(crate) relist: Arc<Notify>,
    pub(crate) callers: CallerRouter,
}

impl UpstreamHandler {
    pub(crate) fn new() -> Self {
        Self {
            progress: ProgressRouter::default(),
            relist: Arc::new(Notify::new()),
            callers: CallerRouter::default(),
        }
    }
}

/// The `initialize` parameters muster sends: client `muster`, able to relay sampling,
/// elicitation and roots requests to the client of the call they belong to.
pub(crate) fn client_info() -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    capabilities.sampling = Some(SamplingCapability::default());
    capabilities.elicitation = Some(ElicitationCapability::default());
    capabilities.roots = Some(RootsCapabilities::default());
    ClientConfig::new(
        capabilities,
        Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
    )
}

impl ClientHandler for UpstreamHandler {
    fn get_info(&self) -> ClientConfig {
        client_info()
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let caller = self
            .callers
            .caller_of(&context, "sampling/createMessage")
            .await?;
        caller.requests().create_message(params).await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let caller = self
            .callers
            .caller_of(&context, "elicitation/create")
            .await?;
        caller.requests().create_elicitation(params).await
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        // Outside any call (servers often ask right after connecting) muster answers for
        // itself: it has no roots.
        if self.callers.is_idle() {
            return Ok(ListRootsResult::default());
        }
        let caller = self.callers.caller_of(&context, "roots/list").await?;
        caller.requests().list_roots().await
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relist.notify_one();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relist.notify_one();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relist.notify_one();
    }
}
