//! The single writer of the MCP client's side: one JSON message per line, in arrival order.

use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt as _};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Queues messages for the MCP client.
#[derive(Debug, Clone)]
pub(super) struct Output(mpsc::UnboundedSender<Value>);

impl Output {
    /// Queues `message`; dropped silently once the client is gone.
    pub(super) fn send(&self, message: Value) {
        if self.0.send(message).is_err() {
            tracing::debug!("the MCP client is gone; message dropped");
        }
    }
}

/// Starts the writer task; it ends when every [`Output`] is dropped or a write fails.
pub(super) fn spawn<W>(mut writer: W) -> (Output, JoinHandle<()>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let task = tokio::spawn(async move {
        while let Some(message) = rx.recv().await {
            let mut line = match serde_json::to_vec(&message) {
                Ok(bytes) => bytes,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot encode a message for the MCP client");
                    continue;
                }
            };
            line.push(b'\n');
            let written = async {
                writer.write_all(&line).await?;
                writer.flush().await
            };
            if let Err(e) = written.await {
                tracing::debug!(error = %e, "the MCP client's output closed");
                break;
            }
        }
    });
    (Output(tx), task)
}
