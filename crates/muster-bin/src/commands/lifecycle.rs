//! `muster start`, `muster stop` and `muster check`: services and their health.

use std::process::ExitCode;

use anyhow::bail;
use serde_json::{Value, json};

use super::{remote, run};
use crate::cli::{CheckArgs, CheckKind, ClientArgs, StartArgs, StopArgs};
use crate::output::{self, Table, cell};

/// Runs `muster start`.
pub(crate) fn start(args: &StartArgs) -> anyhow::Result<ExitCode> {
    match target(&args.target, true)? {
        Target::Service(name) => {
            remote::block_on(service(&args.client, "core_service_start", name))
        }
        Target::Workflow(name) => {
            let arguments = remote::tool_arguments(&args.args, None)?;
            remote::block_on(run::workflow(&args.client, name, arguments))
        }
    }
}

/// Runs `muster stop`.
pub(crate) fn stop(args: &StopArgs) -> anyhow::Result<ExitCode> {
    match target(&args.target, false)? {
        Target::Service(name) => remote::block_on(service(&args.client, "core_service_stop", name)),
        Target::Workflow(_) => bail!("workflows run to completion; there is nothing to stop"),
    }
}

/// Runs `muster check`.
pub(crate) fn check(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    remote::block_on(check_one(args))
}

enum Target<'a> {
    Service(&'a str),
    Workflow(&'a str),
}

/// `NAME`, `service NAME`, `mcpserver NAME` or (for start) `workflow NAME`.
fn target(words: &[String], workflows: bool) -> anyhow::Result<Target<'_>> {
    match words {
        [name] => Ok(Target::Service(name)),
        [kind, name] => match kind.as_str() {
            "service" | "services" | "mcpserver" | "mcpservers" => Ok(Target::Service(name)),
            "workflow" | "workflows" if workflows => Ok(Target::Workflow(name)),
            other => {
                let kinds = if workflows {
                    "service, mcpserver or workflow"
                } else {
                    "service or mcpserver"
                };
                bail!("cannot act on {other:?}: the kind must be {kinds}")
            }
        },
        _ => bail!("expected NAME or KIND NAME"),
    }
}

async fn service(args: &ClientArgs, tool: &str, name: &str) -> anyhow::Result<ExitCode> {
    let mut client = remote::connect(&args.target).await?;
    let result = client.call_tool(tool, json!({"name": name}), |_| {}).await;
    client.close().await;
    let result = result?;
    if result.is_error {
        return Ok(remote::failed(&result.text()));
    }
    if !args.quiet {
        output::print(&format!("{}\n", result.text().trim_end()));
    }
    Ok(ExitCode::SUCCESS)
}

async fn check_one(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let (tool, arguments) = match args.kind {
        CheckKind::Mcpserver => ("core_service_status", json!({"name": args.name})),
        CheckKind::Workflow => ("core_workflow_available", json!({"name": args.name})),
    };
    let mut client = remote::connect(&args.client.target).await?;
    let result = client.call_tool(tool, arguments, |_| {}).await;
    client.close().await;
    let result = result?;
    if result.is_error {
        return Ok(remote::failed(&result.text()));
    }
    let value = result.json(tool)?;
    let healthy = match args.kind {
        CheckKind::Mcpserver => {
            let state = cell(value.get("state")).to_lowercase();
            let health = cell(value.get("health")).to_lowercase();
            matches!(state.as_str(), "running" | "connected") && health != "unhealthy"
        }
        CheckKind::Workflow => value.get("available").and_then(Value::as_bool) == Some(true),
    };
    let code = if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    if output::print_structured(&value, args.client.output)? || args.client.quiet {
        return Ok(code);
    }
    let mut table = match args.kind {
        CheckKind::Mcpserver => Table::new(&["NAME", "STATE", "HEALTH", "ERROR"]),
        CheckKind::Workflow => Table::new(&["NAME", "AVAILABLE"]),
    };
    match args.kind {
        CheckKind::Mcpserver => table.row(vec![
            cell(value.get("name")),
            cell(value.get("state")),
            cell(value.get("health")),
            cell(value.get("error")),
        ]),
        CheckKind::Workflow => {
            table.row(vec![cell(value.get("name")), cell(value.get("available"))])
        }
    }
    output::print(&table.render(!args.client.no_headers));
    Ok(code)
}
