//! `muster events`: the event log, newest first, or followed live: with `--follow` the server
//! streams each new event to the session as it is recorded (`core_events` follow mode).

use std::collections::HashSet;
use std::process::ExitCode;

use futures::StreamExt as _;
use serde_json::{Map, Value, json};

use super::remote;
use crate::cli::{EventsArgs, Output};
use crate::client::Messages;
use crate::output::{self, Table, cell};

/// Runs `muster events`.
pub(crate) fn run(args: &EventsArgs) -> anyhow::Result<ExitCode> {
    remote::block_on(events(args))
}

async fn events(args: &EventsArgs) -> anyhow::Result<ExitCode> {
    let mut arguments = Map::new();
    for (key, value) in [
        ("resourceType", &args.resource_type),
        ("resourceName", &args.resource_name),
        ("namespace", &args.namespace),
        ("eventType", &args.event_type),
        ("since", &args.since),
        ("until", &args.until),
    ] {
        if let Some(value) = value {
            arguments.insert(key.to_owned(), json!(value));
        }
    }
    arguments.insert("limit".to_owned(), json!(args.limit));
    if args.follow {
        arguments.insert("follow".to_owned(), json!(true));
    }
    let mut client = remote::connect(&args.client.target).await?;
    // Open the notification stream first so that no followed event is missed.
    let stream = if args.follow {
        Some(client.notifications().await?)
    } else {
        None
    };
    let result = client
        .call_tool("core_events", Value::Object(arguments), |_| {})
        .await;
    let result = match result {
        Ok(result) => result,
        Err(e) => {
            client.close().await;
            return Err(e);
        }
    };
    if result.is_error {
        client.close().await;
        return Ok(remote::failed(&result.text()));
    }
    let snapshot = match result.json("core_events")? {
        Value::Array(items) => items,
        _ => Vec::new(),
    };
    let format = args.client.output;
    let wide = format == Output::Wide;
    if !output::print_structured(&json!(snapshot), format)? {
        let mut table = header(wide);
        for event in &snapshot {
            table.row(row(event, wide));
        }
        if table.is_empty() && !args.follow {
            eprintln!("No events found.");
        } else {
            output::print(&table.render(!args.client.no_headers));
        }
    }
    let Some(stream) = stream else {
        client.close().await;
        return Ok(ExitCode::SUCCESS);
    };
    let mut follower = Follower::new(&snapshot, format);
    let result = follower.run(stream).await;
    client.close().await;
    result.map(|()| ExitCode::SUCCESS)
}

/// Prints the events the server pushes (`notifications/muster/event`), once each: the server
/// starts the stream just before it reads the snapshot, so an event may come in both.
struct Follower {
    seen: HashSet<String>,
    format: Output,
}

impl Follower {
    fn new(snapshot: &[Value], format: Output) -> Self {
        Self {
            seen: snapshot.iter().map(key).collect(),
            format,
        }
    }

    async fn run(&mut self, mut stream: Messages) -> anyhow::Result<()> {
        loop {
            tokio::select! {
                message = stream.next() => match message {
                    Some(message) => {
                        if message.get("method").and_then(Value::as_str)
                            == Some("notifications/muster/event")
                            && let Some(event) = message.get("params")
                            && self.seen.insert(key(event))
                        {
                            follow(event, self.format)?;
                        }
                    }
                    None => anyhow::bail!("the event stream ended: muster closed the session"),
                },
                _ = tokio::signal::ctrl_c() => return Ok(()),
            }
        }
    }
}

/// What tells two events apart.
fn key(event: &Value) -> String {
    [
        "timestamp",
        "resource_type",
        "resource_name",
        "reason",
        "message",
    ]
    .map(|k| cell(event.get(k)))
    .join("\u{1f}")
}

/// Prints one followed event.
fn follow(event: &Value, format: Output) -> anyhow::Result<()> {
    match format {
        Output::Json => output::print(&format!("{}\n", serde_json::to_string(event)?)),
        Output::Yaml => output::print(&format!("---\n{}", serde_norway::to_string(event)?)),
        Output::Table | Output::Wide => {
            let mut table = header(format == Output::Wide);
            table.row(row(event, format == Output::Wide));
            output::print(&table.render(false));
        }
    }
    Ok(())
}

fn header(wide: bool) -> Table {
    if wide {
        Table::new(&[
            "TIME",
            "TYPE",
            "KIND",
            "NAMESPACE",
            "NAME",
            "REASON",
            "COUNT",
            "MESSAGE",
        ])
    } else {
        Table::new(&["TIME", "TYPE", "KIND", "NAME", "REASON", "MESSAGE"])
    }
}

fn row(event: &Value, wide: bool) -> Vec<String> {
    let field = |key: &str| cell(event.get(key));
    if wide {
        vec![
            field("timestamp"),
            field("type"),
            field("resource_type"),
            field("namespace"),
            field("resource_name"),
            field("reason"),
            match field("count") {
                c if c.is_empty() => "1".to_owned(),
                c => c,
            },
            field("message"),
        ]
    } else {
        vec![
            field("timestamp"),
            field("type"),
            field("resource_type"),
            field("resource_name"),
            field("reason"),
            field("message"),
        ]
    }
}
