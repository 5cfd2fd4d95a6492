//! A `tools/call` result of plain text blocks — what most tools answer — written without
//! going through rmcp's `Serialize` (whose internally tagged content blocks take a
//! serializer of their own each), with the same bytes.

use rmcp::model::{CallToolResult, ContentBlock};

/// Whether `result` holds text blocks only (no `structuredContent`, `_meta`, annotations or
/// other block): what [`write_text_only`] writes.
pub(super) fn is_text_only(result: &CallToolResult) -> bool {
    result.structured_content.is_none()
        && result.meta.is_none()
        && result.content.iter().all(|block| {
            matches!(block, ContentBlock::Text(text) if text.meta.is_none() && text.annotations.is_none())
        })
}

/// Writes a result that [`is_text_only`] as JSON to `out`, the way `serde_json` writes it
/// with rmcp's types, `"resultType":"complete"` first when `stateless`.
pub(super) fn write_text_only(result: &CallToolResult, stateless: bool, out: &mut String) {
    out.push_str(if stateless {
        r#"{"resultType":"complete","content":["#
    } else {
        r#"{"content":["#
    });
    for (i, block) in result.content.iter().enumerate() {
        let ContentBlock::Text(text) = block else {
            continue;
        };
        if i > 0 {
            out.push(',');
        }
        out.push_str(r#"{"type":"text","text":"#);
        push_json_string(out, &text.text);
        out.push('}');
    }
    out.push(']');
    match result.is_error {
        Some(true) => out.push_str(r#","isError":true"#),
        Some(false) => out.push_str(r#","isError":false"#),
        None => {}
    }
    out.push('}');
}

/// About how many bytes `result` takes written (text not escaped), so that writing it
/// allocates once.
pub(super) fn length_hint(result: &CallToolResult) -> usize {
    let texts: usize = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.len() + 32,
            _ => 64,
        })
        .sum();
    texts + 64
}

/// Writes the result answering a `call_tool` whose tool answered `inner`, which
/// [`is_text_only`]: one text block carrying `inner`'s envelope, as `serde_json` writes the
/// result `call_tool` wraps `inner` in, without writing the envelope first and escaping it.
pub(super) fn write_envelope(inner: &CallToolResult, stateless: bool, out: &mut String) {
    out.push_str(if stateless {
        r#"{"resultType":"complete","content":[{"type":"text","text":"#
    } else {
        r#"{"content":[{"type":"text","text":"#
    });
    // The envelope `{"isError":…,"content":[{"text":…,"type":"text"},…]}` as a JSON string.
    let failed = inner.is_error == Some(true);
    out.push_str(if failed {
        r#""{\"isError\":true,\"content\":["#
    } else {
        r#""{\"isError\":false,\"content\":["#
    });
    for (i, block) in inner.content.iter().enumerate() {
        let ContentBlock::Text(text) = block else {
            continue;
        };
        if i > 0 {
            out.push(',');
        }
        out.push_str(r#"{\"text\":"#);
        push_twice_escaped(out, &text.text);
        out.push_str(r#",\"type\":\"text\"}"#);
    }
    out.push_str(r#"]}""#);
    out.push_str(if failed {
        r#"}],"isError":true}"#
    } else {
        r#"}],"isError":false}"#
    });
}

/// About how many bytes [`write_envelope`] writes for `inner` (text not escaped).
pub(super) fn envelope_length_hint(inner: &CallToolResult) -> usize {
    length_hint(inner) + 64
}

/// `text` as a JSON string, escaped by `serde_json`.
fn push_json_string(out: &mut String, text: &str) {
    out.push('"');
    push_escaped(out, text);
    out.push('"');
}

/// `text` as a JSON string, written as the contents of another JSON string: what
/// `serde_json` writes for the JSON text of `text` inside a string.
fn push_twice_escaped(out: &mut String, text: &str) {
    if !needs_escaping(text) {
        out.push_str("\\\"");
        out.push_str(text);
        out.push_str("\\\"");
        return;
    }
    let mut once = String::with_capacity(text.len() + 8);
    push_json_string(&mut once, text);
    push_escaped(out, &once);
}

/// The contents of `text` as a JSON string (without the quotes), escaped as `serde_json`
/// escapes them.
fn push_escaped(out: &mut String, text: &str) {
    if !needs_escaping(text) {
        out.push_str(text);
        return;
    }
    // Encoding a `str` cannot fail.
    if let Ok(json) = serde_json::to_string(text) {
        out.push_str(&json[1..json.len() - 1]);
    }
}

/// Whether `serde_json` escapes anything in `text`: a quote, a backslash or a control
/// character.
fn needs_escaping(text: &str) -> bool {
    text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ResultType, TextContent};

    fn written(result: &CallToolResult, stateless: bool) -> Option<String> {
        let mut out = String::new();
        is_text_only(result).then(|| {
            write_text_only(result, stateless, &mut out);
            out
        })
    }

    fn by_serde(result: &CallToolResult, stateless: bool) -> String {
        let mut result = result.clone();
        result.result_type = stateless.then_some(ResultType::COMPLETE);
        serde_json::to_string(&result).unwrap()
    }

    #[test]
    fn text_results_are_written_as_serde_writes_them() {
        let texts = [
            CallToolResult::success(vec![ContentBlock::text("x")]),
            CallToolResult::error(vec![ContentBlock::text("a \"quoted\" é line\n\t\u{1}")]),
            CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]),
            CallToolResult::success(Vec::new()),
            {
                let mut none = CallToolResult::success(vec![ContentBlock::text("x")]);
                none.is_error = None;
                none
            },
        ];
        for result in &texts {
            for stateless in [false, true] {
                assert_eq!(
                    written(result, stateless).as_deref(),
                    Some(by_serde(result, stateless).as_str())
                );
            }
        }
    }

    #[test]
    fn call_tool_envelopes_are_written_as_serde_writes_the_wrapped_result() {
        let texts = [
            "x",
            "",
            "a \"quoted\" é line\n\t\u{1}\\ end",
            "{\"json\": [1, \"two\"]}",
            "back\\slash",
            "\u{7f}\u{1f} \u{2028}",
        ];
        let mut results: Vec<CallToolResult> = texts
            .iter()
            .map(|t| CallToolResult::success(vec![ContentBlock::text(*t)]))
            .collect();
        results.push(CallToolResult::error(vec![ContentBlock::text(
            "it \"failed\"",
        )]));
        results.push(CallToolResult::success(vec![
            ContentBlock::text("a"),
            ContentBlock::text("b\n"),
        ]));
        results.push(CallToolResult::success(Vec::new()));
        let mut none = CallToolResult::success(vec![ContentBlock::text("x")]);
        none.is_error = None;
        results.push(none);
        for inner in &results {
            assert!(is_text_only(inner));
            for stateless in [false, true] {
                let mut out = String::new();
                write_envelope(inner, stateless, &mut out);
                let outer = crate::meta_tools::enveloped(inner);
                assert_eq!(out, by_serde(&outer, stateless), "{inner:?}");
            }
        }
    }

    #[test]
    fn other_results_are_left_to_serde() {
        let mut structured = CallToolResult::success(vec![ContentBlock::text("x")]);
        structured.structured_content = Some(serde_json::json!({"a": 1}));
        let image = CallToolResult::success(vec![ContentBlock::image("AA==", "image/png")]);
        let mut meta = serde_json::Map::new();
        meta.insert("k".into(), 1.into());
        let annotated = CallToolResult::success(vec![ContentBlock::Text(
            TextContent::new("x").with_meta(meta.into()),
        )]);
        for result in [structured, image, annotated] {
            assert_eq!(written(&result, false), None);
        }
    }
}
