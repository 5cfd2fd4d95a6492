//! JSON-RPC errors for POST bodies the MCP endpoint cannot take as a message, as the
//! specification defines them: malformed JSON is HTTP 400 with `-32700 Parse error`, JSON
//! that is no JSON-RPC message is HTTP 400 with `-32600 Invalid Request`. (A request of a
//! known method with parameters that do not fit is a message; its `-32602` comes from the
//! handler, see [`invalid_params`](super::invalid_params).)
//!
//! rmcp answers all of them with 415 and a plain-text body. The body is kept while rmcp
//! handles the request and parsed again only when rmcp refused it, so well-formed messages
//! pay nothing beyond the buffering rmcp does anyway.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{ClientJsonRpcMessage, ErrorCode};
use serde_json::{Value, json};

/// Checks the POST bodies of the MCP endpoint; `limit` is the endpoint's body limit.
pub(super) async fn guard(State(limit): State<usize>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: request body exceeds {limit} bytes"),
        )
            .into_response();
    };
    let kept = bytes.clone();
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return response;
    }
    classify(&kept).map_or(response, |error| error.into_response())
}

/// Why a body is not a message, or `None` when it is one (rmcp refused it for another
/// reason, such as its content type).
fn classify(body: &Bytes) -> Option<JsonRpcError> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(e) => {
            return Some(JsonRpcError {
                id: Value::Null,
                code: ErrorCode::PARSE_ERROR,
                message: format!("Parse error: {e}"),
            });
        }
    };
    let Err(e) = serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) else {
        return None;
    };
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned()
        .unwrap_or(Value::Null);
    Some(JsonRpcError {
        id,
        code: ErrorCode::INVALID_REQUEST,
        message: format!("Invalid Request: {e}"),
    })
}

struct JsonRpcError {
    id: Value,
    code: ErrorCode,
    message: String,
}

impl IntoResponse for JsonRpcError {
    fn into_response(self) -> Response {
        let body = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.code.0, "message": self.message},
        });
        (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_and_id(body: &str) -> Option<(i32, Value)> {
        classify(&Bytes::from(body.to_owned())).map(|e| (e.code.0, e.id))
    }

    #[test]
    fn tells_parse_errors_from_invalid_requests() {
        assert_eq!(code_and_id("{not json"), Some((-32700, Value::Null)));
        assert_eq!(code_and_id(r#"{"id":1}"#), Some((-32600, json!(1))));
        assert_eq!(code_and_id(r#"[1,2]"#), Some((-32600, Value::Null)));
        assert_eq!(
            code_and_id(r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#),
            Some((-32600, Value::Null))
        );
        assert_eq!(
            code_and_id(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            None
        );
    }
}
