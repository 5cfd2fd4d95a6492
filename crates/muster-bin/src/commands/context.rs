//! `muster context`: named muster endpoints in `~/.config/muster/contexts.yaml`.

use std::process::ExitCode;

use anyhow::bail;
use muster_aggregator::client::ClientError;
use serde_json::json;

use crate::cli::ContextCommand;
use crate::client::Contexts;
use crate::client::endpoint::{NamedContext, valid_context_name};
use crate::output::{self, Table};

/// Runs a `muster context` subcommand.
pub(crate) fn run(command: &ContextCommand) -> anyhow::Result<ExitCode> {
    let mut contexts = Contexts::load()?;
    match command {
        ContextCommand::List {
            output: format,
            no_headers,
        } => {
            let current = contexts.current.as_deref();
            let listed: Vec<_> = contexts
                .contexts
                .iter()
                .map(|c| json!({"name": c.name, "endpoint": c.endpoint, "current": Some(c.name.as_str()) == current}))
                .collect();
            if output::print_structured(&json!(listed), *format)? {
                return Ok(ExitCode::SUCCESS);
            }
            let mut table = Table::new(&["CURRENT", "NAME", "ENDPOINT"]);
            for context in &contexts.contexts {
                let mark = if Some(context.name.as_str()) == current {
                    "*"
                } else {
                    " "
                };
                table.row(vec![
                    mark.to_owned(),
                    context.name.clone(),
                    context.endpoint.clone(),
                ]);
            }
            output::print_table(
                &table,
                !no_headers,
                "No contexts. Add one with `muster context add NAME --endpoint URL`.",
            );
        }
        ContextCommand::Current => match &contexts.current {
            Some(current) => output::print(&format!("{current}\n")),
            None => {
                eprintln!("No current context: commands use --endpoint or config.yaml.");
                return Ok(ExitCode::FAILURE);
            }
        },
        ContextCommand::Use { name } => {
            contexts.endpoint_of(name)?;
            contexts.current = Some(name.clone());
            contexts.save()?;
            output::print(&format!("Switched to context {name:?}.\n"));
        }
        ContextCommand::Add {
            name,
            endpoint,
            make_current,
        } => {
            if !valid_context_name(name) {
                bail!(
                    "invalid context name {name:?}: use lowercase letters, digits and dashes \
                     (at most 63, starting and ending with a letter or digit)"
                );
            }
            if contexts.get(name).is_some() {
                bail!("context {name:?} already exists; delete it first to change it");
            }
            if let Err(e) = muster_aggregator::client::check_endpoint(endpoint) {
                let reason = match e {
                    ClientError::Endpoint { reason, .. } => reason,
                    other => other.to_string(),
                };
                bail!("invalid endpoint {endpoint:?}: {reason}");
            }
            contexts.contexts.push(NamedContext {
                name: name.clone(),
                endpoint: endpoint.clone(),
                settings: None,
            });
            if *make_current || contexts.current.is_none() {
                contexts.current = Some(name.clone());
            }
            contexts.save()?;
            output::print(&format!("Context {name:?} added.\n"));
        }
        ContextCommand::Delete { name } => {
            contexts.endpoint_of(name)?;
            contexts.contexts.retain(|c| &c.name != name);
            if contexts.current.as_deref() == Some(name.as_str()) {
                contexts.current = None;
            }
            contexts.save()?;
            output::print(&format!("Context {name:?} deleted.\n"));
        }
    }
    Ok(ExitCode::SUCCESS)
}
