//! `call_tool`: runs any reachable tool and wraps its result in the JSON envelope clients
//! unwrap (reference §1.5).
//!
//! The outer result's only content is the compact envelope
//! `{"isError":bool,"content":[...],"structuredContent":...}`; its own `isError` and
//! `structuredContent` mirror the inner result. Failures inside resolution or execution
//! become an inner `isError` result `Tool execution failed: <error>`, never a JSON-RPC error.

use std::fmt;

use muster_core::tool::{CallContext, ToolArguments, ToolCall, ToolService};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde::de::{self, MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tower::ServiceExt;

use super::schema::{self, Arg};
use super::{Arguments, reply};
use crate::json_key::KeySeed;

/// The definition in `tools/list`.
pub(super) fn definition() -> Tool {
    schema::tool(
        "call_tool",
        "Execute a tool with the given arguments",
        vec![
            Arg::required("name", "string", "Name of the tool to call"),
            Arg::optional(
                "arguments",
                "object",
                "Arguments to pass to the tool (as JSON object)",
            ),
        ],
    )
}

/// `call_tool`'s arguments read from their JSON text: the tool's name and its arguments.
/// Other keys are ignored, as in an arguments object. Only an object is read, and only
/// with a `name` that is a string or `null` and `arguments` that are an object or `null`,
/// each given at most once; anything else is an error, for which the arguments are read as
/// the object `call_tool` words its errors about.
#[derive(Debug)]
pub(crate) struct ReadArguments {
    /// The tool to call.
    name: Option<String>,
    /// The tool's arguments as their JSON text (`null`: none).
    arguments: Option<ToolArguments>,
}

impl<'de> Deserialize<'de> for ReadArguments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ReadArgumentsVisitor)
    }
}

/// Reads [`ReadArguments`] from an object, and from nothing else.
struct ReadArgumentsVisitor;

impl<'de> Visitor<'de> for ReadArgumentsVisitor {
    type Value = ReadArguments;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the arguments object of call_tool")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReadArguments, A::Error> {
        let mut name: Option<Option<String>> = None;
        let mut arguments: Option<Option<ToolArguments>> = None;
        while let Some(key) = map.next_key_seed(KeySeed(argument_key))? {
            match key {
                ArgumentKey::Name if name.is_some() => {
                    return Err(de::Error::duplicate_field("name"));
                }
                ArgumentKey::Name => name = Some(map.next_value()?),
                ArgumentKey::Arguments if arguments.is_some() => {
                    return Err(de::Error::duplicate_field("arguments"));
                }
                ArgumentKey::Arguments => {
                    // Kept as text: a server the call is forwarded to gets it as written.
                    arguments = Some(match map.next_value::<Option<Box<RawValue>>>()? {
                        None => None,
                        Some(text) => Some(ToolArguments::from_text(text).ok_or_else(|| {
                            de::Error::invalid_type(
                                de::Unexpected::Other("non-object"),
                                &"an object",
                            )
                        })?),
                    });
                }
                ArgumentKey::Other => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(ReadArguments {
            name: name.flatten(),
            arguments: arguments.flatten(),
        })
    }
}

/// A key of `call_tool`'s arguments.
enum ArgumentKey {
    Name,
    Arguments,
    Other,
}

/// The [`ArgumentKey`] `key` names.
fn argument_key(key: &str) -> ArgumentKey {
    match key {
        "name" => ArgumentKey::Name,
        "arguments" => ArgumentKey::Arguments,
        _ => ArgumentKey::Other,
    }
}

impl ReadArguments {
    /// The arguments as the object they were read from. Only `call_tool`'s are read as
    /// [`ReadArguments`]; should another meta-tool get them, tool arguments that make no
    /// object muster can hold are left out.
    pub(super) fn into_object(self) -> JsonObject {
        let mut object = JsonObject::new();
        if let Some(name) = self.name {
            object.insert("name".into(), Value::String(name));
        }
        if let Some(Ok(arguments)) = self.arguments.map(ToolArguments::into_object) {
            object.insert("arguments".into(), Value::Object(arguments));
        }
        object
    }
}

/// The tool's name and its arguments in `args`, or the error result `call_tool` answers
/// with.
fn target(args: Arguments) -> Result<(String, Option<ToolArguments>), CallToolResult> {
    match args {
        Arguments::CallTool(ReadArguments { name, arguments }) => match name {
            Some(name) if !name.is_empty() => Ok((name, arguments)),
            _ => Err(reply::error("name argument is required")),
        },
        Arguments::Object(args) => {
            let mut args = args.unwrap_or_default();
            let name = match args.remove("name") {
                Some(Value::String(name)) if !name.is_empty() => name,
                _ => return Err(reply::error("name argument is required")),
            };
            match args.remove("arguments") {
                None | Some(Value::Null) => Ok((name, None)),
                Some(Value::Object(arguments)) => Ok((name, Some(arguments.into()))),
                Some(_) => Err(reply::error("arguments must be a JSON object")),
            }
        }
    }
}

/// What `call_tool` answers with.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The called tool's result, which the answer carries in its envelope ([`wrap`]).
    Called(CallToolResult),
    /// `call_tool`'s own error (its arguments), answered as it is.
    Refused(CallToolResult),
}

