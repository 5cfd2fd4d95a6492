//! `muster crd`: the CRDs of muster as YAML on stdout.

use std::io::Write as _;
use std::process::ExitCode;

/// Prints the three CRDs as one YAML stream.
pub(super) fn run() -> anyhow::Result<ExitCode> {
    let yaml = muster_k8s::crd::crds_yaml()?;
    match std::io::stdout().write_all(yaml.as_bytes()) {
        // A reader that stops early (`| head`) is not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}
