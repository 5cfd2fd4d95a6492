//! The file operations behind the definition store: reading, atomic replacement, atomic
//! creation, removal, and the resource version of a file's content.
//!
//! A definition is replaced by writing a hidden temporary file (`.<file>.tmp-<pid>-<n>`) in the
//! same directory, syncing it, renaming it over the definition and syncing the directory, so a
//! reader always sees a complete file. Hidden files are skipped by the loader and the watcher,
//! so a temporary file is never read as a definition. Every function here blocks.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use muster_core::StoreError;

/// A file system call of the definition store failed.
///
/// Returned inside [`StoreError::Backend`], so it counts as retryable.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot {op}: {source}", .path.display())]
pub struct FileError {
    /// What was attempted, e.g. `rename into place`.
    pub op: &'static str,
    /// The file or directory.
    pub path: PathBuf,
    /// The I/O error.
    #[source]
    pub source: io::Error,
}

impl FileError {
    /// A mapper of an [`io::Error`] of `op` on `path` into a [`StoreError::Backend`].
    pub(crate) fn backend(op: &'static str, path: &Path) -> impl FnOnce(io::Error) -> StoreError {
        let path = path.to_owned();
        move |source| StoreError::Backend(Box::new(FileError { op, path, source }))
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
pub(crate) fn read(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether `path` exists.
pub(crate) fn exists(path: &Path) -> Result<bool, StoreError> {
    path.try_exists().map_err(FileError::backend("check", path))
}

/// Replaces (or creates) `path` with `content`, atomically and durably.
pub(crate) fn replace(path: &Path, content: &[u8]) -> Result<(), StoreError> {
    let temp = write_temp(path, content)?;
    if let Err(e) = fs::rename(&temp, path) {
        let _ = fs::remove_file(&temp);
        return Err(FileError::backend("rename into place", path)(e));
    }
    sync_parent(path)
}

/// Creates `path` with `content`, atomically and durably; returns `false`, writing nothing,
/// when `path` exists already (also when another process created it a moment ago).
pub(crate) fn create(path: &Path, content: &[u8]) -> Result<bool, StoreError> {
    let temp = write_temp(path, content)?;
    // A hard link fails when the target exists, so creation cannot replace a file that
    // appeared after the caller looked. Where links are not supported, fall back to a check
    // followed by a rename.
    let created = match fs::hard_link(&temp, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(_) => match path.try_exists() {
            Ok(true) => Ok(false),
            Ok(false) => fs::rename(&temp, path).map(|()| true),
            Err(e) => Err(e),
        },
    };
    let _ = fs::remove_file(&temp);
    let created = created.map_err(FileError::backend("create", path))?;
    if created {
        sync_parent(path)?;
    }
    Ok(created)
}

/// Removes `path`; returns whether it existed.
pub(crate) fn remove(path: &Path) -> Result<bool, StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(FileError::backend("remove", path)(e)),
    }
}

/// Creates `dir` and its parents when missing.
pub(crate) fn ensure_dir(dir: &Path) -> Result<(), StoreError> {
    fs::create_dir_all(dir).map_err(FileError::backend("create directory", dir))
}

/// Writes `content` to a fresh hidden temporary file next to `path` and syncs it; creates the
/// directory when missing.
fn write_temp(path: &Path, content: &[u8]) -> Result<PathBuf, StoreError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = parent(path);
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".{file_name}.tmp-{}-{n}", std::process::id()));
    let open = || OpenOptions::new().write(true).create_new(true).open(&temp);
    let file = match open() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            ensure_dir(dir)?;
            open()
        }
        other => other,
    }
    .map_err(FileError::backend("create", &temp))?;
    if let Err(e) = fill(file, content) {
        let _ = fs::remove_file(&temp);
        return Err(FileError::backend("write", &temp)(e));
    }
    Ok(temp)
}

fn fill(mut file: File, content: &[u8]) -> io::Result<()> {
    file.write_all(content)?;
    file.sync_all()
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes a rename or creation in `path`'s directory durable. A no-op where directories
/// cannot be opened (Windows), whose renames are durable once they return.
fn sync_parent(path: &Path) -> Result<(), StoreError> {
    if cfg!(unix) {
        let dir = parent(path);
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(FileError::backend("sync directory", dir))?;
    }
    Ok(())
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

    #[test]
    fn create_refuses_an_existing_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/x.yaml");
        assert!(create(&path, b"one").unwrap());
        assert!(!create(&path, b"two").unwrap());
        assert_eq!(fs::read(&path).unwrap(), b"one");
        replace(&path, b"three").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"three");
        let names: Vec<_> = fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["x.yaml"]);
        assert!(remove(&path).unwrap());
        assert!(!remove(&path).unwrap());
    }
}
