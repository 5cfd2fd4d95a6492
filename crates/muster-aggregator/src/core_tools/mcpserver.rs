//! The `core_mcpserver_*` tools: definitions of MCP servers.

mod info;

use muster_core::event::message::Details;
use muster_core::resource::mcp_server::{
    DISPLAY_NAME_ANNOTATION, McpServerDefinition, McpServerState, REGISTERED_BY_ANNOTATION,
    REGISTERED_BY_EMAIL_ANNOTATION,
};
use muster_core::resource::{McpServer, Object, ObjectKey};
use muster_core::store::StoreError;
use muster_core::tool::reply::{error, json, reject_unknown, string_arg, text};
use muster_core::tool::{CallContext, ToolError};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};

pub(crate) use info::{effective_state, info};

use super::CoreTools;

/// Arguments of create, update and validate.
const DEFINITION_ARGS: [&str; 18] = [
    "name",
    "type",
    "displayName",
    "toolPrefix",
    "family",
    "description",
    "autoStart",
    "command",
    "args",
    "url",
    "env",
    "headers",
    "headersFrom",
    "timeout",
    "progress",
    "auth",
    "suspended",
    "restartRequestedAt",
];

/// The spec fields of the arguments, as a definition.
fn definition(args: &JsonObject) -> Result<McpServerDefinition, String> {
    let mut fields = args.clone();
    for key in ["name", "displayName"] {
        fields.remove(key);
    }
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| format!("failed to parse request: {e}"))
}

impl CoreTools {
    /// The server `name` means: `<namespace>/<name>` is one of another namespace.
    fn key(&self, name: &str) -> ObjectKey {
        ObjectKey::qualified(&self.inner.namespace, name)
    }

    /// Refuses a write to an MCPServer outside muster's namespace: those belong to their
    /// namespace's owners (kubectl, GitOps), and muster only serves them.
    fn refuse_foreign(&self, name: &str, what: &str) -> Option<CallToolResult> {
        let key = self.key(name);
        (key.namespace != self.inner.namespace).then(|| {
            error(format!(
                "Failed to {what} MCP server: {name} is in namespace {}; muster writes \
                 MCPServers only in its own namespace {} (manage it with kubectl)",
                key.namespace, self.inner.namespace
            ))
        })
    }

    fn validated(
        &self,
        name: &str,
        def: &McpServerDefinition,
    ) -> Result<muster_core::resource::mcp_server::McpServerSpec, String> {
        let key = self.key(name);
        def.validate_named(&key.name, &key.namespace, &self.inner.validation)
            .map_err(|e| {
                e.violations()
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            })
    }

    pub(super) async fn mcpserver_list(
        &self,
        args: JsonObject,
        context: &muster_core::tool::CallContext,
    ) -> Result<CallToolResult, ToolError> {
        let show_all = args
            .get("showAll")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let verbose = args
            .get("verbose")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        // Every namespace the store serves: muster's own, and those it is set to watch.
        let servers = match self.inner.mcpservers.list(None).await {
            Ok(s) => s,
            Err(e) => return Ok(error(format!("Failed to list MCP servers: {e}"))),
        };
        let mut hidden = 0;
        let mut items = Vec::new();
        for obj in &servers {
            if !show_all && effective_state(obj) == McpServerState::Failed {
                hidden += 1;
                continue;
            }
            let mut item = info(obj, verbose);
            let qualified = obj.key().name_in(&self.inner.namespace);
            if qualified != obj.metadata.name
                && let Value::Object(m) = &mut item
            {
                m.insert("name".to_owned(), json!(qualified));
                m.insert("namespace".to_owned(), json!(obj.key().namespace));
            }
            if let Some(auth) = &self.inner.session_auth
                && let Some((status, tools)) = auth.session_status(&context.session, &qualified)
                && let Value::Object(m) = &mut item
            {
                m.insert("sessionStatus".to_owned(), json!(status));
                if tools > 0 {
                    m.insert("toolsCount".to_owned(), json!(tools));
                }
            }
            items.push(item);
        }
        let mut doc = json!({ "mcpServers": items, "total": items.len(), "mode": self.inner.mode });
        if hidden > 0 {
            doc["hiddenFailed"] = json!(hidden);
            doc["hint"] = json!(format!(
                "({hidden} failed servers hidden, use --all to show, --verbose for details)"
            ));
        }
        Ok(json(&doc))
    }

