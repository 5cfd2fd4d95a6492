//! `list_prompts`, `describe_prompt` and `get_prompt`: the downstream prompts, under their
//! exposed names.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, PromptMessage, Tool};
use serde::Serialize;
use serde_json::{Map, Value};

use super::reply;
use super::schema::{self, Arg};
use crate::registry::AggregatedCatalog;

/// The `list_prompts` definition.
pub(super) fn list_definition() -> Tool {
    schema::tool(
        "list_prompts",
        "List all available prompts from connected MCP servers",
        vec![],
    )
}

/// The `describe_prompt` definition.
pub(super) fn describe_definition() -> Tool {
    schema::tool(
        "describe_prompt",
        "Get detailed information about a specific prompt",
        vec![Arg::required(
            "name",
            "string",
            "Name of the prompt to describe",
        )],
    )
}

/// The `get_prompt` definition.
pub(super) fn get_definition() -> Tool {
    schema::tool(
        "get_prompt",
        "Get a prompt with the given arguments",
        vec![
            Arg::required("name", "string", "Name of the prompt to get"),
            Arg::optional(
                "arguments",
                "object",
                "Arguments to pass to the prompt (as JSON object with string values)",
            ),
        ],
    )
}

#[derive(Serialize)]
struct ListEntry<'a> {
    name: &'a str,
    description: &'a str,
}

/// Keys in alphabetical order, as the original prints its maps.
#[derive(Serialize)]
struct Detail<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    arguments: Vec<ArgumentDetail<'a>>,
    description: &'a str,
    name: &'a str,
}

#[derive(Serialize)]
struct ArgumentDetail<'a> {
    description: &'a str,
    name: &'a str,
    required: bool,
}

#[derive(Serialize)]
struct Message {
    role: Value,
    content: Value,
}

/// `[{"name","description"}]`.
pub(super) fn list(catalog: &AggregatedCatalog) -> CallToolResult {
    if catalog.prompts().is_empty() {
        return reply::text("No prompts available");
    }
    let entries: Vec<ListEntry<'_>> = catalog
        .prompts()
        .iter()
        .map(|p| ListEntry {
            name: p.name(),
            description: p.prompt().description.as_deref().unwrap_or_default(),
        })
        .collect();
    reply::json(&entries)
}

/// `{"arguments"?,"description","name"}` of one prompt.
pub(super) fn describe(catalog: &AggregatedCatalog, args: &JsonObject) -> CallToolResult {
    let Some(name) = name_arg(args) else {
        return reply::error("name argument is required");
    };
    let Some(prompt) = catalog.prompt(name) else {
        return reply::error(format!("Prompt not found: {name}"));
    };
    let prompt = prompt.prompt();
    let arguments = prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| ArgumentDetail {
            description: a.description.as_deref().unwrap_or_default(),
            name: &a.name,
            required: a.required.unwrap_or(false),
        })
        .collect();
    reply::json(&Detail {
        arguments,
        description: prompt.description.as_deref().unwrap_or_default(),
        name: &prompt.name,
    })
}

/// The rendered messages as `[{"role","content"}]`. Argument values are sent as text. An
/// unknown prompt or a failed rendering is an error result naming the prompt.
pub(super) async fn get(catalog: Arc<AggregatedCatalog>, args: &JsonObject) -> CallToolResult {
    let Some(name) = name_arg(args) else {
        return reply::error("name argument is required");
    };
    let arguments = match args.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(reply::go_text(v))))
            .collect(),
        Some(_) => return reply::error("arguments must be a JSON object"),
    };
    let Some(render) = catalog.prompt(name).map(|p| p.get(Some(arguments))) else {
        return reply::error(format!("Prompt not found: {name}"));
    };
    let messages = match render.await {
        Ok(result) => result.messages,
        Err(e) => return reply::error(format!("Failed to get prompt {name}: {e}")),
    };
    let messages: Vec<Message> = messages.iter().map(message).collect();
    reply::json(&messages)
}

fn message(message: &PromptMessage) -> Message {
    let mut content = Map::new();
    match &message.content {
        ContentBlock::Text(text) => {
            content.insert("text".into(), Value::from(text.text.as_str()));
            content.insert("type".into(), Value::from("text"));
        }
        ContentBlock::Image(image) => {
            content.insert("dataSize".into(), Value::from(image.data.len()));
            content.insert("mimeType".into(), Value::from(image.mime_type.as_str()));
            content.insert("type".into(), Value::from("image"));
        }
        ContentBlock::Audio(audio) => {
            content.insert("dataSize".into(), Value::from(audio.data.len()));
            content.insert("mimeType".into(), Value::from(audio.mime_type.as_str()));
            content.insert("type".into(), Value::from("audio"));
        }
        ContentBlock::Resource(embedded) => {
            content.insert(
                "resource".into(),
                serde_json::to_value(&embedded.resource).unwrap_or(Value::Null),
            );
            content.insert("type".into(), Value::from("embeddedResource"));
        }
        other => {
            return Message {
                role: serde_json::to_value(&message.role).unwrap_or(Value::Null),
                content: serde_json::to_value(other).unwrap_or(Value::Null),
            };
        }
    }
    Message {
        role: serde_json::to_value(&message.role).unwrap_or(Value::Null),
        content: Value::Object(content),
    }
}

fn name_arg(args: &JsonObject) -> Option<&str> {
    args.get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}
