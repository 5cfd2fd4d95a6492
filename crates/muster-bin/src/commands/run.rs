//! `muster run workflow NAME`: runs a workflow and shows its steps as they finish.
//!
//! The server relays the engine's progress (`step <id> completed|failed`) as MCP progress
//! notifications. On a terminal each finished step gets its own line and a live status line
//! below them tells how many steps are done; otherwise plain log lines are printed. When the
//! server sends no progress, the steps are read from the result. Progress goes to stderr, the
//! result to stdout.

mod progress;

use std::process::ExitCode;

use serde_json::Value;

use self::progress::Display;
use super::remote;
use crate::cli::{ClientArgs, RunArgs};
use crate::output;

/// Runs `muster run`.
pub(crate) fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let arguments = remote::tool_arguments(&args.args, args.json.as_deref())?;
    remote::block_on(workflow(&args.client, &args.name, arguments))
}

/// Runs workflow `name` with `arguments`, showing progress unless quiet.
pub(super) async fn workflow(
    args: &ClientArgs,
    name: &str,
    arguments: Value,
) -> anyhow::Result<ExitCode> {
    let tool = if name.starts_with("workflow_") {
        name.to_owned()
    } else {
        format!("workflow_{name}")
    };
    let mut client = remote::connect(&args.target).await?;
    let mut display = Display::new(name, args.quiet);
    let result = client
        .call_tool(&tool, arguments, |params| display.progress(params))
        .await;
    client.close().await;
    let result = match result {
        Ok(result) => result,
        Err(e) => {
            display.finish();
            return Err(e);
        }
    };
    let value = result.value();
    if !display.saw_steps() {
        display.steps_from_result(&value);
    }
    display.finish();
    if result.is_error {
        return Ok(remote::failed(&result.text()));
    }
    if !output::print_structured(&value, args.output)? {
        let text = match &value {
            Value::String(text) => text.clone(),
            other => serde_json::to_string_pretty(other)?,
        };
        output::print(&format!("{}\n", text.trim_end()));
    }
    Ok(ExitCode::SUCCESS)
}
