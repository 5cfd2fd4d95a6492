//! `muster create`: MCP servers and workflows from flags or from files.

use std::io::Read as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::{Map, Value, json};

use super::remote;
use crate::cli::{CreateArgs, CreateKind};
use crate::output;

/// Runs `muster create`.
pub(crate) fn run(args: &CreateArgs) -> anyhow::Result<ExitCode> {
    let (tool, arguments) = match &args.file {
        Some(file) => from_file(file, args.kind, args.name.as_deref())?,
        None => from_flags(args)?,
    };
    remote::block_on(create(args, tool, arguments))
}

async fn create(args: &CreateArgs, tool: &str, arguments: Value) -> anyhow::Result<ExitCode> {
    let mut client = remote::connect(&args.client.target).await?;
    let result = client.call_tool(tool, arguments, |_| {}).await;
    client.close().await;
    let result = result?;
    if result.is_error {
        return Ok(remote::failed(&result.text()));
    }
    if !args.client.quiet {
        output::print(&format!("{}\n", result.text().trim_end()));
    }
    Ok(ExitCode::SUCCESS)
}

fn from_flags(args: &CreateArgs) -> anyhow::Result<(&'static str, Value)> {
    let Some(name) = args.name.as_deref() else {
        bail!("a name is required: `muster create mcpserver NAME --type stdio --command ...`");
    };
    if args.kind == Some(CreateKind::Workflow) {
        return workflow_from_flags(name, args);
    }
    let Some(server_type) = args.server_type.as_deref() else {
        bail!("--type is required: stdio (with --command) or streamable-http / sse (with --url)");
    };
    let mut spec = Map::new();
    spec.insert("name".to_owned(), json!(name));
    spec.insert("type".to_owned(), json!(server_type));
    let optional = [
        ("command", args.command.as_ref().map(|v| json!(v))),
        ("url", args.url.as_ref().map(|v| json!(v))),
        ("timeout", args.timeout.map(|v| json!(v))),
        ("autoStart", args.auto_start.map(|v| json!(v))),
        ("description", args.description.as_ref().map(|v| json!(v))),
        ("toolPrefix", args.tool_prefix.as_ref().map(|v| json!(v))),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            spec.insert(key.to_owned(), value);
        }
    }
    if !args.args.is_empty() {
        spec.insert("args".to_owned(), json!(args.args));
    }
    if !args.env.is_empty() {
        let env = remote::string_map(&args.env, "--env")?;
        spec.insert("env".to_owned(), Value::Object(env));
    }
    if !args.header.is_empty() {
        let headers = remote::string_map(&args.header, "--header")?;
        spec.insert("headers".to_owned(), Value::Object(headers));
    }
    Ok(("core_mcpserver_create", Value::Object(spec)))
}

/// `core_workflow_create` arguments from `--description`, `--step ID=TOOL` or `--steps`,
/// `--input NAME=TYPE` and `--required NAME`.
fn workflow_from_flags(name: &str, args: &CreateArgs) -> anyhow::Result<(&'static str, Value)> {
    let steps = match &args.steps {
        Some(text) => {
            let steps: serde_norway::Value = serde_norway::from_str(text)
                .with_context(|| format!("--steps is not a YAML or JSON list: {text}"))?;
            match serde_json::to_value(steps).context("--steps is not JSON-like")? {
                Value::Array(steps) => steps,
                _ => bail!("--steps must be a list of steps, such as '[{{id: a, tool: x_t}}]'"),
            }
        }
        None => args
            .step
            .iter()
            .map(|pair| {
                let (id, tool) = remote::split_pair(pair, "--step")?;
                Ok(json!({"id": id, "tool": tool}))
            })
            .collect::<anyhow::Result<_>>()?,
    };
    if steps.is_empty() {
        bail!(
            "a workflow needs steps: `--step ID=TOOL` (repeatable) or `--steps '[{{id: a, tool: x_t, args: {{}}}}]'`, or a file with -f"
        );
    }
    let mut inputs = Map::new();
    for pair in &args.input {
        let (input, kind) = remote::split_pair(pair, "--input")?;
        inputs.insert(input.to_owned(), json!({ "type": kind }));
    }
    for input in &args.required {
        let entry = inputs
            .entry(input.clone())
            .or_insert_with(|| json!({"type": "string"}));
        entry["required"] = json!(true);
    }
    let mut spec = Map::new();
    spec.insert("name".to_owned(), json!(name));
    if let Some(description) = &args.description {
        spec.insert("description".to_owned(), json!(description));
    }
    if !inputs.is_empty() {
        spec.insert("args".to_owned(), Value::Object(inputs));
    }
    spec.insert("steps".to_owned(), Value::Array(steps));
    Ok(("core_workflow_create", Value::Object(spec)))
}

/// The tool and arguments for a definition file: a resource (`kind`, `metadata.name`,
/// `spec`) or a bare spec when the kind and name are given on the command line.
fn from_file(
    file: &Path,
    kind: Option<CreateKind>,
    name: Option<&str>,
) -> anyhow::Result<(&'static str, Value)> {
    let text = if file == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the definition from stdin")?;
        text
    } else {
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?
    };
    let document: serde_norway::Value = serde_norway::from_str(&text)
        .with_context(|| format!("{} is not YAML or JSON", file.display()))?;
    let document = serde_json::to_value(document).context("the definition is not JSON-like")?;
    let file_kind = match document.get("kind").and_then(Value::as_str) {
        Some("MCPServer") => Some(CreateKind::Mcpserver),
        Some("Workflow") => Some(CreateKind::Workflow),
        Some(other) => bail!("cannot create a {other}: the kind must be MCPServer or Workflow"),
        None => None,
    };
    let Some(kind) = kind.or(file_kind) else {
        bail!(
            "{} has no kind: give it on the command line, such as `muster create mcpserver NAME -f FILE`",
            file.display()
        );
    };
    let (mut spec, file_name) = match document.get("spec") {
        Some(Value::Object(spec)) => (
            spec.clone(),
            document.pointer("/metadata/name").and_then(Value::as_str),
        ),
        _ => match &document {
            Value::Object(map) => (map.clone(), map.get("name").and_then(Value::as_str)),
            _ => bail!("{} is not a definition", file.display()),
        },
    };
    let Some(name) = name.or(file_name) else {
        bail!(
            "{} has no metadata.name: give the name on the command line",
            file.display()
        );
    };
    spec.insert("name".to_owned(), json!(name));
    let tool = match kind {
        CreateKind::Mcpserver => "core_mcpserver_create",
        CreateKind::Workflow => "core_workflow_create",
    };
    Ok((tool, Value::Object(spec)))
}
