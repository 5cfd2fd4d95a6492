//! The files of the execution directory: names, atomic replacement, reading and removal.
//!
//! A record lives in `<dir>/<id>.yaml`. It is replaced by writing a temporary file
//! `<dir>/.<id>.yaml.tmp-<random>` in the same directory, syncing it, renaming it over the
//! record and syncing the directory, so the record file always holds a complete version.
//! Every function here blocks; the store calls them from blocking tasks.

use std::path::{Path, PathBuf};

use muster_core::resource::execution::ExecutionId;

use super::error::ExecutionFileError;
use crate::atomic;

/// The extension of record files (their content is JSON all the same).
pub(crate) const EXTENSION: &str = "yaml";
/// What a temporary file's name holds after the id.
/// (`.<id>.yaml.tmp-…`: the shared atomic writer names temporary files `.<file>.tmp-…`.)
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
    Ok(atomic::read(path)?)
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
    Ok(atomic::replace(&record_path(dir, id), content)?)
}

/// Removes `path`; returns whether it existed.
pub(crate) fn remove(path: &Path) -> Result<bool, ExecutionFileError> {
    Ok(atomic::remove(path)?)
}

/// Makes renames and removals in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), ExecutionFileError> {
    Ok(atomic::sync_dir(dir)?)
}
