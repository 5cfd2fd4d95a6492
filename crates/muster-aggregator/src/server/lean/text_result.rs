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

/// `text` as a JSON string, escaped by `serde_json`.
fn push_json_string(out: &mut String, text: &str) {
    match serde_json::to_string(text) {
        Ok(json) => out.push_str(&json),
        // Encoding a `str` cannot fail.
        Err(_) => out.push_str("\"\""),
    }
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