impl Outcome {
    /// The answer itself.
    pub(crate) fn into_answer(self) -> CallToolResult {
        match self {
            Self::Called(inner) => wrap(&inner),
            Self::Refused(error) => error,
        }
    }

    /// Whether the answer is an error (an enveloped result is one when the tool's is).
    pub(crate) fn is_error(&self) -> bool {
        let (Self::Called(result) | Self::Refused(result)) = self;
        result.is_error == Some(true)
    }
}

/// Calls the tool `args.name` with `args.arguments` through `service`.
pub(super) async fn run(service: ToolService, args: Arguments, context: CallContext) -> Outcome {
    let (name, arguments) = match target(args) {
        Ok(call) => call,
        Err(error) => return Outcome::Refused(error),
    };
    let call = ToolCall::in_context(name, arguments, context);
    Outcome::Called(match service.oneshot(call).await {
        Ok(result) => result,
        Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
            "Tool execution failed: {e}"
        ))]),
    })
}

/// The outer result carrying `inner`'s envelope.
pub(crate) fn wrap(inner: &CallToolResult) -> CallToolResult {
    let text = envelope_text(inner);
    let mut outer = if inner.is_error.unwrap_or(false) {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    outer.structured_content = inner.structured_content.clone().filter(|v| !v.is_null());
    outer
}

/// The envelope of a tool result: `isError` (always), `content` with text items as
/// `{"text","type"}` and images/audio as `{"dataSize","mimeType","type"}` (the base64 data
/// dropped, its length kept), other items as they are, and `structuredContent` when present.
pub fn envelope(result: &CallToolResult) -> Value {
    let mut envelope = Map::new();
    envelope.insert(
        "isError".into(),
        Value::Bool(result.is_error.unwrap_or(false)),
    );
    envelope.insert(
        "content".into(),
        Value::Array(result.content.iter().map(content_item).collect()),
    );
    if let Some(structured) = result.structured_content.as_ref().filter(|v| !v.is_null()) {
        envelope.insert("structuredContent".into(), structured.clone());
    }
    Value::Object(envelope)
}

/// The [`envelope`] of `result` as compact JSON, written straight from the result.
fn envelope_text(result: &CallToolResult) -> String {
    serde_json::to_string(&EnvelopeOut(result)).unwrap_or_else(|_| envelope(result).to_string())
}

/// Serializes as the [`envelope`] of a result, without building it.
struct EnvelopeOut<'a>(&'a CallToolResult);

impl Serialize for EnvelopeOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let result = self.0;
        let structured = result.structured_content.as_ref().filter(|v| !v.is_null());
        let mut map = serializer.serialize_map(Some(2 + usize::from(structured.is_some())))?;
        map.serialize_entry("isError", &result.is_error.unwrap_or(false))?;
        map.serialize_entry("content", &ContentOut(&result.content))?;
        if let Some(structured) = structured {
            map.serialize_entry("structuredContent", structured)?;
        }
        map.end()
    }
}

/// Serializes as the envelope's `content`.
struct ContentOut<'a>(&'a [ContentBlock]);

