//! `muster list <kind>`: one table per kind of thing muster knows.

use std::process::ExitCode;

use serde_json::{Value, json};

use super::remote;
use crate::cli::{Kind, ListArgs, Output};
use crate::client::Client;
use crate::output::{self, Table, cell, truncate};

/// Runs `muster list`.
pub(crate) fn run(args: &ListArgs) -> anyhow::Result<ExitCode> {
    remote::block_on(list(args))
}

async fn list(args: &ListArgs) -> anyhow::Result<ExitCode> {
    let mut client = remote::connect(&args.client.target).await?;
    let result = fetch(&mut client, args).await;
    client.close().await;
    let Some(mut value) = result? else {
        return Ok(ExitCode::FAILURE);
    };
    let pointer = items_pointer(args.kind);
    if let Some(glob) = &args.filter
        && let Some(Value::Array(items)) = value.pointer_mut(pointer)
    {
        items.retain(|item| glob_match(glob, &cell(item.get(name_key(args.kind)))));
    }
    let format = args.client.output;
    if output::print_structured(&value, format)? {
        return Ok(ExitCode::SUCCESS);
    }
    let items = value
        .pointer(pointer)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let table = table(args.kind, &items, format == Output::Wide);
    let empty = format!("No {} found.", plural(args.kind));
    output::print_table(&table, !args.client.no_headers, &empty);
    if !args.client.quiet
        && let Some(hint) = value.get("hint").and_then(Value::as_str)
    {
        eprintln!("{hint}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks the server; `None` after printing the tool's error.
async fn fetch(client: &mut Client, args: &ListArgs) -> anyhow::Result<Option<Value>> {
    let (tool, arguments) = match args.kind {
        Kind::Mcpserver => (
            "core_mcpserver_list",
            json!({"showAll": args.all, "verbose": args.verbose}),
        ),
        Kind::Service => ("core_service_list", json!({})),
        Kind::Workflow => ("core_workflow_list", json!({})),
        Kind::Execution => {
            let mut arguments = json!({"limit": 1000});
            if let Some(workflow) = &args.workflow {
                arguments["workflow_name"] = json!(workflow);
            }
            ("core_workflow_execution_list", arguments)
        }
        Kind::Tool => return meta(client, "list_tools").await,
        Kind::Resource => return meta(client, "list_resources").await,
        Kind::Prompt => return meta(client, "list_prompts").await,
    };
    let result = client.call_tool(tool, arguments, |_| {}).await?;
    if result.is_error {
        remote::failed(&result.text());
        return Ok(None);
    }
    result.json(tool).map(Some)
}

/// A listing meta-tool; its plain-text "No … available" answer is an empty list.
async fn meta(client: &mut Client, tool: &str) -> anyhow::Result<Option<Value>> {
    let result = client.call_meta(tool, json!({})).await?;
    if result.is_error {
        remote::failed(&result.text());
        return Ok(None);
    }
    match result.value() {
        Value::String(_) => Ok(Some(json!([]))),
        value => Ok(Some(value)),
    }
}

fn items_pointer(kind: Kind) -> &'static str {
    match kind {
        Kind::Mcpserver => "/mcpServers",
        Kind::Service => "/services",
        Kind::Workflow => "/workflows",
        Kind::Execution => "/executions",
        Kind::Tool => "/tools",
        Kind::Resource | Kind::Prompt => "",
    }
}

fn name_key(kind: Kind) -> &'static str {
    match kind {
        Kind::Execution => "execution_id",
        Kind::Resource => "uri",
        _ => "name",
    }
}

fn plural(kind: Kind) -> &'static str {
    match kind {
        Kind::Mcpserver => "MCP servers",
        Kind::Service => "services",
        Kind::Workflow => "workflows",
        Kind::Execution => "workflow executions",
        Kind::Tool => "tools",
        Kind::Resource => "resources",
        Kind::Prompt => "prompts",
    }
}

