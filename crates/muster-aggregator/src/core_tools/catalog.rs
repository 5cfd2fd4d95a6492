//! Definitions (names, descriptions, input schemas) of the core tools.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

fn schema(properties: Value, required: &[&str]) -> Arc<JsonObject> {
    let value = json!({ "type": "object", "properties": properties, "required": required });
    match value {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

fn tool(
    name: &'static str,
    description: &'static str,
    properties: Value,
    required: &[&str],
) -> Tool {
    Tool::new(name, description, schema(properties, required))
}

/// The inlined JSON Schema of a spec type, so clients see every nested field.
fn inline_schema<T: schemars::JsonSchema>() -> Value {
    let settings =
        schemars::generate::SchemaSettings::draft07().with(|s| s.inline_subschemas = true);
    let mut schema = serde_json::to_value(settings.into_generator().into_root_schema_for::<T>())
        .unwrap_or_else(|_| json!({"type": "object"}));
    if let Value::Object(m) = &mut schema {
        m.remove("$schema");
        m.remove("title");
    }
    schema
}

fn with_description(mut schema: Value, description: &str) -> Value {
    if let Value::Object(m) = &mut schema {
        m.insert("description".into(), json!(description));
    }
    schema
}

fn mcpserver_properties() -> Value {
    use muster_core::resource::mcp_server::{Family, HeaderFrom, McpServerAuth, ProgressSpec};
    let mut properties = json!({
        "name": {"type": "string", "description": "Name of the MCP server"},
        "type": {"type": "string", "description": "Server type: stdio, streamable-http or sse", "enum": ["stdio", "streamable-http", "sse"]},
        "displayName": {"type": "string", "description": "Human-friendly name shown by UIs"},
        "toolPrefix": {"type": "string", "description": "Prefix of the server's tools"},
        "family": {"type": "object", "description": "Family grouping", "properties": {"name": {"type": "string"}, "instanceArg": {"type": "string"}}, "required": ["name", "instanceArg"]},
        "description": {"type": "string", "description": "What the server provides"},
        "autoStart": {"type": "boolean", "description": "Start the server when muster starts"},
        "command": {"type": "string", "description": "Executable of a stdio server"},
        "args": {"type": "array", "items": {"type": "string"}, "description": "Arguments of a stdio server"},
        "url": {"type": "string", "description": "Endpoint of a remote server"},
        "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Environment of a stdio server"},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "HTTP headers of a remote server (no credentials)"},
        "headersFrom": {"type": "array", "items": {"type": "object"}, "description": "Headers read from Secrets"},
        "timeout": {"type": "integer", "description": "Budget of every operation in seconds (1-300)"},
        "progress": {"type": "object", "properties": {"maxDuration": {"type": "integer"}}, "description": "Progress budget of tool calls"},
        "auth": {"type": "object", "description": "Authentication: type (oauth|none), forwardToken, forwardIdentity, providerApps, requiredAudiences, tokenExchange, authorizationServer"},
        "suspended": {"type": "boolean", "description": "Keep the server stopped"},
        "restartRequestedAt": {"type": "string", "description": "RFC 3339 time requesting a one-shot restart"}
    });
    if let Value::Object(m) = &mut properties {
        m.insert("auth".into(), with_description(inline_schema::<McpServerAuth>(), "Authentication of a remote server: type (oauth|none), forwardToken, forwardIdentity, providerApps, requiredAudiences, tokenExchange, authorizationServer"));
        m.insert(
            "family".into(),
            with_description(
                inline_schema::<Family>(),
                "Family grouping: name and instanceArg, both required",
            ),
        );
        m.insert(
            "progress".into(),
            with_description(
                inline_schema::<ProgressSpec>(),
                "Progress budget of tool calls",
            ),
        );
        m.insert(
            "headersFrom".into(),
            json!({"type": "array", "items": inline_schema::<HeaderFrom>(), "description": "Headers whose values are read from Secrets (Kubernetes mode)"}),
        );
    }
    properties
}

fn name_only(description: &'static str) -> Value {
    json!({ "name": {"type": "string", "description": description} })
}

/// Every core tool except the workflow ones, in the order `list_tools` shows them.
pub(super) fn core_tools() -> Vec<Tool> {
    vec![
        tool(
            "core_service_list",
            "List all services with their state and health",
            json!({}),
            &[],
        ),
        tool(
            "core_service_start",
            "Start a service",
            name_only("Name of the service"),
            &["name"],
        ),
        tool(
            "core_service_stop",
            "Stop a service",
            name_only("Name of the service"),
            &["name"],
        ),
        tool(
            "core_service_restart",
            "Restart a service",
            name_only("Name of the service"),
            &["name"],
        ),
        tool(
            "core_service_status",
            "Status of one service",
            name_only("Name of the service"),
            &["name"],
        ),
        tool(
            "core_config_get",
            "Get the whole muster configuration",
            json!({}),
            &[],
        ),
        tool(
            "core_config_get_aggregator",
            "Get the aggregator configuration",
            json!({}),
            &[],
        ),
        tool(
            "core_config_update_aggregator",
            "Replace the aggregator configuration and save it",
            json!({"aggregator": {"type": "object", "description": "The new aggregator section"}}),
            &["aggregator"],
        ),
        tool("core_config_save", "Save the configuration", json!({}), &[]),
        tool(
            "core_config_reload",
            "Reload the configuration from disk",
            json!({}),
            &[],
        ),
        tool(
            "core_mcpserver_list",
            "List MCP server definitions with their state",
            json!({
                "showAll": {"type": "boolean", "description": "Include failed servers", "default": false},
                "verbose": {"type": "boolean", "description": "Include error details", "default": false}
            }),
            &[],
        ),
        tool(
            "core_mcpserver_get",
            "Get one MCP server definition",
            name_only("Name of the MCP server"),
            &["name"],
        ),
        tool(
            "core_mcpserver_create",
            "Create an MCP server definition",
            mcpserver_properties(),
            &["name", "type"],
        ),
        tool(
            "core_mcpserver_update",
            "Update an MCP server definition",
            mcpserver_properties(),
            &["name"],
        ),
        tool(
            "core_mcpserver_delete",
            "Delete an MCP server definition",
            name_only("Name of the MCP server"),
            &["name"],
        ),
        tool(
            "core_mcpserver_validate",
            "Validate an MCP server definition without storing it",
            mcpserver_properties(),
            &["name", "type"],
        ),
        tool(
            "core_events",
            "Query events about MCP servers and workflows",
            json!({
                "resourceType": {"type": "string", "description": "MCPServer or Workflow", "enum": ["MCPServer", "Workflow"]},
                "resourceName": {"type": "string", "description": "Name of the resource"},
                "namespace": {"type": "string", "description": "Namespace"},
                "eventType": {"type": "string", "description": "Normal or Warning", "enum": ["Normal", "Warning"]},
                "since": {"type": "string", "description": "Start time: a duration like 1h, RFC 3339, 2006-01-02 or 2006-01-02 15:04:05"},
                "until": {"type": "string", "description": "End time, same formats"},
                "limit": {"type": "number", "description": "Most events returned", "default": 50},
                "follow": {"type": "boolean", "description": "Also stream new events to this session"}
            }),
            &[],
        ),
    ]
}
