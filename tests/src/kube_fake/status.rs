//! The API server's `Status` errors, in the exact JSON shape and wording of kube-apiserver.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::registry::ResourceType;

/// One field error, as `k8s.io/apimachinery/pkg/util/validation/field.Error`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldError {
    /// The cause type (`FieldValueInvalid`, `FieldValueRequired`, ...).
    pub(crate) kind: FieldErrorKind,
    /// The field path (`spec.url`, `spec.items[0].name`).
    pub(crate) field: String,
    /// The offending value, when the error type prints one.
    pub(crate) value: Option<Value>,
    /// The detail text after the value.
    pub(crate) detail: String,
    /// The value as Go prints it, when it is not a JSON value (`0x0`).
    pub(crate) shown: Option<String>,
}

/// The field error types of kube-apiserver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldErrorKind {
    Invalid,
    TypeInvalid,
    Required,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Duplicate,
}

impl FieldErrorKind {
    fn cause_type(self) -> &'static str {
        match self {
            Self::Invalid => "FieldValueInvalid",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::Required => "FieldValueRequired",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Duplicate => "FieldValueDuplicate",
        }
    }

    fn text(self) -> &'static str {
        match self {
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::Required => "Required value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Duplicate => "Duplicate value",
        }
    }
}

impl FieldError {
    pub(crate) fn new(
        kind: FieldErrorKind,
        field: impl Into<String>,
        value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            field: field.into(),
            value,
            detail: detail.into(),
            shown: None,
        }
    }

    /// An invalid value printed as given.
    pub(crate) fn invalid_shown(
        field: impl Into<String>,
        shown: &str,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            shown: Some(shown.to_owned()),
            ..Self::new(FieldErrorKind::Invalid, field, None, detail)
        }
    }

    pub(crate) fn invalid(
        field: impl Into<String>,
        value: Value,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorKind::Invalid, field, Some(value), detail)
    }

    pub(crate) fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Required, field, None, detail)
    }

    pub(crate) fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Forbidden, field, None, detail)
    }

    /// `ErrorBody()`: the text after `field: `.
    pub(crate) fn body(&self) -> String {
        let mut s = match self.kind {
            FieldErrorKind::Required | FieldErrorKind::Forbidden | FieldErrorKind::TooLong => {
                self.kind.text().to_owned()
            }
            _ => match &self.value {
                None => match &self.shown {
                    Some(v) => format!("{}: {v}", self.kind.text()),
                    None => self.kind.text().to_owned(),
                },
                Some(v) => format!("{}: {}", self.kind.text(), go_value(v)),
            },
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// `Error()`: `field: body`.
    pub(crate) fn message(&self) -> String {
        format!("{}: {}", self.field, self.body())
    }
}

/// How Go's `%v`/`%q` prints a decoded JSON value inside a field error.
pub(crate) fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::String(s) => go_quote(s),
        Value::Number(n) => go_number(n),
        Value::Bool(b) => b.to_string(),
        Value::Array(_) => format!("[]interface {{}}{{{}}}", go_items(v)),
        Value::Object(_) => format!("map[string]interface {{}}{{{}}}", go_items(v)),
    }
}

fn go_items(v: &Value) -> String {
    match v {
        Value::Array(a) => a.iter().map(go_value).collect::<Vec<_>>().join(", "),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{}:{}", go_quote(k), go_value(v)))
            .collect::<Vec<_>>()
            .join(", "),
        other => go_value(other),
    }
}

/// Go's `%v` of an int64 or float64 decoded from JSON.
pub(crate) fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        // %v uses %g with the shortest representation: 1e+21, 1e-05
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((m, e)) => {
                let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
                format!("{m}e{sign}{digits:0>2}")
            }
            None => s,
        }
    } else {
        format!("{f}")
    }
}

/// Go's `%q` of a string.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A failed request, answered with a `Status` object.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub(crate) code: u16,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
    pub(crate) details: Option<Value>,
}

impl ApiError {
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    fn resource_details(rt: &ResourceType, name: &str) -> Value {
        let mut d = serde_json::Map::new();
        if !name.is_empty() {
            d.insert("name".into(), json!(name));
        }
        if !rt.group.is_empty() {
            d.insert("group".into(), json!(rt.group));
        }
        d.insert("kind".into(), json!(rt.plural));
        Value::Object(d)
    }

