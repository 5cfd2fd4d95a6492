//! `muster schema`: JSON Schemas of the files a config directory holds, for editors and CI.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use muster_core::config::MusterConfig;
use muster_core::{McpServer, Object, Workflow};
use schemars::{Schema, schema_for};

use crate::cli::SchemaArgs;

/// Writes every schema file into `--out` and lists what it wrote.
pub(super) fn run(args: &SchemaArgs) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    for (file, schema) in schemas() {
        let path = args.out.join(file);
        write_schema(&path, &schema)?;
        crate::output::print(&format!("wrote {}\n", path.display()));
    }
    Ok(ExitCode::SUCCESS)
}

/// Every schema with its file name.
fn schemas() -> [(&'static str, Schema); 3] {
    [
        ("config.schema.json", schema_for!(MusterConfig)),
        ("mcpserver.schema.json", schema_for!(Object<McpServer>)),
        ("workflow.schema.json", schema_for!(Object<Workflow>)),
    ]
}

/// Pretty JSON with a trailing newline, so the committed files diff cleanly.
fn write_schema(path: &Path, schema: &Schema) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(schema)?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
