//! The real MCP peers the end-to-end tests use, installed by
//! `crates/muster-aggregator/tests/fixtures/install-test-deps.sh DIR`.
//!
//! `DIR` comes from the `MUSTER_TEST_DEPS` environment variable (default
//! `$HOME/.cache/muster-test-deps`). A missing peer is an error that says how to install it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

/// The environment variable naming the directory of the test peers.
pub const TEST_DEPS_ENV: &str = "MUSTER_TEST_DEPS";

/// The directory used when `MUSTER_TEST_DEPS` is not set, under `$HOME`.
pub const DEFAULT_TEST_DEPS: &str = ".cache/muster-test-deps";

/// The directory of the test peers.
pub fn dir() -> PathBuf {
    std::env::var_os(TEST_DEPS_ENV).map_or_else(
        || {
            std::env::var_os("HOME")
                .map_or_else(|| PathBuf::from("."), PathBuf::from)
                .join(DEFAULT_TEST_DEPS)
        },
        PathBuf::from,
    )
}

/// `relative` inside [`dir`], which must exist.
///
/// # Errors
///
/// When it does not, with the command that installs it.
pub fn require(relative: &str) -> anyhow::Result<PathBuf> {
    let dir = dir();
    let path = dir.join(relative);
    if !path.exists() {
        bail!(
            "{} is missing: run crates/muster-aggregator/tests/fixtures/install-test-deps.sh {} \
             (or set {TEST_DEPS_ENV} to a directory prepared by it)",
            path.display(),
            dir.display()
        );
    }
    Ok(path)
}

/// `mcp-server-everything`, the reference server of the protocol's maintainers (npm
/// `@modelcontextprotocol/server-everything`); `stdio` as its argument serves over stdio.
///
/// # Errors
///
/// When it is not installed.
pub fn server_everything() -> anyhow::Result<PathBuf> {
    require("node_modules/.bin/mcp-server-everything")
}

/// The Python of a venv holding the official `mcp` SDK.
///
/// # Errors
///
/// When it is not installed.
pub fn python() -> anyhow::Result<PathBuf> {
    require("venv/bin/python")
}

/// The directory holding Node 22 (`node`) and `mcp-inspector`; put it first on `PATH` when
/// running the Inspector, which needs Node 22 or newer.
///
/// # Errors
///
/// When either is not installed.
pub fn node22_bin_dir() -> anyhow::Result<PathBuf> {
    require("node_modules/.bin/node")?;
    require("node_modules/.bin/mcp-inspector")?;
    Ok(dir().join("node_modules/.bin"))
}

/// The directory holding npm `oidc-provider` (a certified OpenID provider) and its `jose`,
/// for the fixtures under `tests/fixtures/oidc`; run them with `OIDC_PROVIDER_DIR` set to
/// it.
///
/// # Errors
///
/// When it is not installed.
pub fn oidc_provider_dir() -> anyhow::Result<PathBuf> {
    require("oidc-provider-9.13.3/node_modules/oidc-provider")?;
    Ok(dir().join("oidc-provider-9.13.3"))
}

/// `PATH` with `dir` first.
///
/// # Errors
///
/// When the joined value is not a valid `PATH`.
pub fn path_with(dir: &Path) -> anyhow::Result<OsString> {
    let mut dirs = vec![dir.to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).context("cannot build PATH")
}
