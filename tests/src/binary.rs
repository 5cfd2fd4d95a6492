//! Finding, and when needed building, the `muster` binary under test.
//!
//! `muster-bin` cannot be a dependency of this crate: it has no library target, and cargo's
//! artifact dependencies (which would build a binary for a dependent) are unstable. So the
//! harness looks for the binary cargo already built and builds it itself only when that one
//! is missing or older than the sources.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::SystemTime;

use anyhow::{Context as _, anyhow, bail};
use serde_json::Value;

use crate::workspace_root;

/// The environment variable naming a prebuilt `muster` binary to test instead.
pub const MUSTER_BIN_ENV: &str = "MUSTER_BIN";

/// The `muster` binary the end-to-end tests run.
///
/// In order of preference:
/// 1. the path in `MUSTER_BIN`, as it is;
/// 2. `<target>/debug/muster` beside this test's own executable, when it is newer than every
///    source of the workspace's crates and the lock file; `cargo test --workspace` and
///    `cargo nextest run --workspace` build it, as muster-bin has integration tests;
/// 3. otherwise (missing or stale, e.g. after `cargo test -p muster-tests` following an
///    edit) the artifact of `cargo build -p muster-bin`, run once per test process.
///
/// # Errors
///
/// When the build fails or reports no binary.
pub fn muster_bin() -> anyhow::Result<PathBuf> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| locate().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(|e| anyhow!(e))
}

fn locate() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os(MUSTER_BIN_ENV) {
        return Ok(PathBuf::from(path));
    }
    let root = workspace_root();
    if let Some(candidate) = beside_current_exe()
        && let Some(built) = modified(&candidate)
        && newest_source(&root).is_none_or(|newest| built >= newest)
    {
        return Ok(candidate);
    }
    build(&root)
}

/// `<target>/debug/muster` for a test executable at `<target>/debug/deps/<test>-<hash>`.
fn beside_current_exe() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    Some(profile_dir.join(format!("muster{}", std::env::consts::EXE_SUFFIX)))
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The newest modification time of what the binary is built from: the manifests, the lock
/// file, and every crate's `src/` and `build.rs`.
fn newest_source(root: &Path) -> Option<SystemTime> {
    let mut newest = None;
    for file in ["Cargo.toml", "Cargo.lock"] {
        newest = newest.max(modified(&root.join(file)));
    }
    if let Ok(crates) = std::fs::read_dir(root.join("crates")) {
        for krate in crates.flatten().map(|e| e.path()) {
            newest = newest.max(modified(&krate.join("Cargo.toml")));
            newest = newest.max(modified(&krate.join("build.rs")));
            newest_in(&krate.join("src"), &mut newest);
        }
    }
    newest
}

fn newest_in(dir: &Path, newest: &mut Option<SystemTime>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            newest_in(&path, newest);
        } else {
            *newest = (*newest).max(modified(&path));
        }
    }
}

/// Runs `cargo build -p muster-bin` and returns the path of the `muster` executable it
/// reports.
fn build(root: &Path) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let out = Command::new(cargo)
        .args([
            "build",
            "-p",
            "muster-bin",
            "--bin",
            "muster",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run cargo to build muster")?;
    if !out.status.success() {
        bail!("`cargo build -p muster-bin` failed ({})", out.status);
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "muster")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .context("`cargo build -p muster-bin` reported no muster executable")
}