fn table(kind: Kind, items: &[Value], wide: bool) -> Table {
    let field = |item: &Value, key: &str| cell(item.get(key));
    let describe = |item: &Value| {
        let text = field(item, "description");
        if wide { text } else { truncate(&text, 60) }
    };
    match kind {
        Kind::Mcpserver => {
            let mut table = if wide {
                Table::new(&[
                    "NAME",
                    "STATE",
                    "SESSION",
                    "TYPE",
                    "AUTOSTART",
                    "TARGET",
                    "MESSAGE",
                ])
            } else {
                Table::new(&["NAME", "STATE", "SESSION", "TYPE"])
            };
            for item in items {
                let mut row = vec![
                    field(item, "name"),
                    field(item, "state"),
                    session_state(item),
                    field(item, "type"),
                ];
                if wide {
                    let target = match item.get("url") {
                        Some(url) => cell(Some(url)),
                        None => field(item, "command"),
                    };
                    let message = match field(item, "error") {
                        e if e.is_empty() => field(item, "statusMessage"),
                        e => e,
                    };
                    row.extend([field(item, "autoStart"), target, message]);
                }
                table.row(row);
            }
            table
        }
        Kind::Service => {
            let mut table = if wide {
                Table::new(&["NAME", "TYPE", "STATE", "HEALTH", "ERROR"])
            } else {
                Table::new(&["NAME", "TYPE", "STATE", "HEALTH"])
            };
            for item in items {
                let mut row = vec![
                    field(item, "name"),
                    field(item, "service_type"),
                    field(item, "state"),
                    field(item, "health"),
                ];
                if wide {
                    row.push(field(item, "error"));
                }
                table.row(row);
            }
            table
        }
        Kind::Workflow => {
            let mut table = Table::new(&["NAME", "AVAILABLE", "DESCRIPTION"]);
            for item in items {
                table.row(vec![
                    field(item, "name"),
                    field(item, "available"),
                    describe(item),
                ]);
            }
            table
        }
        Kind::Execution => {
            let mut table = if wide {
                Table::new(&[
                    "ID", "WORKFLOW", "STATUS", "STARTED", "DURATION", "STEPS", "ERROR",
                ])
            } else {
                Table::new(&["ID", "WORKFLOW", "STATUS", "STARTED", "DURATION", "STEPS"])
            };
            for item in items {
                let duration = item
                    .get("duration_ms")
                    .and_then(Value::as_u64)
                    .map(|ms| format!("{ms}ms"))
                    .unwrap_or_default();
                let mut row = vec![
                    field(item, "execution_id"),
                    field(item, "workflow_name"),
                    field(item, "status"),
                    field(item, "started_at"),
                    duration,
                    field(item, "step_count"),
                ];
                if wide {
                    row.push(field(item, "error"));
                }
                table.row(row);
            }
            table
        }
        Kind::Tool | Kind::Prompt => {
            let mut table = Table::new(&["NAME", "DESCRIPTION"]);
            for item in items {
                table.row(vec![field(item, "name"), describe(item)]);
            }
            table
        }
        Kind::Resource => {
            let mut table = if wide {
                Table::new(&["URI", "NAME", "MIME TYPE", "DESCRIPTION"])
            } else {
                Table::new(&["URI", "NAME"])
            };
            for item in items {
                let mut row = vec![field(item, "uri"), field(item, "name")];
                if wide {
                    row.extend([field(item, "mimeType"), describe(item)]);
                }
                table.row(row);
            }
            table
        }
    }
}

/// The SESSION column: the caller's own state with a server.
fn session_state(item: &Value) -> String {
    let text = match item.get("sessionStatus").and_then(Value::as_str) {
        Some("connected") => "Authenticated",
        Some("auth_required") => "Pending Auth",
        Some("reauth_required") => "Expired",
        Some("sso_pending") => "Pending SSO",
        _ => "-",
    };
    text.to_owned()
}

/// Whether `text` matches `glob` (`*` any run, `?` one character).
fn glob_match(glob: &str, text: &str) -> bool {
    let pattern: Vec<char> = glob.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                backtrack = Some((p, t));
                p += 1;
            }
            Some(c) if *c == '?' || *c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match backtrack {
                Some((bp, bt)) => {
                    p = bp + 1;
                    t = bt + 1;
                    backtrack = Some((bp, bt + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("x_*_echo", "x_everything_echo"));
        assert!(glob_match("*", ""));
        assert!(glob_match("core_?ervice*", "core_service_list"));
        assert!(!glob_match("x_*", "core_service_list"));
        assert!(!glob_match("echo", "echo2"));
    }
}