    pub(super) async fn mcpserver_get(
        &self,
        args: JsonObject,
    ) -> Result<CallToolResult, ToolError> {
        let Some(name) = string_arg(&args, "name") else {
            return Ok(error("name argument is required"));
        };
        match self.inner.mcpservers.get(&self.key(&name)).await {
            Ok(Some(obj)) => Ok(json(&info(&obj, true))),
            Ok(None) => Ok(error(format!(
                "Failed to get MCP server: MCP server {name} not found"
            ))),
            Err(e) => Ok(error(format!("Failed to get MCP server: {e}"))),
        }
    }

    pub(super) fn mcpserver_validate(&self, args: JsonObject) -> Result<CallToolResult, ToolError> {
        if let Err(e) = reject_unknown(&args, &DEFINITION_ARGS) {
            return Ok(e);
        }
        let Some(name) = string_arg(&args, "name") else {
            return Ok(error("Validation failed: name is required"));
        };
        Ok(
            match definition(&args).and_then(|def| self.validated(&name, &def)) {
                Ok(_) => text(format!("Validation successful for mcpserver {name}")),
                Err(e) => error(format!("Validation failed: {e}")),
            },
        )
    }

    pub(super) async fn mcpserver_create(
        &self,
        args: JsonObject,
        ctx: &CallContext,
    ) -> Result<CallToolResult, ToolError> {
        if let Err(e) = reject_unknown(&args, &DEFINITION_ARGS) {
            return Ok(e);
        }
        let Some(name) = string_arg(&args, "name") else {
            return Ok(error("Invalid MCP server definition: name is required"));
        };
        if let Some(refused) = self.refuse_foreign(&name, "create") {
            return Ok(refused);
        }
        let spec = match definition(&args).and_then(|def| self.validated(&name, &def)) {
            Ok(spec) => spec,
            Err(e) => return Ok(error(format!("Invalid MCP server definition: {e}"))),
        };
        let key = self.key(&name);
        let mut obj = Object::<McpServer>::new(&key.name, spec).in_namespace(&key.namespace);
        let annotations = &mut obj.metadata.annotations;
        if let Some(display) = string_arg(&args, "displayName") {
            annotations.insert(DISPLAY_NAME_ANNOTATION.to_owned(), display);
        }
        match &ctx.caller {
            Some(caller) => {
                annotations.insert(REGISTERED_BY_ANNOTATION.to_owned(), caller.subject.clone());
                if let Some(email) = &caller.email {
                    annotations.insert(REGISTERED_BY_EMAIL_ANNOTATION.to_owned(), email.clone());
                }
            }
            None => {
                annotations.insert(REGISTERED_BY_ANNOTATION.to_owned(), ctx.session.to_string());
            }
        }
        match self.inner.mcpservers.create(obj).await {
            Ok(_) => {
                self.event("MCPServer", &name, "MCPServerCreated", &Details::default());
                Ok(text(format!("MCP server '{name}' created successfully")))
            }
            Err(StoreError::AlreadyExists { .. }) => {
                Ok(error(format!("MCP server '{name}' already exists")))
            }
            Err(e) => {
                self.event(
                    "MCPServer",
                    &name,
                    "MCPServerFailed",
                    &Details::error(e.to_string()),
                );
                Ok(error(format!("Failed to create MCP server: {e}")))
            }
        }
    }

