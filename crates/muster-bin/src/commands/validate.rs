//! `muster validate`: check a config directory without starting anything.

mod report;

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use muster_fs::ConfigDir;

use super::paths::expand_home;
use crate::cli::{OutputFormat, ValidateArgs};
use report::Report;

/// Loads the config directory, prints one entry per file and exits 1 when any is invalid.
pub(super) fn run(args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let root = expand_home(&args.config_path);
    tracing::debug!(config_path = %root.display(), "validating config directory");
    let loaded = ConfigDir::new(&root).load()?;
    let report = Report::from_loaded(&loaded);
    let text = match args.output {
        OutputFormat::Text => report.to_text(),
        OutputFormat::Json => {
            let mut json = serde_json::to_string_pretty(&report)?;
            json.push('\n');
            json
        }
    };
    std::io::stdout()
        .write_all(text.as_bytes())
        .context("cannot write the report")?;
    Ok(if report.valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
