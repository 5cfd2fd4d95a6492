//! `muster agent --repl`: an interactive shell over muster's MCP endpoint. One command a
//! line; the server's notifications are shown between commands as they arrive.

use std::io::IsTerminal as _;

use anyhow::bail;
use futures::StreamExt as _;
use muster_aggregator::client::Notifications;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::client::{Client, ToolResult};
use crate::output::{self, Table, cell};

/// The prompt shown on a terminal.
const PROMPT: &str = "muster> ";

/// What `help` prints.
const HELP: &str = "\
Commands:
  list tools|core-tools|resources|prompts   List what the servers behind muster offer
  filter tools PATTERN [DESCRIPTION]        Tools whose name matches a glob (and whose
                                            description contains DESCRIPTION)
  describe tool|resource|prompt NAME        Show one tool (with its input schema),
                                            resource (by URI) or prompt
  call TOOL [JSON]                          Call a tool with a JSON object of arguments
  get URI                                   Read a resource
  prompt NAME [JSON]                        Get a prompt, with a JSON object of arguments
  notifications on|off                      Show the server's notifications (on at start)
  help                                      This text
  exit | quit                               Leave (so does end of input)
";

/// One parsed command line.
#[derive(Debug, Clone, PartialEq)]
enum Command {
    Help,
    Exit,
    List(Listing),
    Filter {
        pattern: String,
        description: Option<String>,
    },
    Describe {
        kind: Kind,
        name: String,
    },
    Call {
        tool: String,
        arguments: Value,
    },
    Get {
        uri: String,
    },
    Prompt {
        name: String,
        arguments: Value,
    },
    Notifications(bool),
}

/// What `list` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    Tools,
    CoreTools,
    Resources,
    Prompts,
}

/// What `describe` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tool,
    Resource,
    Prompt,
}

impl Kind {
    /// The describe meta-tool and its argument.
    fn meta_tool(self) -> (&'static str, &'static str) {
        match self {
            Self::Tool => ("describe_tool", "name"),
            Self::Resource => ("describe_resource", "uri"),
            Self::Prompt => ("describe_prompt", "name"),
        }
    }
}

/// Parses one line; `Ok(None)` for a blank line.
fn parse(line: &str) -> anyhow::Result<Option<Command>> {
    let line = line.trim();
    let (word, rest) = split_word(line);
    let command = match word {
        "" => return Ok(None),
        "help" | "?" => Command::Help,
        "exit" | "quit" => Command::Exit,
        "list" => Command::List(match rest {
            "tools" | "tool" => Listing::Tools,
            "core-tools" | "core" => Listing::CoreTools,
            "resources" | "resource" => Listing::Resources,
            "prompts" | "prompt" => Listing::Prompts,
            _ => bail!("usage: list tools|core-tools|resources|prompts"),
        }),
        "filter" => {
            let (what, rest) = split_word(rest);
            let (pattern, description) = split_word(rest);
            if what != "tools" || pattern.is_empty() {
                bail!("usage: filter tools PATTERN [DESCRIPTION]");
            }
            Command::Filter {
                pattern: pattern.to_owned(),
                description: (!description.is_empty()).then(|| description.to_owned()),
            }
        }
        "describe" => {
            let (what, name) = split_word(rest);
            let kind = match what {
                "tool" => Kind::Tool,
                "resource" => Kind::Resource,
                "prompt" => Kind::Prompt,
                _ => bail!("usage: describe tool|resource|prompt NAME"),
            };
            if name.is_empty() {
                bail!("usage: describe {what} NAME");
            }
            Command::Describe {
                kind,
                name: name.to_owned(),
            }
        }
        "call" => {
            let (tool, json) = split_word(rest);
            if tool.is_empty() {
                bail!("usage: call TOOL [JSON]");
            }
            Command::Call {
                tool: tool.to_owned(),
                arguments: object(json)?,
            }
        }
        "get" => {
            if rest.is_empty() {
                bail!("usage: get URI");
            }
            Command::Get {
                uri: rest.to_owned(),
            }
        }
        "prompt" => {
            let (name, json) = split_word(rest);
            if name.is_empty() {
                bail!("usage: prompt NAME [JSON]");
            }
            Command::Prompt {
                name: name.to_owned(),
                arguments: object(json)?,
            }
        }
        "notifications" => Command::Notifications(match rest {
            "on" => true,
            "off" => false,
            _ => bail!("usage: notifications on|off"),
        }),
        other => bail!("unknown command {other:?}; `help` lists the commands"),
    };
    Ok(Some(command))
}