    pub(super) async fn mcpserver_update(
        &self,
        args: JsonObject,
    ) -> Result<CallToolResult, ToolError> {
        if let Err(e) = reject_unknown(&args, &DEFINITION_ARGS) {
            return Ok(e);
        }
        let Some(name) = string_arg(&args, "name") else {
            return Ok(error("Invalid MCP server definition: name is required"));
        };
        if let Some(refused) = self.refuse_foreign(&name, "update") {
            return Ok(refused);
        }
        let mut existing = match self.inner.mcpservers.get(&self.key(&name)).await {
            Ok(Some(obj)) => obj,
            Ok(None) => {
                return Ok(error(format!(
                    "Failed to update MCP server: MCP server {name} not found"
                )));
            }
            Err(e) => return Ok(error(format!("Failed to update MCP server: {e}"))),
        };
        let update = match definition(&args) {
            Ok(d) => d,
            Err(e) => return Ok(error(format!("Invalid MCP server definition: {e}"))),
        };
        let merged = merge(McpServerDefinition::from(existing.spec.clone()), update);
        let spec = match self.validated(&name, &merged) {
            Ok(spec) => spec,
            Err(e) => return Ok(error(format!("Invalid MCP server definition: {e}"))),
        };
        existing.spec = spec;
        existing.metadata.resource_version = None;
        if let Some(display) = string_arg(&args, "displayName") {
            existing
                .metadata
                .annotations
                .insert(DISPLAY_NAME_ANNOTATION.to_owned(), display);
        }
        match self.inner.mcpservers.apply(existing).await {
            Ok(_) => {
                self.event("MCPServer", &name, "MCPServerUpdated", &Details::default());
                Ok(text(format!("MCP server '{name}' updated successfully")))
            }
            Err(e) => Ok(error(format!("Failed to update MCP server: {e}"))),
        }
    }

    pub(super) async fn mcpserver_delete(
        &self,
        args: JsonObject,
    ) -> Result<CallToolResult, ToolError> {
        let Some(name) = string_arg(&args, "name") else {
            return Ok(error("name argument is required"));
        };
        if let Some(refused) = self.refuse_foreign(&name, "delete") {
            return Ok(refused);
        }
        match self.inner.mcpservers.delete(&self.key(&name)).await {
            Ok(_) => {
                self.event("MCPServer", &name, "MCPServerDeleted", &Details::default());
                Ok(text(format!("MCP server '{name}' deleted successfully")))
            }
            Err(StoreError::NotFound { .. }) => Ok(error(format!(
                "Failed to delete MCP server: MCP server {name} not found"
            ))),
            Err(e) => Ok(error(format!("Failed to delete MCP server: {e}"))),
        }
    }
}

/// The original's update rules: strings replace when non-empty, lists and maps when given,
/// `timeout` when positive, `auth` wholesale; everything else when given.
fn merge(mut base: McpServerDefinition, update: McpServerDefinition) -> McpServerDefinition {
    fn non_empty(s: Option<String>) -> Option<String> {
        s.filter(|s| !s.is_empty())
    }
    if let Some(t) = non_empty(update.type_) {
        base.type_ = Some(t);
    }
    if let Some(v) = non_empty(update.tool_prefix) {
        base.tool_prefix = Some(v);
    }
    if let Some(v) = non_empty(update.description) {
        base.description = Some(v);
    }
    if let Some(v) = non_empty(update.command) {
        base.command = Some(v);
    }
    if let Some(v) = non_empty(update.url) {
        base.url = Some(v);
    }
    base.args = update.args.or(base.args);
    base.env = update.env.or(base.env);
    base.headers = update.headers.or(base.headers);
    base.headers_from = update.headers_from.or(base.headers_from);
    base.family = update.family.or(base.family);
    if update.timeout.is_some_and(|t| t > 0) {
        base.timeout = update.timeout;
    }
    base.progress = update.progress.or(base.progress);
    base.auth = update.auth.or(base.auth);
    base.auto_start = update.auto_start.or(base.auto_start);
    base.suspended = update.suspended.or(base.suspended);
    base.restart_requested_at = update.restart_requested_at.or(base.restart_requested_at);
    base
}
