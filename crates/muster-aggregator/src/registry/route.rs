//! Routing a call by exposed name (reference §2.6): family tools pick their member by the
//! instance argument, every other name goes straight to its provider under its upstream
//! name; anything else is an unknown tool.

use std::sync::Arc;

use muster_core::tool::{ToolArguments, ToolCall, ToolError, ToolName};
use rmcp::model::CallToolResult;
use serde_json::Value;
use tower::ServiceExt;
use tracing::Instrument as _;

use super::catalog::{AggregatedCatalog, FamilyTarget, Route, Target};
use muster_gotmpl::strconv::quote as go_quote;

use crate::observe;

/// Calls the tool `call.name` names in `catalog`.
pub(crate) async fn call(
    catalog: Arc<AggregatedCatalog>,
    call: ToolCall,
) -> Result<CallToolResult, ToolError> {
    let (target, mut call) = resolve(&catalog, call)?;
    let server = target.provider.name();
    let span = muster_core::call_span!(
        target: observe::SPAN_TARGET,
        "tool_call",
        otel.name = %format_args!("tools/call {}", call.name),
        otel.kind = "client",
        mcp.method.name = "tools/call",
        gen_ai.tool.name = %call.name,
        muster.server = server,
    );
    observe::inject_into_meta(&span, &mut call.context.request_meta);
    let log = observe::call_log_enabled().then(|| call.name.clone());
    if target.meter.is_none() && log.is_none() && span.is_disabled() {
        return target.provider.service().oneshot(call).await;
    }
    let started = tokio::time::Instant::now();
    let result = target
        .provider
        .service()
        .oneshot(call)
        .instrument(span)
        .await;
    let elapsed = started.elapsed();
    if let Some(meter) = &target.meter {
        meter.record(&result, elapsed);
    }
    if let Some(tool) = log {
        observe::log_call(tool.as_str(), server, &result, elapsed);
    }
    result
}

/// The provider of the call and the call as that provider must see it.
fn resolve(
    catalog: &AggregatedCatalog,
    mut call: ToolCall,
) -> Result<(Target, ToolCall), ToolError> {
    let name = call.name.clone();
    let name = name.as_str();
    let Some(tool) = catalog.tool(name) else {
        if let Some(kind) = catalog.kind_of(name) {
            return Err(ToolError::failed(format!(
                "name {name} is a {kind}, not a tool"
            )));
        }
        if let Some(server) = catalog.retired_server(name) {
            return Err(ToolError::failed(format!("server not found: {server}")));
        }
        return Err(ToolError::UnknownTool {
            name: name.to_owned(),
        });
    };
    let target = match &tool.route {
        Route::Single(target) => target.clone(),
        Route::Family {
            instance_arg,
            members,
        } => family_member(name, instance_arg, members, &mut call)?
            .target
            .clone(),
    };
    call.name = ToolName::from(Arc::clone(&target.upstream));
    Ok((target, call))
}

/// The member the instance argument selects; the argument is removed from the call.
fn family_member<'a>(
    tool: &str,
    instance_arg: &str,
    members: &'a [FamilyTarget],
    call: &mut ToolCall,
) -> Result<&'a FamilyTarget, ToolError> {
    let servers = members
        .iter()
        .map(|m| m.server.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let arguments = call
        .arguments
        .as_mut()
        .map(ToolArguments::object_mut)
        .transpose()?;
    let instance = match arguments.and_then(|a| a.remove(instance_arg)) {
        Some(Value::String(s)) => s,
        _ => {
            return Err(ToolError::failed(format!(
                "tool {tool} is provided by a family on servers {servers}; the \"{instance_arg}\" parameter is required"
            )));
        }
    };
    members
        .iter()
        .find(|m| m.server == instance)
        .ok_or_else(|| {
            ToolError::failed(format!(
                "tool {tool} is not available on server {} (available: {servers})",
                go_quote(&instance)
            ))
        })
}
