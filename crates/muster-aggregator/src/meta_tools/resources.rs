//! `list_resources`, `describe_resource` and `get_resource`: the downstream resources,
//! under their exposed URIs.

use std::sync::Arc;

use rmcp::model::{CallToolResult, JsonObject, ResourceContents, Tool};
use serde::Serialize;
use serde_json::Value;

use super::reply;
use super::schema::{self, Arg};
use crate::registry::AggregatedCatalog;

/// The `list_resources` definition.
pub(super) fn list_definition() -> Tool {
    schema::tool(
        "list_resources",
        "List all available resources from connected MCP servers",
        vec![],
    )
}

/// The `describe_resource` definition.
pub(super) fn describe_definition() -> Tool {
    schema::tool(
        "describe_resource",
        "Get detailed information about a specific resource",
        vec![Arg::required(
            "uri",
            "string",
            "URI of the resource to describe",
        )],
    )
}

/// The `get_resource` definition.
pub(super) fn get_definition() -> Tool {
    schema::tool(
        "get_resource",
        "Retrieve the contents of a resource",
        vec![Arg::required(
            "uri",
            "string",
            "URI of the resource to retrieve",
        )],
    )
}

#[derive(Serialize)]
struct ListEntry<'a> {
    uri: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    #[serde(rename = "mimeType", skip_serializing_if = "str::is_empty")]
    mime_type: &'a str,
}

/// Keys in alphabetical order, as the original prints its map.
#[derive(Serialize)]
struct Detail<'a> {
    description: &'a str,
    #[serde(rename = "mimeType")]
    mime_type: &'a str,
    name: &'a str,
    uri: &'a str,
}

/// `[{"uri","name","description","mimeType"}]`; the description falls back to the name.
pub(super) fn list(catalog: &AggregatedCatalog) -> CallToolResult {
    if catalog.resources().is_empty() {
        return reply::text("No resources available");
    }
    let entries: Vec<ListEntry<'_>> = catalog
        .resources()
        .iter()
        .map(|r| {
            let resource = r.resource();
            let description = resource
                .description
                .as_deref()
                .filter(|d| !d.is_empty())
                .unwrap_or(&resource.name);
            ListEntry {
                uri: &resource.uri,
                name: &resource.name,
                description,
                mime_type: resource.mime_type.as_deref().unwrap_or_default(),
            }
        })
        .collect();
    reply::json(&entries)
}

/// `{"description","mimeType","name","uri"}` of one resource.
pub(super) fn describe(catalog: &AggregatedCatalog, args: &JsonObject) -> CallToolResult {
    let Some(uri) = uri_arg(args) else {
        return reply::error("uri argument is required");
    };
    let Some(resource) = catalog.resource(uri) else {
        return reply::error(format!("Resource not found: {uri}"));
    };
    let resource = resource.resource();
    reply::json(&Detail {
        description: resource.description.as_deref().unwrap_or_default(),
        mime_type: resource.mime_type.as_deref().unwrap_or_default(),
        name: &resource.name,
        uri: &resource.uri,
    })
}

/// The resource's text contents joined by newlines; binary contents render as
/// `[Binary data: <n> bytes]`. An unknown URI or a failed read is an error result naming
/// the URI.
pub(super) async fn get(catalog: Arc<AggregatedCatalog>, args: &JsonObject) -> CallToolResult {
    let Some(uri) = uri_arg(args) else {
        return reply::error("uri argument is required");
    };
    let Some(read) = catalog.resource(uri).map(|r| r.read()) else {
        return reply::error(format!("Resource not found: {uri}"));
    };
    let contents = match read.await {
        Ok(result) => result.contents,
        Err(e) => return reply::error(format!("Failed to read resource {uri}: {e}")),
    };
    let texts: Vec<String> = contents
        .iter()
        .filter_map(|c| match c {
            ResourceContents::TextResourceContents { text, .. } => Some(text.clone()),
            ResourceContents::BlobResourceContents { blob, .. } => {
                Some(format!("[Binary data: {} bytes]", blob.len()))
            }
            _ => None,
        })
        .collect();
    reply::text(texts.join("\n"))
}

fn uri_arg(args: &JsonObject) -> Option<&str> {
    args.get("uri")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
}
