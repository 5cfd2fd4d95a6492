//! Delivers the server's progress notifications as they are read, in order with the
//! responses: the client hands notifications to handler tasks of their own, so a call could
//! otherwise see its response before its last progress report.

use std::future::Future;

use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage, ServerNotification};
use rmcp::service::{RoleClient, TxJsonRpcMessage};
use rmcp::transport::Transport;

use super::progress::ProgressRouter;

/// A transport that routes every `notifications/progress` it receives before passing it on.
pub(crate) struct ProgressTap<T> {
    inner: T,
    router: ProgressRouter,
}

impl<T> ProgressTap<T> {
    pub(crate) fn new(inner: T, router: ProgressRouter) -> Self {
        Self { inner, router }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressTap<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        let router = self.router.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if let Some(JsonRpcMessage::Notification(n)) = &message
                && let ServerNotification::ProgressNotification(p) = &n.notification
            {
                router.deliver(p.params.clone());
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