/// The first word of `text` and the rest, trimmed.
fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim();
    match text.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim()),
        None => (text, ""),
    }
}

/// A JSON object of arguments; empty text is no arguments.
fn object(text: &str) -> anyhow::Result<Value> {
    if text.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(Value::Object(map)),
        Ok(_) => bail!("the arguments must be a JSON object, such as {{\"message\": \"hi\"}}"),
        Err(e) => bail!("the arguments are not valid JSON: {e}"),
    }
}

/// Runs the shell on stdin and stdout until `exit` or the end of input.
pub(super) async fn run(mut client: Client) -> anyhow::Result<()> {
    let interactive = std::io::stdin().is_terminal();
    let notifications: Notifications = client.notifications().await?;
    let mut notifications = notifications.fuse();
    let mut show_notifications = true;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    print_banner(&client);
    loop {
        if interactive {
            output::print(PROMPT);
        }
        let line = loop {
            tokio::select! {
                line = lines.next_line() => break line?,
                Some(message) = notifications.next() => {
                    if show_notifications {
                        output::print(&notification(&message));
                    }
                }
            }
        };
        let Some(line) = line else {
            break;
        };
        let command = match parse(&line) {
            Ok(Some(command)) => command,
            Ok(None) => continue,
            Err(e) => {
                eprintln!("error: {e}");
                continue;
            }
        };
        match command {
            Command::Exit => break,
            Command::Help => output::print(HELP),
            Command::Notifications(on) => {
                show_notifications = on;
                output::print(&format!(
                    "Notifications {}.\n",
                    if on { "on" } else { "off" }
                ));
            }
            command => {
                if let Err(e) = execute(&mut client, command).await {
                    eprintln!("error: {e:#}");
                }
            }
        }
    }
    client.close().await;
    Ok(())
}

/// Says where the shell is connected.
fn print_banner(client: &Client) {
    let info = client.session().server_info();
    let name = info
        .pointer("/serverInfo/name")
        .and_then(Value::as_str)
        .unwrap_or("muster");
    let version = info
        .pointer("/serverInfo/version")
        .and_then(Value::as_str)
        .unwrap_or("?");
    output::print(&format!(
        "Connected to {name} {version} at {}. Type `help` for the commands.\n",
        client.session().endpoint()
    ));
}

/// One notification as a line.
fn notification(message: &Value) -> String {
    let method = message.get("method").and_then(Value::as_str).unwrap_or("?");
    match message.get("params") {
        Some(params) if !params.is_null() => format!("notification: {method} {params}\n"),
        _ => format!("notification: {method}\n"),
    }
}

/// Runs a command that talks to the server and prints what it answered.
async fn execute(client: &mut Client, command: Command) -> anyhow::Result<()> {
    match command {
        Command::List(listing) => list(client, listing).await,
        Command::Filter {
            pattern,
            description,
        } => {
            let mut arguments = json!({"pattern": pattern, "limit": 1000});
            if let Some(description) = description {
                arguments["description_filter"] = json!(description);
            }
            let result = meta(client, "filter_tools", arguments).await?;
            print_tools(result.get("tools"), "No tools match.");
            Ok(())
        }
        Command::Describe { kind, name } => {
            let (tool, argument) = kind.meta_tool();
            let result = meta(client, tool, json!({ argument: name })).await?;
            output::print(&format!("{}\n", serde_json::to_string_pretty(&result)?));
            Ok(())
        }
        Command::Call { tool, arguments } => {
            let result = client
                .call_tool(&tool, arguments, |progress| {
                    if let Some(message) = progress.get("message").and_then(Value::as_str) {
                        output::print(&format!("progress: {message}\n"));
                    }
                })
                .await?;
            print_result(&result)
        }
        Command::Get { uri } => {
            let result = client
                .call_meta("get_resource", json!({"uri": uri}))
                .await?;
            print_result(&result)
        }
        Command::Prompt { name, arguments } => {
            let result = meta(
                client,
                "get_prompt",
                json!({"name": name, "arguments": arguments}),
            )
            .await?;
            output::print(&format!("{}\n", serde_json::to_string_pretty(&result)?));
            Ok(())
        }
        Command::Help | Command::Exit | Command::Notifications(_) => Ok(()),
    }
}

