//! The store's operations as blocking functions over one kind's definitions.
//!
//! The async methods of [`FsStore`](super::FsStore) run these on the blocking pool, writes
//! one at a time.

use std::path::PathBuf;

use muster_core::resource::{check_name, is_valid_name};
use muster_core::{Object, ObjectKey, StoreError, ValidationErrors};

use super::file::{self, FileError};
use super::kind::FsKind;
use super::read::{Definitions, Entry};
use super::render::{render, render_status, splice_status};
use crate::layout::DefinitionFile;
use crate::load::LoadError;

/// The object with this key, if its file exists and names the same namespace.
pub(crate) fn get<K: FsKind>(
    defs: &Definitions,
    key: &ObjectKey,
) -> Result<Option<Object<K>>, StoreError> {
    if !is_file_name(&key.name) {
        return Ok(None);
    }
    let Some(entry) = defs.read_name::<K>(&key.name)?.into_iter().next() else {
        return Ok(None);
    };
    let obj = entry.result.map_err(|e| store_error(defs, e))?;
    Ok((obj.key() == *key).then_some(obj))
}

/// Every readable object, optionally of one namespace, sorted by key.
pub(crate) fn list<K: FsKind>(
    defs: &Definitions,
    namespace: Option<&str>,
) -> Result<Vec<Object<K>>, StoreError> {
    let mut objects: Vec<Object<K>> = defs
        .read_all::<K>()?
        .into_iter()
        .filter_map(|entry| entry.result.ok())
        .filter(|obj| namespace.is_none_or(|ns| obj.metadata.namespace_or_default() == ns))
        .collect();
    objects.sort_by_key(Object::key);
    Ok(objects)
}

/// Writes a new `<name>.yaml`; fails when a file defines the name already.
pub(crate) fn create<K: FsKind>(
    defs: &Definitions,
    obj: Object<K>,
) -> Result<Object<K>, StoreError> {
    let mut obj = prepare(defs, obj)?;
    let key = obj.key().to_string();
    let already_exists = || StoreError::AlreadyExists {
        kind: K::KIND,
        key: key.clone(),
    };
    for candidate in defs.candidates::<K>(obj.name()) {
        if file::exists(&defs.resolve(&candidate.path))? {
            return Err(already_exists());
        }
    }
    obj.metadata.generation = Some(1);
    obj.metadata
        .creation_timestamp
        .get_or_insert_with(chrono::Utc::now);
    let text = render(&obj)?;
    let path = defs.resolve(&new_file::<K>(defs, obj.name()).path);
    if !file::create(&path, text.as_bytes())? {
        return Err(already_exists());
    }
    obj.metadata.resource_version = Some(file::version_of(text.as_bytes()));
    Ok(obj)
}

/// Creates or replaces an object's metadata and spec, keeping the stored status.
pub(crate) fn apply<K: FsKind>(
    defs: &Definitions,
    obj: Object<K>,
) -> Result<Object<K>, StoreError> {
    let expected_version = obj.metadata.resource_version.clone();
    let mut obj = prepare(defs, obj)?;
    let key = obj.key();
    let current = defs.read_name::<K>(&key.name)?.into_iter().next();
    let path = match &current {
        Some(entry) => {
            if let Ok(old) = &entry.result
                && old.key() != key
            {
                // One file per name: the name is taken in another namespace.
                return Err(StoreError::AlreadyExists {
                    kind: K::KIND,
                    key: old.key().to_string(),
                });
            }
            if let Some(expected) = expected_version
                && expected != entry.version
            {
                return Err(StoreError::Conflict {
                    key: key.to_string(),
                    expected,
                    found: entry.version.clone(),
                });
            }
            entry.file.path.clone()
        }
        None => new_file::<K>(defs, &key.name).path,
    };
    match current.as_ref().and_then(|e| e.result.as_ref().ok()) {
        Some(old) => {
            let generation = old.metadata.generation.unwrap_or(1);
            let changed = old.spec != obj.spec;
            obj.metadata.generation = Some(if changed { generation + 1 } else { generation });
            obj.metadata
                .creation_timestamp
                .clone_from(&old.metadata.creation_timestamp);
            obj.status.clone_from(&old.status);
        }
        None => {
            obj.metadata.generation = Some(1);
            obj.metadata
                .creation_timestamp
                .get_or_insert_with(chrono::Utc::now);
        }
    }
    let text = render(&obj)?;
    let unchanged = current
        .as_ref()
        .and_then(|e| e.text.as_deref())
        .is_some_and(|old| old == text);
    if !unchanged {
        file::replace(&defs.resolve(&path), text.as_bytes())?;
    }
    obj.metadata.resource_version = Some(file::version_of(text.as_bytes()));
    Ok(obj)
}

