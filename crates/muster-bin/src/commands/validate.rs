//! `muster validate`: check a config directory without starting anything.

mod report;

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use muster_core::Mode;
use muster_fs::ConfigDir;

use super::paths::expand_home;
use crate::cli::{OutputFormat, ValidateArgs};
use report::Report;

/// Loads the config directory, prints one entry per file and exits 1 when any is invalid.
/// With `kubernetes: true` in `config.yaml` the definitions are checked with the
/// Kubernetes-mode rules, and the report says what only the cluster can check.
pub(super) fn run(args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let root = expand_home(&args.config_path);
    tracing::debug!(config_path = %root.display(), "validating config directory");
    let dir = ConfigDir::new(&root);
    let mut loaded = dir.load()?;
    let kubernetes = loaded.config.result.as_ref().is_ok_and(|c| c.kubernetes);
    if kubernetes {
        loaded = dir.load_in(Mode::Kubernetes)?;
    }
    let report = Report::from_loaded(&loaded, kubernetes);
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