/// Calls a meta-tool and returns its JSON payload; its failure is an error.
async fn meta(client: &mut Client, tool: &str, arguments: Value) -> anyhow::Result<Value> {
    let result = client.call_meta(tool, arguments).await?;
    if result.is_error {
        bail!("{}", result.text().trim());
    }
    Ok(result.value())
}

/// Prints a list meta-tool's answer.
async fn list(client: &mut Client, listing: Listing) -> anyhow::Result<()> {
    match listing {
        Listing::Tools => {
            let result = meta(client, "list_tools", json!({})).await?;
            print_tools(result.get("tools"), "No tools available.");
        }
        Listing::CoreTools => {
            let result = meta(client, "list_core_tools", json!({"include_schema": false})).await?;
            print_tools(result.get("tools"), "No core tools available.");
        }
        Listing::Resources => {
            let result = meta(client, "list_resources", json!({})).await?;
            let mut table = Table::new(&["URI", "NAME", "MIME TYPE", "DESCRIPTION"]);
            for resource in result.as_array().into_iter().flatten() {
                table.row(vec![
                    cell(resource.get("uri")),
                    cell(resource.get("name")),
                    cell(resource.get("mimeType")),
                    cell(resource.get("description")),
                ]);
            }
            print_rows(&table, result.as_str(), "No resources available.");
        }
        Listing::Prompts => {
            let result = meta(client, "list_prompts", json!({})).await?;
            let mut table = Table::new(&["NAME", "DESCRIPTION"]);
            for prompt in result.as_array().into_iter().flatten() {
                table.row(vec![
                    cell(prompt.get("name")),
                    cell(prompt.get("description")),
                ]);
            }
            print_rows(&table, result.as_str(), "No prompts available.");
        }
    }
    Ok(())
}

/// Prints tools as a name and description table.
fn print_tools(tools: Option<&Value>, empty: &str) {
    let mut table = Table::new(&["NAME", "DESCRIPTION"]);
    for tool in tools.and_then(Value::as_array).into_iter().flatten() {
        let description = tool.get("description").or_else(|| tool.get("summary"));
        let first_line = cell(description).lines().next().unwrap_or("").to_owned();
        table.row(vec![cell(tool.get("name")), first_line]);
    }
    print_rows(&table, None, empty);
}

/// Prints a table; with no rows, the server's own note, else `empty`.
fn print_rows(table: &Table, note: Option<&str>, empty: &str) {
    if table.is_empty() {
        output::print(&format!("{}\n", note.unwrap_or(empty).trim()));
    } else {
        output::print(&table.render(true));
    }
}

/// Prints a tool result: its text, or the error it reports.
fn print_result(result: &ToolResult) -> anyhow::Result<()> {
    if result.is_error {
        bail!("{}", result.text().trim());
    }
    let text = result.text();
    if text.is_empty() {
        if let Some(structured) = &result.structured {
            output::print(&format!("{}\n", serde_json::to_string_pretty(structured)?));
        }
        return Ok(());
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => {
            output::print(&format!("{}\n", serde_json::to_string_pretty(&value)?));
        }
        _ => output::print(&format!("{}\n", text.trim_end())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands() {
        let parsed = |line: &str| parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(parsed("  "), None);
        assert_eq!(parsed("list tools"), Some(Command::List(Listing::Tools)));
        assert_eq!(
            parsed("call x_everything_echo {\"message\": \"hi there\"}"),
            Some(Command::Call {
                tool: "x_everything_echo".to_owned(),
                arguments: json!({"message": "hi there"}),
            })
        );
        assert_eq!(
            parsed("describe resource demo://resource/static/document/a b.md"),
            Some(Command::Describe {
                kind: Kind::Resource,
                name: "demo://resource/static/document/a b.md".to_owned(),
            })
        );
        assert_eq!(
            parsed("filter tools x_* echo"),
            Some(Command::Filter {
                pattern: "x_*".to_owned(),
                description: Some("echo".to_owned()),
            })
        );
        assert_eq!(parsed("quit"), Some(Command::Exit));
        assert_eq!(
            parsed("notifications off"),
            Some(Command::Notifications(false))
        );
        for bad in [
            "list",
            "describe tool",
            "call",
            "call t [1]",
            "call t {",
            "frobnicate",
            "notifications maybe",
        ] {
            assert!(parse(bad).is_err(), "{bad} was accepted");
        }
    }
}
