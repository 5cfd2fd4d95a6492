//! `muster call TOOL`: any tool through `call_tool`.

use std::process::ExitCode;

use serde_json::{Value, json};

use super::remote;
use crate::cli::{CallArgs, Output};
use crate::output;

/// Runs `muster call`.
pub(crate) fn run(args: &CallArgs) -> anyhow::Result<ExitCode> {
    remote::block_on(call(args))
}

async fn call(args: &CallArgs) -> anyhow::Result<ExitCode> {
    let arguments = remote::tool_arguments(&args.args, args.json.as_deref())?;
    let mut client = remote::connect(&args.client.target).await?;
    let quiet = args.client.quiet;
    let result = client
        .call_tool(&args.tool, arguments, |progress| {
            if !quiet && let Some(message) = progress.get("message").and_then(Value::as_str) {
                eprintln!("{message}");
            }
        })
        .await;
    client.close().await;
    let result = result?;
    match args.client.output {
        Output::Json | Output::Yaml => {
            let mut envelope = json!({"isError": result.is_error, "content": result.content});
            if let Some(structured) = &result.structured {
                envelope["structuredContent"] = structured.clone();
            }
            output::print_structured(&envelope, args.client.output)?;
        }
        Output::Table | Output::Wide => {
            if result.is_error {
                return Ok(remote::failed(&result.text()));
            }
            let text = match result.value() {
                Value::String(text) => text,
                value => serde_json::to_string_pretty(&value)?,
            };
            output::print(&format!("{}\n", text.trim_end()));
        }
    }
    Ok(if result.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
