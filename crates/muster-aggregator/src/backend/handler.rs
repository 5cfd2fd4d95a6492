//! The client side of a backend's MCP connection: who muster says it is and what a
//! `list_changed` notification triggers. Progress is routed by the transport tap.

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::Notify;

use super::progress::ProgressRouter;

/// The `clientInfo.name` muster sends.
pub const CLIENT_NAME: &str = "muster";

/// Handles what a server sends to muster on one connection.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamHandler {
    pub(crate) progress: ProgressRouter,
    pub(crate) relist: Arc<Notify>,
}

impl UpstreamHandler {
    pub(crate) fn new() -> Self {
        Self {
            progress: ProgressRouter::default(),
            relist: Arc::new(Notify::new()),
        }
    }
}

/// The `initialize` parameters muster sends: client `muster`, no optional capabilities.
pub(crate) fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
    )
}

impl ClientHandler for UpstreamHandler {
    fn get_info(&self) -> ClientConfig {
        client_info()
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
