//! `muster events`: the event log, newest first, or followed live (oldest first, each new
//! event once, whether the server pushes it or it is found by polling).

use std::collections::HashSet;
use std::process::ExitCode;
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Map, Value, json};

use super::remote;
use crate::cli::{EventsArgs, Output};
use crate::client::{Client, Messages};
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
    let mut follower = Follower::new(&snapshot, arguments_for_polling(args), format);
    let result = follower.run(&mut client, stream).await;
    client.close().await;
    result.map(|()| ExitCode::SUCCESS)
}

/// How often `--follow` asks for new events, besides listening for pushed ones.
const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// Prints new events once each, whether the server pushes them
/// (`notifications/muster/event`) or they are found by polling.
struct Follower {
    seen: HashSet<String>,
    since: Option<String>,
    arguments: Map<String, Value>,
    format: Output,
}

impl Follower {
    fn new(snapshot: &[Value], arguments: Map<String, Value>, format: Output) -> Self {
        let mut follower = Self {
            seen: HashSet::new(),
            since: None,
            arguments,
            format,
        };
        for event in snapshot {
            follower.remember(event);
        }
        follower
    }

    async fn run(&mut self, client: &mut Client, mut stream: Messages) -> anyhow::Result<()> {
        // Events of the snapshot's last second that the limit left out are not new.
        self.poll(client, false).await?;
        let mut ticks = tokio::time::interval(POLL_INTERVAL);
        ticks.tick().await;
        let mut streaming = true;
        loop {
            tokio::select! {
                message = stream.next(), if streaming => match message {
                    Some(Ok(message)) => {
                        if message.get("method").and_then(Value::as_str)
                            == Some("notifications/muster/event")
                            && let Some(event) = message.get("params")
                        {
                            self.show(event)?;
                        }
                    }
                    Some(Err(e)) => {
                        tracing::debug!(error = %e, "the event stream ended");
                        streaming = false;
                    }
                    None => streaming = false,
                },
                _ = ticks.tick() => self.poll(client, true).await?,
                _ = tokio::signal::ctrl_c() => return Ok(()),
            }
        }
    }

    /// Asks for events since the newest seen; prints the new ones when `print`.
    async fn poll(&mut self, client: &mut Client, print: bool) -> anyhow::Result<()> {
        let mut arguments = self.arguments.clone();
        if let Some(since) = &self.since {
            arguments.insert("since".to_owned(), json!(since));
        }
        let result = client
            .call_tool("core_events", Value::Object(arguments), |_| {})
            .await?;
        if result.is_error {
            anyhow::bail!("{}", result.text());
        }
        if let Value::Array(mut events) = result.json("core_events")? {
            events.reverse();
            for event in &events {
                if print {
                    self.show(event)?;
                } else {
                    self.remember(event);
                }
            }
        }
        Ok(())
    }

    /// Records `event`; false when it was seen before.
    fn remember(&mut self, event: &Value) -> bool {
        let key = [
            "timestamp",
            "resource_type",
            "resource_name",
            "reason",
            "message",
        ]
        .map(|k| cell(event.get(k)))
        .join("\u{1f}");
        if let Some(timestamp) = event.get("timestamp").and_then(Value::as_str)
            && self.since.as_deref().is_none_or(|since| timestamp > since)
        {
            self.since = Some(timestamp.to_owned());
        }
        self.seen.insert(key)
    }

    fn show(&mut self, event: &Value) -> anyhow::Result<()> {
        if self.remember(event) {
            follow(event, self.format)?;
        }
        Ok(())
    }
}

/// The filters of `args` for polling: no limit, no follow.
fn arguments_for_polling(args: &EventsArgs) -> Map<String, Value> {
    let mut arguments = Map::new();
    for (key, value) in [
        ("resourceType", &args.resource_type),
        ("resourceName", &args.resource_name),
        ("namespace", &args.namespace),
        ("eventType", &args.event_type),
    ] {
        if let Some(value) = value {
            arguments.insert(key.to_owned(), json!(value));
        }
    }
    arguments
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
