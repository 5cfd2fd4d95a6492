//! `muster run workflow NAME`: runs a workflow and shows its steps as they finish.
//!
//! The server relays the engine's progress (`step <id> completed|failed`) as MCP progress
//! notifications. On a terminal each finished step gets its own line and a live status line
//! below them tells how many steps are done; otherwise plain log lines are printed. When the
//! server sends no progress, the steps are read from the result. Progress goes to stderr, the
//! result to stdout.

mod progress;

use std::process::ExitCode;

use serde_json::{Map, Value};

use self::progress::Display;
use super::remote;
use crate::cli::{ClientArgs, Output, RunArgs};
use crate::output::{self, Table, cell, truncate};

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
        match &value {
            Value::Object(document) => {
                print_tables(document, args.output == Output::Wide, !args.no_headers)
            }
            Value::String(text) => output::print(&format!("{}\n", text.trim_end())),
            other => output::print(&format!("{other}\n")),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Keys of a workflow's response document that the tables show in their own places.
const ENVELOPE: [&str; 6] = [
    "execution_id",
    "workflow",
    "status",
    "steps",
    "input",
    "template_vars",
];

/// The response document as tables: the execution, its steps, then any other values (those
/// of an output template, or the last step's merged result) as KEY / VALUE rows.
fn print_tables(document: &Map<String, Value>, wide: bool, headers: bool) {
    let field = |key: &str| cell(document.get(key));
    let mut text = String::new();
    if document.contains_key("status") || document.contains_key("workflow") {
        let mut run = Table::new(&["EXECUTION", "WORKFLOW", "STATUS"]);
        run.row(vec![
            field("execution_id"),
            field("workflow"),
            field("status"),
        ]);
        text.push_str(&run.render(headers));
    }
    if let Some(Value::Array(steps)) = document.get("steps")
        && !steps.is_empty()
    {
        let mut table = if wide {
            Table::new(&["STEP", "TOOL", "STATUS", "ERROR"])
        } else {
            Table::new(&["STEP", "TOOL", "STATUS"])
        };
        for step in steps {
            let field = |key: &str| cell(step.get(key));
            let mut row = vec![field("id"), field("tool"), field("status")];
            if wide {
                row.push(field("error"));
            }
            table.row(row);
        }
        text.push('\n');
        text.push_str(&table.render(headers));
    }
    let mut values = Table::new(&["KEY", "VALUE"]);
    for (key, value) in document {
        let shown_above = ENVELOPE.contains(&key.as_str()) && document.contains_key("workflow");
        if key == "execution_id" || shown_above {
            continue;
        }
        let value = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        values.row(vec![
            key.clone(),
            if wide { value } else { truncate(&value, 80) },
        ]);
    }
    if !values.is_empty() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&values.render(headers));
    }
    output::print(&text);
}
