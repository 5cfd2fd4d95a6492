//! Replies that never change within a session: `tools/list` (the meta-tools) and `ping`.
//! Answered by the front door, they need no session worker — the Python SDK's clients list
//! the tools right after the handshake — and are the JSON-RPC messages rmcp's handler sends
//! (`tools/list` serialized once from the same definitions).

use std::sync::OnceLock;

use rmcp::model::ListToolsResult;
use serde_json::value::RawValue;

use crate::meta_tools;

/// The reply to a plain `method` request with id `id`, when its result is fixed.
pub(super) fn reply(method: &str, id: &RawValue) -> Option<String> {
    let result = match method {
        "tools/list" => tools(),
        "ping" => "{}",
        _ => return None,
    };
    Some(format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
        id.get()
    ))
}

/// Whether `params` leaves the reply as it is: absent, or an empty object (no cursor, no
/// `_meta`).
pub(super) fn plain_params(params: Option<&RawValue>) -> bool {
    params.is_none_or(|raw| {
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(raw.get())
            .is_ok_and(|map| map.is_empty())
    })
}

/// The result of `tools/list`, serialized once.
fn tools() -> &'static str {
    static TOOLS: OnceLock<String> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let mut result = ListToolsResult::with_all_items(meta_tools::definitions().to_vec());
        // `resultType` is of 2026-07-28 replies; a session's reply has none.
        result.result_type = None;
        serde_json::to_string(&result).unwrap_or_else(|_| r#"{"tools":[]}"#.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).expect("raw id")
    }

    #[test]
    fn tools_list_names_every_meta_tool() {
        let reply = reply("tools/list", &id("3")).expect("fixed");
        let message: serde_json::Value = serde_json::from_str(&reply).expect("JSON");
        assert_eq!(message["id"], 3);
        let names: Vec<&str> = message["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        let expected: Vec<&str> = meta_tools::definitions()
            .iter()
            .map(|t| t.name.as_ref())
            .collect();
        assert_eq!(names, expected);
    }

    #[test]
    fn ping_is_an_empty_result_and_other_methods_are_not_fixed() {
        assert_eq!(
            reply("ping", &id(r#""p""#)).as_deref(),
            Some(r#"{"jsonrpc":"2.0","id":"p","result":{}}"#)
        );
        assert!(reply("resources/list", &id("1")).is_none());
    }

    #[test]
    fn only_empty_params_are_plain() {
        assert!(plain_params(None));
        assert!(plain_params(Some(&id("{}"))));
        assert!(!plain_params(Some(&id(r#"{"cursor":"2"}"#))));
        assert!(!plain_params(Some(&id(r#"{"_meta":{}}"#))));
        assert!(!plain_params(Some(&id("[]"))));
    }
}
