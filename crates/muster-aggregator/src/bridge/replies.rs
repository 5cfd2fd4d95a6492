//! Reading the server's answer to a POST or GET: plain JSON or an event stream of messages.

use std::pin::Pin;

use futures::{Stream, StreamExt as _};
use reqwest::Response;
use reqwest::header::CONTENT_TYPE;
use serde_json::Value;

/// The messages of one HTTP answer, in order.
pub(super) type Messages = Pin<Box<dyn Stream<Item = Value> + Send>>;

/// The messages `response` carries; undecodable parts are logged and skipped.
pub(super) fn messages(response: Response) -> Messages {
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
                Err(e) => {
                    tracing::debug!(error = %e, "event stream from muster ended");
                    return None;
                }
            };
            if event.event.as_deref().is_some_and(|e| e != "message") {
                return None;
            }
            decode(event.data.as_deref()?)
        }));
    }
    Box::pin(
        futures::stream::once(async move {
            match response.bytes().await {
                Ok(body) if body.iter().all(u8::is_ascii_whitespace) => Vec::new(),
                Ok(body) => match serde_json::from_slice::<Value>(&body) {
                    Ok(Value::Array(batch)) => batch,
                    Ok(message) => vec![message],
                    Err(e) => {
                        tracing::warn!(error = %e, "muster answered with a body that is not JSON");
                        Vec::new()
                    }
                },
                Err(e) => {
                    tracing::debug!(error = %e, "reading muster's answer failed");
                    Vec::new()
                }
            }
        })
        .flat_map(futures::stream::iter),
    )
}

/// One event's data as a JSON message; priming events carry none.
fn decode(data: &str) -> Option<Value> {
    if data.trim().is_empty() {
        return None;
    }
    match serde_json::from_str(data) {
        Ok(message) => Some(message),
        Err(e) => {
            tracing::warn!(error = %e, "muster sent an event that is not JSON");
            None
        }
    }
}
