//! `-32602 Invalid params` for requests of a known method whose parameters do not fit it
//! (e.g. `tools/call` with a `name` that is not a string). rmcp hands such a request to the
//! handler as a custom request, which would otherwise answer `-32601 Method not found`.

use rmcp::model::{
    CallToolRequestParams, CustomRequest, ErrorCode, ErrorData, GetPromptRequestParams,
    PaginatedRequestParams, ReadResourceRequestParams, SubscriptionsListenRequestParams,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The error for a request rmcp could not read as any method it knows: `-32602` naming
/// what does not fit when it is a method muster serves and its parameters do not fit, else
/// `-32601` (which rmcp answers with HTTP 404 for methods 2026-07-28 removed, such as
/// `initialize` or `logging/setLevel`).
pub(super) fn custom_request_error(request: &CustomRequest) -> ErrorData {
    let method = request.method.as_str();
    let params = request
        .params
        .clone()
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    let reason = match method {
        "tools/call" => mismatch::<CallToolRequestParams>(params),
        "prompts/get" => mismatch::<GetPromptRequestParams>(params),
        "resources/read" => mismatch::<ReadResourceRequestParams>(params),
        "subscriptions/listen" => mismatch::<SubscriptionsListenRequestParams>(params),
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            mismatch::<PaginatedRequestParams>(params)
        }
        _ => None,
    };
    match reason {
        Some(reason) => {
            ErrorData::invalid_params(format!("Invalid params for {method}: {reason}"), None)
        }
        None => ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method.to_owned(), None),
    }
}

/// Why `params` is not a `T`, when it is not.
fn mismatch<T: DeserializeOwned>(params: Value) -> Option<String> {
    serde_json::from_value::<T>(params)
        .err()
        .map(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn custom(method: &str, params: Value) -> CustomRequest {
        CustomRequest::new(method.to_owned(), Some(params))
    }

    #[test]
    fn known_methods_with_bad_params_are_invalid_params() {
        let error = custom_request_error(&custom("tools/call", json!({"name": 123})));
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(
            error.message.starts_with("Invalid params for tools/call: "),
            "{error:?}"
        );
        let error = custom_request_error(&custom("prompts/get", json!({"name": []})));
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        let error = custom_request_error(&custom("vendor/thing", json!({})));
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
        // Methods 2026-07-28 removed stay "method not found".
        let error = custom_request_error(&custom("logging/setLevel", json!({"level": "info"})));
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
        let error = custom_request_error(&custom("initialize", json!({})));
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
    }
}
