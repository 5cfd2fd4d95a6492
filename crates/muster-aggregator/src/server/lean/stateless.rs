//! Which 2026-07-28 requests the lean path answers: a stateless `tools/call` naming a
//! meta-tool whose headers and per-request `_meta` agree with its body exactly, from a
//! client that declares no capability. rmcp's stateless service would accept such a request
//! without a word; every other stateless request — a missing or disagreeing `Mcp-Method`,
//! `Mcp-Name` or protocol version, `Mcp-Param-*` headers to check against a schema, a
//! progress token, declared capabilities — goes to rmcp, which validates and answers it.

use std::borrow::Cow;

use axum::http::HeaderMap;
use rmcp::model::JsonObject;
use serde::Deserialize;
use serde_json::value::RawValue;

/// The header naming the protocol version of a request.
pub(super) const PROTOCOL_VERSION_HEADER: http::HeaderName =
    http::HeaderName::from_static("mcp-protocol-version");
/// The protocol version whose requests stand alone.
pub(super) const STATELESS_VERSION: &str = "2026-07-28";
/// The header naming a stateless request's method.
const METHOD_HEADER: &str = "mcp-method";
/// The header naming the tool of a stateless `tools/call`.
const NAME_HEADER: &str = "mcp-name";
/// The prefix of headers that mirror tool arguments (checked by rmcp against the schema).
const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// `params` of a plain stateless `tools/call`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StatelessCallParams<'a> {
    #[serde(borrow)]
    pub(super) name: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow)]
    meta: StatelessMeta<'a>,
}

/// The per-request `_meta` of a plain stateless call: the protocol version, the client, and
/// no capability; any other key (progress token, trace context, …) goes the full way.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatelessMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    protocol_version: Cow<'a, str>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default, borrow)]
    _client_info: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        deserialize_with = "empty_object"
    )]
    _client_capabilities: (),
}

/// Accepts an empty JSON object only.
fn empty_object<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<(), D::Error> {
    let object = JsonObject::deserialize(deserializer)?;
    if object.is_empty() {
        Ok(())
    } else {
        Err(serde::de::Error::custom("capabilities declared"))
    }
}

impl StatelessCallParams<'_> {
    /// Whether `headers` agree with these params as a plain stateless call needs.
    pub(super) fn agrees_with(&self, headers: &HeaderMap) -> bool {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        self.meta.protocol_version == STATELESS_VERSION
            && header(PROTOCOL_VERSION_HEADER.as_str()) == Some(STATELESS_VERSION)
            && header(METHOD_HEADER) == Some("tools/call")
            && header(NAME_HEADER) == Some(&*self.name)
            && !headers
                .keys()
                .any(|name| name.as_str().starts_with(PARAM_HEADER_PREFIX))
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}"#;

    fn params(json: &str) -> Option<StatelessCallParams<'_>> {
        serde_json::from_str(json).ok()
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        headers
    }

    const AGREEING: [(&str, &str); 3] = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "describe_tool"),
    ];

    #[test]
    fn a_plain_call_with_agreeing_headers_is_lean() {
        let json = format!(r#"{{"name":"describe_tool","arguments":{{"name":"x"}},{META}}}"#);
        let call = params(&json).expect("plain");
        assert!(call.agrees_with(&headers(&AGREEING)));
    }

    #[test]
    fn disagreeing_or_missing_headers_go_to_rmcp() {
        let json = format!(r#"{{"name":"describe_tool",{META}}}"#);
        let call = params(&json).expect("plain");
        for (drop, (name, _)) in AGREEING.iter().enumerate() {
            let mut pairs = AGREEING.to_vec();
            pairs.remove(drop);
            assert!(!call.agrees_with(&headers(&pairs)), "without {name}");
        }
        let mut other_name = AGREEING.to_vec();
        other_name[2] = ("mcp-name", "list_tools");
        assert!(!call.agrees_with(&headers(&other_name)));
        let mut old_version = AGREEING.to_vec();
        old_version[0] = ("mcp-protocol-version", "2025-06-18");
        assert!(!call.agrees_with(&headers(&old_version)));
        let mut param = AGREEING.to_vec();
        param.push(("mcp-param-name", "x"));
        assert!(!call.agrees_with(&headers(&param)));
    }

    #[test]
    fn anything_more_in_meta_or_params_goes_to_rmcp() {
        let with = |extra: &str| {
            format!(
                r#"{{"name":"describe_tool",{}}}"#,
                META.replace(r#""io.modelcontextprotocol/clientCapabilities":{}"#, extra)
            )
        };
        for meta in [
            r#""io.modelcontextprotocol/clientCapabilities":{"sampling":{}}"#,
            r#""io.modelcontextprotocol/clientCapabilities":{},"progressToken":1"#,
            r#""io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-1""#,
            r#""io.modelcontextprotocol/clientCapabilities":[]"#,
        ] {
            assert!(params(&with(meta)).is_none(), "{meta}");
        }
        assert!(params(r#"{"name":"describe_tool"}"#).is_none(), "no _meta");
        let task = format!(r#"{{"name":"describe_tool","task":{{}},{META}}}"#);
        assert!(params(&task).is_none(), "task");
        let old = format!(
            r#"{{"name":"describe_tool",{}}}"#,
            META.replace("2026-07-28", "2025-06-18")
        );
        let old = params(&old).expect("parses");
        assert!(
            !old.agrees_with(&headers(&AGREEING)),
            "meta version disagrees"
        );
    }
}