    /// `NewNotFound`: `mcpservers.muster.giantswarm.io "x" not found`.
    pub(crate) fn not_found(rt: &ResourceType, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} {} not found", rt.qualified_resource(), go_quote(name)),
        )
        .with_details(Self::resource_details(rt, name))
    }

    /// `NewAlreadyExists`.
    pub(crate) fn already_exists(rt: &ResourceType, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!(
                "{} {} already exists",
                rt.qualified_resource(),
                go_quote(name)
            ),
        )
        .with_details(Self::resource_details(rt, name))
    }

    /// `NewConflict` for a stale resourceVersion.
    pub(crate) fn conflict(rt: &ResourceType, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {}: {why}",
                rt.qualified_resource(),
                go_quote(name)
            ),
        )
        .with_details(Self::resource_details(rt, name))
    }

    /// The conflict of an optimistic-concurrency update.
    pub(crate) fn stale(rt: &ResourceType, name: &str) -> Self {
        Self::conflict(
            rt,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// `NewInvalid`: 422 naming every field error.
    pub(crate) fn invalid(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Self {
        let mut unique: Vec<String> = Vec::new();
        for e in errors {
            let m = e.message();
            if !unique.contains(&m) {
                unique.push(m);
            }
        }
        let aggregated = match unique.len() {
            0 => String::new(),
            1 => format!(": {}", unique[0]),
            _ => format!(": [{}]", unique.join(", ")),
        };
        let qualified = if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        };
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({"reason": e.kind.cause_type(), "message": e.body(), "field": e.field}))
            .collect();
        let mut d = serde_json::Map::new();
        if !name.is_empty() {
            d.insert("name".into(), json!(name));
        }
        if !group.is_empty() {
            d.insert("group".into(), json!(group));
        }
        d.insert("kind".into(), json!(kind));
        d.insert("causes".into(), Value::Array(causes));
        Self::new(
            422,
            "Invalid",
            format!("{qualified} {} is invalid{aggregated}", go_quote(name)),
        )
        .with_details(Value::Object(d))
    }

    /// 400 BadRequest.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 405 MethodNotAllowed.
    pub(crate) fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 404 for an unknown URL path.
    pub(crate) fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    /// 415 for a patch type the resource does not accept.
    pub(crate) fn unsupported_media_type(content_type: &str, accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
        .with_details(json!({"causes": [{"reason": "UnexpectedHeader", "message": format!("Content-Type: {content_type}")}]}))
    }

    /// The same error with another message.
    pub(crate) fn with_message(mut self, message: String) -> Self {
        self.message = message;
        self
    }

    /// 410 Gone for a compacted resourceVersion (the watch `ERROR` event's object).
    pub(crate) fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 500 InternalError.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    /// The `Status` object.
    pub(crate) fn status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (
            code,
            [("content-type", "application/json")],
            self.status().to_string(),
        )
            .into_response()
    }
}

/// The `Status` of a successful delete of an object that is gone at once.
pub(crate) fn success_status(rt: &ResourceType, name: &str, uid: &str) -> Value {
    let mut details = ApiError::resource_details(rt, name);
    details["uid"] = json!(uid);
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_print_as_go_prints_them() {
        assert_eq!(go_value(&json!("a\"b")), r#""a\"b""#);
        assert_eq!(go_value(&json!(0)), "0");
        assert_eq!(go_value(&json!(1.5)), "1.5");
        assert_eq!(go_value(&json!(1e21)), "1e+21");
        assert_eq!(go_value(&json!(true)), "true");
    }

    #[test]
    fn field_errors_read_like_the_api_server() {
        let e = FieldError::invalid("spec.url", json!("ftp://x"), "must be http");
        assert_eq!(
            e.message(),
            r#"spec.url: Invalid value: "ftp://x": must be http"#
        );
        assert_eq!(
            FieldError::required("spec.url", "").message(),
            "spec.url: Required value"
        );
        let too_long = FieldError::new(
            FieldErrorKind::TooLong,
            "spec.x",
            Some(json!("abcd")),
            "may not be more than 3 bytes",
        );
        assert_eq!(
            too_long.message(),
            "spec.x: Too long: may not be more than 3 bytes"
        );
        let two = ApiError::invalid(
            "g.io",
            "K",
            "n",
            &[e.clone(), FieldError::required("spec.y", "")],
        );
        assert_eq!(
            two.message,
            r#"K.g.io "n" is invalid: [spec.url: Invalid value: "ftp://x": must be http, spec.y: Required value]"#
        );
        assert_eq!(
            two.status()["details"]["causes"][1]["reason"],
            json!("FieldValueRequired")
        );
    }
}
