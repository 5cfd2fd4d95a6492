//! Delivers the server's progress notifications as they are read, in order with the
//! responses: the client hands notifications to handler tasks of their own, so a call could
//! otherwise see its response before its last progress report. Other notifications can be
//! handed on in the same order too ([`ProgressTap::with_others`]).

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage, ServerNotification};
use rmcp::service::{RoleClient, TxJsonRpcMessage};
use rmcp::transport::Transport;

use super::progress::ProgressRouter;

/// What sees the notifications other than progress.
pub(crate) type OtherNotifications = Arc<dyn Fn(&ServerJsonRpcMessage) + Send + Sync>;

/// A transport that routes every `notifications/progress` it receives before passing it on.
pub(crate) struct ProgressTap<T> {
    inner: T,
    router: ProgressRouter,
    others: Option<OtherNotifications>,
}

impl<T> ProgressTap<T> {
    pub(crate) fn new(inner: T, router: ProgressRouter) -> Self {
        Self {
            inner,
            router,
            others: None,
        }
    }

    /// Hands every other notification to `others` as it is read.
    #[cfg_attr(not(feature = "http-client"), allow(dead_code))]
    pub(crate) fn with_others(mut self, others: OtherNotifications) -> Self {
        self.others = Some(others);
        self
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
        let others = self.others.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if let Some(notification @ JsonRpcMessage::Notification(n)) = &message {
                match &n.notification {
                    ServerNotification::ProgressNotification(p) => {
                        router.deliver(p.params.clone());
                    }
                    _ => {
                        if let Some(others) = &others {
                            others(notification);
                        }
                    }
                }
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