/// Removes the files defining the key's name and returns the object they held.
///
/// A file that cannot be read is left alone: there is no last state to return.
pub(crate) fn delete<K: FsKind>(
    defs: &Definitions,
    key: &ObjectKey,
) -> Result<Object<K>, StoreError> {
    let not_found = || StoreError::not_found(K::KIND, key);
    if !is_file_name(&key.name) {
        return Err(not_found());
    }
    let entries = defs.read_name::<K>(&key.name)?;
    // A second file of the same name (`x.yml` next to `x.yaml`) goes too: it would otherwise
    // become the definition of the deleted name.
    let paths: Vec<PathBuf> = entries.iter().map(|e| defs.resolve(&e.file.path)).collect();
    let Some(first) = entries.into_iter().next() else {
        return Err(not_found());
    };
    let obj = first.result.map_err(|e| store_error(defs, e))?;
    if obj.key() != *key {
        return Err(not_found());
    }
    for path in &paths {
        file::remove(path)?;
    }
    Ok(obj)
}

/// Replaces the status of an existing object; writes nothing when it is unchanged.
///
/// Only the file's `status:` block is rewritten when the rest of the file can be kept as it
/// is (comments and formatting included); otherwise the whole file is rendered anew.
pub(crate) fn set_status<K: FsKind>(
    defs: &Definitions,
    key: &ObjectKey,
    status: K::Status,
) -> Result<Object<K>, StoreError> {
    let not_found = || StoreError::not_found(K::KIND, key);
    if !is_file_name(&key.name) {
        return Err(not_found());
    }
    let Some(entry) = defs.read_name::<K>(&key.name)?.into_iter().next() else {
        return Err(not_found());
    };
    let Entry {
        file: def_file,
        text,
        result,
        ..
    } = entry;
    let old = result.map_err(|e| store_error(defs, e))?;
    if old.key() != *key {
        return Err(not_found());
    }
    if old.status.as_ref() == Some(&status) {
        return Ok(old);
    }
    let mut next = old;
    next.status = Some(status);
    let text = match spliced(defs, &def_file, text.as_deref(), &next)? {
        Some(text) => text,
        None => render(&next)?,
    };
    file::replace(&defs.resolve(&def_file.path), text.as_bytes())?;
    next.metadata.resource_version = Some(file::version_of(text.as_bytes()));
    Ok(next)
}

/// The file's text with only its status block replaced, when that reads back as `next`.
fn spliced<K: FsKind>(
    defs: &Definitions,
    def_file: &DefinitionFile,
    text: Option<&str>,
    next: &Object<K>,
) -> Result<Option<String>, StoreError> {
    let (Some(text), Some(status)) = (text, &next.status) else {
        return Ok(None);
    };
    let candidate = splice_status(text, &render_status::<K>(status)?);
    let version = file::version_of(candidate.as_bytes());
    let same = defs
        .decode::<K>(def_file, &candidate, &version)
        .is_ok_and(|read| {
            let mut meta = read.metadata.clone();
            meta.resource_version
                .clone_from(&next.metadata.resource_version);
            meta == next.metadata && read.spec == next.spec && read.status == next.status
        });
    Ok(same.then_some(candidate))
}

/// Applies the store's defaults and checks an object about to be written: the namespace
/// defaults to the store's, the name must be usable as a file name, the spec must be valid.
fn prepare<K: FsKind>(defs: &Definitions, mut obj: Object<K>) -> Result<Object<K>, StoreError> {
    if obj.metadata.namespace.as_deref().is_none_or(str::is_empty) {
        obj.metadata.namespace = Some(defs.namespace().to_owned());
    }
    obj.metadata.resource_version = None;
    let mut errors = ValidationErrors::new();
    if let Err(violation) = check_name(obj.name()) {
        errors.push(violation.path, violation.rule);
    }
    if let Err(spec_errors) = K::validate(K::to_written(&obj.spec), &obj.metadata, defs.ctx()) {
        errors.extend(spec_errors);
    }
    errors.into_result(obj).map_err(StoreError::from)
}

/// Whether `name` can be a definition file's stem: the resource name rule of every mode.
fn is_file_name(name: &str) -> bool {
    is_valid_name(name)
}

/// The file a new definition of `name` is written to: `<dir>/<name>.yaml`.
fn new_file<K: FsKind>(defs: &Definitions, name: &str) -> DefinitionFile {
    let mut candidates = defs.candidates::<K>(name);
    candidates.swap_remove(0)
}

/// A file that cannot be read, as the error of an operation that needed its object: I/O
/// failures are [`StoreError::Backend`], everything else [`StoreError::Codec`] with every
/// problem and the absolute path.
pub(crate) fn store_error(defs: &Definitions, error: LoadError) -> StoreError {
    match error {
        LoadError::Read { path, source } if source.kind() != std::io::ErrorKind::InvalidData => {
            FileError::backend("read", &defs.resolve(&path))(source)
        }
        other => StoreError::Codec {
            message: defs.absolute(other).to_string(),
        },
    }
}
