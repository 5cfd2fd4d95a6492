//! The files of the execution directory: names, atomic replacement, reading and removal.
//!
//! A record lives in `<dir>/<id>.yaml`. It is replaced by writing a temporary file
//! `<dir>/.<id>.yaml.tmp-<random>` in the same directory, syncing it, renaming it over the
//! record and syncing the directory, so the record file always holds a complete version.
//! Every function here blocks; the store calls them from blocking tasks.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use muster_core::resource::execution::ExecutionId;

use super::error::ExecutionFileError;

/// The extension of record files (their content is JSON all the same).
pub(crate) const EXTENSION: &str = "yaml";
/// What a temporary file's name holds after the id.
const TEMP_INFIX: &str = ".yaml.tmp-";
/// The longest id accepted as a file name.
const MAX_ID_LEN: usize = 128;

/// What a directory entry is, judged by its name.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum EntryKind {
    /// `<id>.yaml`.
    Record(ExecutionId),
    /// A temporary file left by an interrupted write.
    Temp,
    /// Anything else; left alone.
    Other,
}

/// Whether `id` can name a file: 1 to 128 ASCII letters, digits, `-` or `_`.
///
/// A UUID always can; anything that could leave the directory (`/`, `..`) cannot.
pub(crate) fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `<dir>/<id>.yaml`.
pub(crate) fn record_path(dir: &Path, id: &ExecutionId) -> PathBuf {
    dir.join(format!("{id}.{EXTENSION}"))
}

/// Classifies a directory entry by its file name.
pub(crate) fn classify(file_name: &str) -> EntryKind {
    if let Some(hidden) = file_name.strip_prefix('.') {
        return match hidden.split_once(TEMP_INFIX) {
            Some((id, _)) if is_valid_id(id) => EntryKind::Temp,
            _ => EntryKind::Other,
        };
    }
    match file_name.strip_suffix(&format!(".{EXTENSION}")) {
        Some(id) if is_valid_id(id) => EntryKind::Record(ExecutionId::from_string(id)),
        _ => EntryKind::Other,
    }
}

/// The content of `path`, or `None` when it does not exist.
pub(crate) fn read(path: &Path) -> Result<Option<Vec<u8>>, ExecutionFileError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ExecutionFileError::io("read", path)(e)),
    }
}

/// Whether `path` exists.
pub(crate) fn exists(path: &Path) -> Result<bool, ExecutionFileError> {
    path.try_exists()
        .map_err(ExecutionFileError::io("check", path))
}

/// Replaces the record of `id` in `dir` by `content`, atomically and durably; creates `dir`
/// when missing.
pub(crate) fn write_atomic(
    dir: &Path,
    id: &ExecutionId,
    content: &[u8],
) -> Result<(), ExecutionFileError> {
    let temp = dir.join(format!(".{id}{TEMP_INFIX}{}", ExecutionId::new_v4()));
    let file = match create_new(&temp) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            create_dir(dir)?;
            create_new(&temp)
        }
        other => other,
    }
    .map_err(ExecutionFileError::io("create", &temp))?;
    let target = record_path(dir, id);
    let result = fill(file, &temp, content).and_then(|()| {
        fs::rename(&temp, &target).map_err(ExecutionFileError::io("rename into place", &temp))
    });
    if let Err(e) = result {
        // Best effort: a leftover would be removed by the next open anyway.
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    sync_dir(dir)
}

/// Removes `path`; returns whether it existed.
pub(crate) fn remove(path: &Path) -> Result<bool, ExecutionFileError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ExecutionFileError::io("remove", path)(e)),
    }
}

/// Makes renames and removals in `dir` durable. A no-op where directories cannot be opened
/// (Windows), whose renames are durable once they return.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), ExecutionFileError> {
    if cfg!(unix) {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(ExecutionFileError::io("sync directory", dir))?;
    }
    Ok(())
}

fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

fn fill(mut file: File, path: &Path, content: &[u8]) -> Result<(), ExecutionFileError> {
    file.write_all(content)
        .map_err(ExecutionFileError::io("write", path))?;
    file.sync_all()
        .map_err(ExecutionFileError::io("sync", path))
}

fn create_dir(dir: &Path) -> Result<(), ExecutionFileError> {
    fs::create_dir_all(dir).map_err(ExecutionFileError::io("create directory", dir))?;
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => sync_dir(parent),
        _ => Ok(()),
    }
}
