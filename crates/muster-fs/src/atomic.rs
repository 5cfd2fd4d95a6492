//! Durable, atomic file replacement shared by every store of this crate.
//!
//! A file is replaced by writing a hidden temporary file (`.<file>.tmp-<pid>-<n>`) in the same
//! directory, syncing it, renaming it over the target and syncing the directory, so a reader
//! always sees a complete file, before or after the write, even across a crash. Hidden files
//! are skipped by the loaders and watchers. Every function here blocks.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// What a temporary file's name holds after the target's file name.
pub(crate) const TEMP_INFIX: &str = ".tmp-";

/// A file system call that failed: the operation, the path and the I/O error.
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
    /// A mapper of an [`io::Error`] of `op` on `path`.
    pub(crate) fn of(op: &'static str, path: &Path) -> impl FnOnce(io::Error) -> FileError {
        let path = path.to_owned();
        move |source| FileError { op, path, source }
    }
}

/// Replaces (or creates) `path` with `content`; creates the directory when missing.
pub(crate) fn replace(path: &Path, content: &[u8]) -> Result<(), FileError> {
    let temp = write_temp(path, content)?;
    if let Err(e) = fs::rename(&temp, path) {
        let _ = fs::remove_file(&temp);
        return Err(FileError::of("rename into place", path)(e));
    }
    sync_dir(parent(path))
}

/// Creates `path` with `content`; returns `false`, writing nothing, when `path` exists already
/// (also when another process created it a moment ago).
pub(crate) fn create(path: &Path, content: &[u8]) -> Result<bool, FileError> {
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
    let created = created.map_err(FileError::of("create", path))?;
    if created {
        sync_dir(parent(path))?;
    }
    Ok(created)
}

/// Removes `path`; returns whether it existed.
pub(crate) fn remove(path: &Path) -> Result<bool, FileError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(FileError::of("remove", path)(e)),
    }
}

/// The content of `path`, or `None` when it does not exist.
pub(crate) fn read(path: &Path) -> Result<Option<Vec<u8>>, FileError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(FileError::of("read", path)(e)),
    }
}

/// Creates `dir` and its parents when missing, and makes the new entry durable.
pub(crate) fn ensure_dir(dir: &Path) -> Result<(), FileError> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(dir).map_err(FileError::of("create directory", dir))?;
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => sync_dir(p),
        _ => Ok(()),
    }
}

/// Makes renames and removals in `dir` durable. A no-op where directories cannot be opened
/// (Windows), whose renames are durable once they return.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), FileError> {
    if cfg!(unix) {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(FileError::of("sync directory", dir))?;
    }
    Ok(())
}

/// Writes `content` to a fresh hidden temporary file next to `path` and syncs it; creates the
/// directory when missing.
fn write_temp(path: &Path, content: &[u8]) -> Result<PathBuf, FileError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = parent(path);
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(
        ".{file_name}{TEMP_INFIX}{}-{n}",
        std::process::id()
    ));
    let open = || OpenOptions::new().write(true).create_new(true).open(&temp);
    let file = match open() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            ensure_dir(dir)?;
            open()
        }
        other => other,
    }
    .map_err(FileError::of("create", &temp))?;
    if let Err(e) = fill(file, &temp, content) {
        let _ = fs::remove_file(&temp);
        return Err(FileError::of("write", &temp)(e));
    }
    Ok(temp)
}

fn fill(mut file: File, path: &Path, content: &[u8]) -> io::Result<()> {
    writer_for(path).write(&mut file, content)?;
    file.sync_all()
}

/// How bytes reach a file: the seam through which tests simulate a full disk. Every write of
/// this crate (definitions, execution records, event lines) goes through it.
pub(crate) trait ContentWriter: Send + Sync {
    /// Writes all of `content` to `file`, or fails.
    fn write(&self, file: &mut File, content: &[u8]) -> io::Result<()>;
}

/// Writes straight to the file.
struct Direct;

impl ContentWriter for Direct {
    fn write(&self, file: &mut File, content: &[u8]) -> io::Result<()> {
        file.write_all(content)
    }
}

/// The writer for files at `path`.
pub(crate) fn writer_for(path: &Path) -> &'static dyn ContentWriter {
    #[cfg(test)]
    if let Some(full) = full_disk::writer_for(path) {
        return full;
    }
    let _ = path;
    &Direct
}

/// A simulated full disk for tests: writes under a registered directory store at most a
/// given number of bytes, then fail with `ENOSPC` as a full file system does.
#[cfg(test)]
pub(crate) mod full_disk {
    use std::fs::File;
    use std::io::{self, Write};
    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, PoisonError};

    use super::ContentWriter;

    static FULL: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

    /// Writes a little, then fails as a full disk does.
    struct FullDisk;

    impl ContentWriter for FullDisk {
        fn write(&self, file: &mut File, content: &[u8]) -> io::Result<()> {
            let part = content.len().min(7);
            file.write_all(&content[..part])?;
            Err(io::Error::from_raw_os_error(28))
        }
    }

    /// From now on, writes under `dir` fail with `ENOSPC`.
    pub(crate) fn fill(dir: &Path) {
        FULL.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(dir.to_owned());
    }

    /// Writes under `dir` succeed again.
    pub(crate) fn free(dir: &Path) {
        FULL.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|d| d != dir);
    }

    pub(super) fn writer_for(path: &Path) -> Option<&'static dyn ContentWriter> {
        let full = FULL.lock().unwrap_or_else(PoisonError::into_inner);
        full.iter()
            .any(|d| path.starts_with(d))
            .then_some(&FullDisk as &'static dyn ContentWriter)
    }
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_replace_remove_leave_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/x.yaml");
        assert!(create(&path, b"one").unwrap());
        assert!(!create(&path, b"two").unwrap());
        assert_eq!(fs::read(&path).unwrap(), b"one");
        replace(&path, b"three").unwrap();
        assert_eq!(read(&path).unwrap().as_deref(), Some(&b"three"[..]));
        let names: Vec<_> = fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["x.yaml"]);
        assert!(remove(&path).unwrap());
        assert!(!remove(&path).unwrap());
        assert_eq!(read(&path).unwrap(), None);
    }

    #[test]
    fn a_full_disk_fails_clearly_and_leaves_the_old_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.yaml");
        replace(&path, b"the old content").unwrap();
        full_disk::fill(dir.path());
        let err = replace(&path, b"the new, longer content").unwrap_err();
        let err_created = create(&dir.path().join("y.yaml"), b"new").unwrap_err();
        full_disk::free(dir.path());
        assert_eq!(err.source.raw_os_error(), Some(28));
        let text = err.to_string();
        assert!(
            text.contains("cannot write") && text.contains("No space left on device"),
            "{text}"
        );
        assert!(err_created.to_string().contains("No space left on device"));
        assert_eq!(fs::read(&path).unwrap(), b"the old content");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["x.yaml"], "no temporary file is left behind");
    }
}
