//! The messages of one HTTP answer: a JSON body or an event stream.

use std::pin::Pin;

use futures::{Stream, StreamExt as _};
use reqwest::header::CONTENT_TYPE;
use serde_json::Value;

/// The messages of one answer, in order; errors end the stream.
pub(crate) type Messages = Pin<Box<dyn Stream<Item = anyhow::Result<Value>> + Send>>;

/// Decodes `response` as JSON or as an event stream of JSON messages.
pub(super) fn messages(response: reqwest::Response) -> Messages {
    let event_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if event_stream {
        let events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
        return Box::pin(events.filter_map(|event| async move {
            let event = match event {
                Ok(event) => event,
                Err(e) => return Some(Err(anyhow::anyhow!("the event stream broke: {e}"))),
            };
            if event.event.as_deref().is_some_and(|e| e != "message") {
                return None;
            }
            let data = event.data?;
            if data.trim().is_empty() {
                return None;
            }
            Some(serde_json::from_str(&data).map_err(anyhow::Error::from))
        }));
    }
    Box::pin(
        futures::stream::once(async move {
            let body = match response.bytes().await {
                Ok(body) => body,
                Err(e) => return vec![Err(anyhow::Error::from(e))],
            };
            if body.is_empty() {
                return Vec::new();
            }
            match serde_json::from_slice::<Value>(&body) {
                Ok(Value::Array(batch)) => batch.into_iter().map(Ok).collect(),
                Ok(message) => vec![Ok(message)],
                Err(e) => vec![Err(anyhow::anyhow!("muster's answer is not JSON: {e}"))],
            }
        })
        .flat_map(futures::stream::iter),
    )
}
