//! The file operations behind the definition store: reading, atomic replacement, atomic
//! creation, removal, and the resource version of a file's content.
//!
//! A definition is replaced by writing a hidden temporary file (`.<file>.tmp-<pid>-<n>`) in the
//! same directory, syncing it, renaming it over the definition and syncing the directory, so a
//! reader always sees a complete file. Hidden files are skipped by the loader and the watcher,
//! so a temporary file is never read as a definition. Every function here blocks.

use std::path::Path;

use muster_core::StoreError;

use crate::atomic;
pub use crate::atomic::FileError;

impl FileError {
    /// A mapper of an I/O error of `op` on `path` into a [`StoreError::Backend`].
    pub(crate) fn backend(
        op: &'static str,
        path: &Path,
    ) -> impl FnOnce(std::io::Error) -> StoreError {
        let of = FileError::of(op, path);
        move |source| of(source).into()
    }
}

impl From<FileError> for StoreError {
    fn from(e: FileError) -> Self {
        StoreError::Backend(Box::new(e))
    }
}

/// The resource version of a file's content: the FNV-1a hash of its bytes, as 16 hex digits.
///
/// It changes whenever the content changes, whoever wrote it, and stays the same when a file
/// is rewritten unchanged or only touched.
pub(crate) fn version_of(bytes: &[u8]) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    let hash = bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME));
    format!("{hash:016x}")
}

/// The content of `path`, or `None` when it does not exist.
pub(crate) fn read(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether `path` exists.
pub(crate) fn exists(path: &Path) -> Result<bool, StoreError> {
    path.try_exists()
        .map_err(|e| FileError::of("check", path)(e).into())
}

/// Replaces (or creates) `path` with `content`, atomically and durably.
pub(crate) fn replace(path: &Path, content: &[u8]) -> Result<(), StoreError> {
    Ok(atomic::replace(path, content)?)
}

/// Creates `path` with `content`; `false` when it exists already.
pub(crate) fn create(path: &Path, content: &[u8]) -> Result<bool, StoreError> {
    Ok(atomic::create(path, content)?)
}

/// Removes `path`; returns whether it existed.
pub(crate) fn remove(path: &Path) -> Result<bool, StoreError> {
    Ok(atomic::remove(path)?)
}

/// Creates `dir` and its parents when missing.
pub(crate) fn ensure_dir(dir: &Path) -> Result<(), StoreError> {
    Ok(atomic::ensure_dir(dir)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_follow_content() {
        assert_eq!(version_of(b""), "cbf29ce484222325");
        assert_eq!(version_of(b"a"), version_of(b"a"));
        assert_ne!(version_of(b"a"), version_of(b"b"));
    }
}
