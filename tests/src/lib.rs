//! Shared harness of muster's end-to-end and architecture tests.
//!
//! The tests themselves live in `tests/tests/*.rs`, one behaviour per file.

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}