impl Serialize for ContentOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut items = serializer.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            match item {
                ContentBlock::Text(text) => items.serialize_element(&TextItem {
                    text: &text.text,
                    kind: "text",
                })?,
                ContentBlock::Image(image) => items.serialize_element(&DataItem {
                    data_size: image.data.len(),
                    mime_type: &image.mime_type,
                    kind: "image",
                })?,
                ContentBlock::Audio(audio) => items.serialize_element(&DataItem {
                    data_size: audio.data.len(),
                    mime_type: &audio.mime_type,
                    kind: "audio",
                })?,
                other => items.serialize_element(&content_item(other))?,
            }
        }
        items.end()
    }
}

#[derive(Serialize)]
struct TextItem<'a> {
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DataItem<'a> {
    data_size: usize,
    mime_type: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// One content item; keys in alphabetical order as the original prints its maps.
fn content_item(item: &ContentBlock) -> Value {
    let mut map = Map::new();
    match item {
        ContentBlock::Text(text) => {
            map.insert("text".into(), Value::from(text.text.as_str()));
            map.insert("type".into(), Value::from("text"));
        }
        ContentBlock::Image(image) => {
            map.insert("dataSize".into(), Value::from(image.data.len()));
            map.insert("mimeType".into(), Value::from(image.mime_type.as_str()));
            map.insert("type".into(), Value::from("image"));
        }
        ContentBlock::Audio(audio) => {
            map.insert("dataSize".into(), Value::from(audio.data.len()));
            map.insert("mimeType".into(), Value::from(audio.mime_type.as_str()));
            map.insert("type".into(), Value::from("audio"));
        }
        other => return serde_json::to_value(other).unwrap_or(Value::Null),
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use rmcp::model::ResourceContents;
    use serde_json::json;

    use super::*;

    #[test]
    fn envelopes() {
        let mut structured = CallToolResult::success(vec![ContentBlock::text("{\"a\":1}")]);
        structured.structured_content = Some(json!({"a": 1}));
        let table = [
            (
                CallToolResult::success(vec![ContentBlock::text("hi")]),
                r#"{"isError":false,"content":[{"text":"hi","type":"text"}]}"#,
            ),
            (
                CallToolResult::error(vec![ContentBlock::text("bad")]),
                r#"{"isError":true,"content":[{"text":"bad","type":"text"}]}"#,
            ),
            (
                structured,
                r#"{"isError":false,"content":[{"text":"{\"a\":1}","type":"text"}],"structuredContent":{"a":1}}"#,
            ),
            (
                CallToolResult::success(vec![
                    ContentBlock::image("aGVsbG8=", "image/png"),
                    ContentBlock::audio("AAAA", "audio/wav"),
                ]),
                r#"{"isError":false,"content":[{"dataSize":8,"mimeType":"image/png","type":"image"},{"dataSize":4,"mimeType":"audio/wav","type":"audio"}]}"#,
            ),
            (
                CallToolResult::success(vec![]),
                r#"{"isError":false,"content":[]}"#,
            ),
        ];
        for (result, expected) in table {
            assert_eq!(envelope(&result).to_string(), expected);
            assert_eq!(envelope_text(&result), expected);
        }
    }

    #[test]
    fn other_content_passes_through() {
        let result = CallToolResult::success(vec![ContentBlock::resource(ResourceContents::text(
            "body",
            "file:///a",
        ))]);
        let env = envelope(&result);
        assert_eq!(envelope_text(&result), env.to_string());
        assert_eq!(env["content"][0]["type"], "resource");
        assert_eq!(env["content"][0]["resource"]["text"], "body");
    }

    #[test]
    fn the_outer_result_mirrors_the_inner_one() {
        let mut inner = CallToolResult::error(vec![ContentBlock::text("x")]);
        inner.structured_content = Some(json!({"k": "v"}));
        let outer = wrap(&inner);
        assert_eq!(outer.is_error, Some(true));
        assert_eq!(outer.structured_content, Some(json!({"k": "v"})));
        assert_eq!(outer.content.len(), 1);
        let mut missing = CallToolResult::success(vec![]);
        missing.is_error = None;
        assert_eq!(wrap(&missing).is_error, Some(false));
    }
}
