//! `muster get <kind> NAME`: one thing, in full.

use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::{Value, json};

use super::remote;
use crate::cli::{GetArgs, Kind};
use crate::output;

/// Runs `muster get`.
pub(crate) fn run(args: &GetArgs) -> anyhow::Result<ExitCode> {
    remote::block_on(get(args))
}

async fn get(args: &GetArgs) -> anyhow::Result<ExitCode> {
    let name = args.name.as_str();
    let (tool, arguments, meta) = match args.kind {
        Kind::Mcpserver => ("core_mcpserver_get", json!({"name": name}), false),
        Kind::Service => ("core_service_status", json!({"name": name}), false),
        Kind::Workflow => ("core_workflow_get", json!({"name": name}), false),
        Kind::Execution => (
            "core_workflow_execution_get",
            json!({"execution_id": name}),
            false,
        ),
        Kind::Tool => ("describe_tool", json!({"name": name}), true),
        Kind::Resource => ("describe_resource", json!({"uri": name}), true),
        Kind::Prompt => ("describe_prompt", json!({"name": name}), true),
    };
    let mut client = remote::connect(&args.client.target).await?;
    let result = if meta {
        client.call_meta(tool, arguments).await
    } else {
        client.call_tool(tool, arguments, |_| {}).await
    };
    client.close().await;
    let result = result?;
    if result.is_error {
        return Ok(remote::failed(&result.text()));
    }
    let value = result.value();
    if output::print_structured(&value, args.client.output)? {
        return Ok(ExitCode::SUCCESS);
    }
    // Tables show the object as YAML; a workflow brings its own.
    let text = match value.get("yaml").and_then(Value::as_str) {
        Some(yaml) if args.kind == Kind::Workflow => yaml.to_owned(),
        _ => match &value {
            Value::String(text) => format!("{text}\n"),
            _ => serde_norway::to_string(&value).context("cannot encode YAML")?,
        },
    };
    output::print(&text);
    Ok(ExitCode::SUCCESS)
}
