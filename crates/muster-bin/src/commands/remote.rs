//! What the client commands share: the runtime, the connection and argument parsing.

use std::future::Future;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::{Map, Value};

use super::paths::expand_home;
use crate::cli::EndpointArgs;
use crate::client::{Client, resolve_endpoint};

/// Runs a client command on a single-threaded runtime.
pub(super) fn block_on<F>(command: F) -> anyhow::Result<ExitCode>
where
    F: Future<Output = anyhow::Result<ExitCode>>,
{
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(command)
}

/// The endpoint `target` names, by the documented precedence.
pub(super) fn endpoint(target: &EndpointArgs) -> anyhow::Result<String> {
    resolve_endpoint(
        target.endpoint.as_deref(),
        target.context.as_deref(),
        &expand_home(&target.config_path),
    )
}

/// Opens a session with the muster `target` names, with the bearer token of `muster auth
/// login` when there is one.
pub(super) async fn connect(target: &EndpointArgs) -> anyhow::Result<Client> {
    let endpoint = endpoint(target)?;
    let authorization = super::auth::store::authorization(&endpoint).await?;
    Client::connect(&endpoint, authorization).await
}

/// Tool arguments from `--json` and repeated `--arg KEY=VALUE` (which win). A value that is
/// a JSON number, boolean, null, array or object is passed as such, anything else as a
/// string.
pub(super) fn tool_arguments(pairs: &[String], json: Option<&str>) -> anyhow::Result<Value> {
    let mut arguments = match json {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text)
            .with_context(|| format!("--json is not valid JSON: {text}"))?
        {
            Value::Object(map) => map,
            _ => bail!("--json must be a JSON object, such as '{{\"message\": \"hi\"}}'"),
        },
    };
    for pair in pairs {
        let (key, value) = split_pair(pair, "--arg")?;
        arguments.insert(key.to_owned(), infer(value));
    }
    Ok(Value::Object(arguments))
}

/// `KEY=VALUE` split at the first `=`.
pub(super) fn split_pair<'a>(pair: &'a str, flag: &str) -> anyhow::Result<(&'a str, &'a str)> {
    match pair.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key, value)),
        _ => bail!("{flag} expects KEY=VALUE, got {pair:?}"),
    }
}

/// A string map from `KEY=VALUE` pairs.
pub(super) fn string_map(pairs: &[String], flag: &str) -> anyhow::Result<Map<String, Value>> {
    let mut map = Map::new();
    for pair in pairs {
        let (key, value) = split_pair(pair, flag)?;
        map.insert(key.to_owned(), Value::String(value.to_owned()));
    }
    Ok(map)
}

fn infer(value: &str) -> Value {
    match serde_json::from_str::<Value>(value) {
        Ok(Value::String(_)) | Err(_) => Value::String(value.to_owned()),
        Ok(other) => other,
    }
}

/// Prints a tool's failure to stderr and returns exit code 1.
pub(super) fn failed(text: &str) -> ExitCode {
    eprintln!("error: {}", text.trim());
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_tool_arguments() {
        let pairs = vec![
            "message=hi there".to_owned(),
            "n=3".to_owned(),
            "flag=true".to_owned(),
            "expr=a=b".to_owned(),
        ];
        let args =
            tool_arguments(&pairs, Some(r#"{"n": 1, "x": "y"}"#)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            args,
            json!({"n": 3, "x": "y", "message": "hi there", "flag": true, "expr": "a=b"})
        );
        assert!(tool_arguments(&["novalue".to_owned()], None).is_err());
        assert!(tool_arguments(&[], Some("[1]")).is_err());
    }
}
