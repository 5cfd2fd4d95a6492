//! Finding and reading the definition files of one kind, with the loader's rules: `.yaml`
//! before `.yml`, hidden files skipped, a name defined twice read from its `.yaml` file.

use std::path::{Path, PathBuf};

use muster_core::{API_VERSION, Object, StoreError, ValidationContext};

use super::file::{self, FileError};
use super::kind::FsKind;
use crate::document::{DecodeError, Expected, decode_document};
use crate::layout::{DefinitionFile, EXTENSIONS, Layout};
use crate::load::LoadError;

/// One definition file and what it holds.
#[derive(Debug)]
pub(crate) struct Entry<K: FsKind> {
    /// The resource name and the path relative to the config directory.
    pub(crate) file: DefinitionFile,
    /// The content, when it could be read as text.
    pub(crate) text: Option<String>,
    /// The resource version of the content; empty when the file could not be read.
    pub(crate) version: String,
    /// The object, or every problem of the file.
    pub(crate) result: Result<Object<K>, LoadError>,
}

/// The definitions of kind `K` in one config directory.
#[derive(Debug)]
pub(crate) struct Definitions {
    layout: Layout,
    dir: PathBuf,
    ctx: ValidationContext,
}

impl Definitions {
    /// The definitions of kind `K` under `layout`, read with `namespace` as the default.
    pub(crate) fn new<K: FsKind>(layout: Layout, namespace: String) -> Self {
        let dir = layout.definitions_dir::<K>();
        let ctx = ValidationContext {
            muster_namespace: namespace,
            ..ValidationContext::filesystem()
        };
        Self { layout, dir, ctx }
    }

    /// The config directory's layout.
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The directory of the definitions.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The namespace of definitions that do not name one.
    pub(crate) fn namespace(&self) -> &str {
        &self.ctx.muster_namespace
    }

    /// The validation context of reads and writes.
    pub(crate) fn ctx(&self) -> &ValidationContext {
        &self.ctx
    }

    /// The files that may define `name`, in order of precedence (`.yaml`, then `.yml`), as
    /// paths relative to the config directory.
    pub(crate) fn candidates<K: FsKind>(&self, name: &str) -> Vec<DefinitionFile> {
        EXTENSIONS
            .iter()
            .map(|ext| DefinitionFile {
                name: name.to_owned(),
                path: Path::new(K::DIR).join(format!("{name}.{ext}")),
            })
            .collect()
    }

    /// Every existing file defining `name`: none, one, or two when both extensions are used,
    /// the second then being reported as a duplicate.
    pub(crate) fn read_name<K: FsKind>(&self, name: &str) -> Result<Vec<Entry<K>>, StoreError> {
        let mut entries = Vec::new();
        for file in self.candidates::<K>(name) {
            if let Some(entry) = self.read_file(file, entries.first())? {
                entries.push(entry);
            }
        }
        Ok(entries)
    }

    /// Every definition file of the directory, sorted by name (`.yaml` before `.yml`); a
    /// missing directory holds none.
    pub(crate) fn read_all<K: FsKind>(&self) -> Result<Vec<Entry<K>>, StoreError> {
        let files = self
            .layout
            .definition_files::<K>()
            .map_err(FileError::backend("list", &self.dir))?;
        let mut entries: Vec<Entry<K>> = Vec::with_capacity(files.len());
        for file in files {
            let first = entries.last().filter(|e| e.file.name == file.name);
            if let Some(entry) = self.read_file(file, first)? {
                entries.push(entry);
            }
        }
        Ok(entries)
    }

    /// Reads one file; `None` when it does not exist. With `first`, the file defining the
    /// same name with precedence, the file is a duplicate and not decoded.
    fn read_file<K: FsKind>(
        &self,
        file: DefinitionFile,
        first: Option<&Entry<K>>,
    ) -> Result<Option<Entry<K>>, StoreError> {
        let full = self.layout.resolve(&file.path);
        let bytes = match file::read(&full) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(None),
            Err(source) => {
                let path = file.path.clone();
                return Ok(Some(Entry {
                    file,
                    text: None,
                    version: String::new(),
                    result: Err(LoadError::Read { path, source }),
                }));
            }
        };
        let version = file::version_of(&bytes);
        let (text, result) = match (first, String::from_utf8(bytes)) {
            (Some(first), text) => (
                text.ok(),
                Err(LoadError::Duplicate {
                    path: file.path.clone(),
                    name: file.name.clone(),
                    first: first.file.path.clone(),
                }),
            ),
            (None, Ok(text)) => {
                let result = self.decode(&file, &text, &version);
                (Some(text), result)
            }
            (None, Err(e)) => (
                None,
                Err(LoadError::Read {
                    path: file.path.clone(),
                    source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
                }),
            ),
        };
        Ok(Some(Entry {
            file,
            text,
            version,
            result,
        }))
    }

    /// Decodes and validates a definition's text the way the loader does, then sets the
    /// store's bookkeeping: the resource version, and generation 1 when the file has none.
    pub(crate) fn decode<K: FsKind>(
        &self,
        file: &DefinitionFile,
        text: &str,
        version: &str,
    ) -> Result<Object<K>, LoadError> {
        let path = file.path.clone();
        let expected = Expected {
            kind: K::KIND,
            name: &file.name,
            namespace: &self.ctx.muster_namespace,
        };
        let (document, mut errors) = match decode_document::<K::Written, K::Status>(text, &expected)
        {
            Ok(decoded) => decoded,
            Err(DecodeError::Parse(error)) => return Err(LoadError::Parse { path, error }),
            Err(DecodeError::Envelope(errors)) => {
                return Err(LoadError::Invalid { path, errors });
            }
        };
        let spec = match K::validate(document.spec, &document.metadata, &self.ctx) {
            Ok(spec) if errors.is_empty() => spec,
            Ok(_) => return Err(LoadError::Invalid { path, errors }),
            Err(spec_errors) => {
                errors.extend(spec_errors);
                return Err(LoadError::Invalid { path, errors });
            }
        };
        let mut metadata = document.metadata;
        metadata.resource_version = Some(version.to_owned());
        metadata.generation.get_or_insert(1);
        Ok(Object {
            api_version: API_VERSION.to_owned(),
            kind: K::KIND.to_owned(),
            metadata,
            spec,
            status: document.status,
        })
    }

    /// The absolute path of a file named by a path relative to the config directory.
    pub(crate) fn resolve(&self, relative: &Path) -> PathBuf {
        self.layout.resolve(relative)
    }

    /// `error` with its path made absolute, for messages shown outside the store.
    pub(crate) fn absolute(&self, error: LoadError) -> LoadError {
        match error {
            LoadError::Read { path, source } => LoadError::Read {
                path: self.resolve(&path),
                source,
            },
            LoadError::Parse { path, error } => LoadError::Parse {
                path: self.resolve(&path),
                error,
            },
            LoadError::Invalid { path, errors } => LoadError::Invalid {
                path: self.resolve(&path),
                errors,
            },
            LoadError::Duplicate { path, name, first } => LoadError::Duplicate {
                path: self.resolve(&path),
                name,
                first: self.resolve(&first),
            },
        }
    }
}
