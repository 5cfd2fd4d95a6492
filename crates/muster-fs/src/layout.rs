//! The directory conventions of a muster config directory.
//!
//! ```text
//! <root>/
//! ├── config.yaml                       main config, optional
//! ├── mcpservers/<name>.yaml            MCPServer resources
//! ├── workflows/<name>.yaml             Workflow resources
//! ├── workflow_executions/<id>.yaml     execution records
//! └── events/                           event log
//! ```
//!
//! A definition's resource name is its file name without the extension. Both `.yaml` and
//! `.yml` are read; hidden files (starting with `.`, such as editor lock files) and
//! subdirectories are not.

use std::io;
use std::path::{Path, PathBuf};

use muster_core::{McpServer, Workflow};

/// The main config file, relative to the root.
pub const CONFIG_FILE: &str = "config.yaml";
/// The directory of MCPServer definitions, relative to the root.
pub const MCPSERVERS_DIR: &str = "mcpservers";
/// The directory of Workflow definitions, relative to the root.
pub const WORKFLOWS_DIR: &str = "workflows";
/// The directory of workflow execution records, relative to the root.
pub const WORKFLOW_EXECUTIONS_DIR: &str = "workflow_executions";
/// The directory of the event log, relative to the root.
pub const EVENTS_DIR: &str = "events";
/// The extension new definition files are written with.
pub const DEFAULT_EXTENSION: &str = "yaml";
/// Every extension a definition file may have, in order of precedence.
pub const EXTENSIONS: [&str; 2] = ["yaml", "yml"];

/// A resource kind stored as one file per object in a directory of its own.
pub trait DefinitionDir {
    /// The directory, relative to the root.
    const DIR: &'static str;
}

impl DefinitionDir for McpServer {
    const DIR: &'static str = MCPSERVERS_DIR;
}

impl DefinitionDir for Workflow {
    const DIR: &'static str = WORKFLOWS_DIR;
}

/// One definition file found in a kind's directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DefinitionFile {
    /// The resource name: the file name without its extension.
    pub name: String,
    /// The path relative to the root, e.g. `mcpservers/everything.yaml`.
    pub path: PathBuf,
}

/// The paths of one config directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The layout of the config directory at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The config directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/config.yaml`.
    pub fn config_file(&self) -> PathBuf {
        self.root.join(CONFIG_FILE)
    }

    /// `<root>/mcpservers`.
    pub fn mcpservers_dir(&self) -> PathBuf {
        self.root.join(MCPSERVERS_DIR)
    }

    /// `<root>/workflows`.
    pub fn workflows_dir(&self) -> PathBuf {
        self.root.join(WORKFLOWS_DIR)
    }

    /// `<root>/workflow_executions`.
    pub fn workflow_executions_dir(&self) -> PathBuf {
        self.root.join(WORKFLOW_EXECUTIONS_DIR)
    }

    /// `<root>/events`.
    pub fn events_dir(&self) -> PathBuf {
        self.root.join(EVENTS_DIR)
    }

    /// The directory holding the definitions of kind `K`.
    pub fn definitions_dir<K: DefinitionDir>(&self) -> PathBuf {
        self.root.join(K::DIR)
    }

    /// The path a new definition named `name` of kind `K` is written to: `<dir>/<name>.yaml`.
    pub fn definition_path<K: DefinitionDir>(&self, name: &str) -> PathBuf {
        self.definitions_dir::<K>()
            .join(format!("{name}.{DEFAULT_EXTENSION}"))
    }

    /// Resolves a path relative to the root, as held by [`DefinitionFile::path`].
    pub fn resolve(&self, relative: &Path) -> PathBuf {
        self.root.join(relative)
    }

    /// Every definition file of kind `K`, sorted by name and then by extension precedence
    /// (`.yaml` before `.yml`).
    ///
    /// A missing directory holds no definitions and is not an error.
    pub fn definition_files<K: DefinitionDir>(&self) -> io::Result<Vec<DefinitionFile>> {
        let dir = self.definitions_dir::<K>();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                continue;
            }
            let file_name = entry.file_name();
            let Some((name, ext)) = file_name.to_str().and_then(split_definition_name) else {
                continue;
            };
            files.push((
                name.to_owned(),
                extension_rank(ext),
                Path::new(K::DIR).join(&file_name),
            ));
        }
        files.sort();
        Ok(files
            .into_iter()
            .map(|(name, _, path)| DefinitionFile { name, path })
            .collect())
    }
}

/// Splits a definition file name into resource name and extension.
///
/// Returns `None` for names that are not definitions: other extensions, hidden files and an
/// empty stem.
pub fn split_definition_name(file_name: &str) -> Option<(&str, &str)> {
    if file_name.starts_with('.') {
        return None;
    }
    let (stem, ext) = file_name.rsplit_once('.')?;
    (!stem.is_empty() && EXTENSIONS.contains(&ext)).then_some((stem, ext))
}

fn extension_rank(ext: &str) -> usize {
    EXTENSIONS
        .iter()
        .position(|e| *e == ext)
        .unwrap_or(EXTENSIONS.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_names() {
        assert_eq!(
            split_definition_name("everything.yaml"),
            Some(("everything", "yaml"))
        );
        assert_eq!(split_definition_name("a.b.yml"), Some(("a.b", "yml")));
        for skipped in [
            "notes.txt",
            ".hidden.yaml",
            ".yaml",
            "yaml",
            "x.YAML",
            "x.yaml.swp",
        ] {
            assert_eq!(split_definition_name(skipped), None, "{skipped}");
        }
    }

    #[test]
    fn paths() {
        let layout = Layout::new("/etc/muster");
        assert_eq!(layout.config_file(), Path::new("/etc/muster/config.yaml"));
        assert_eq!(
            layout.definitions_dir::<McpServer>(),
            Path::new("/etc/muster/mcpservers")
        );
        assert_eq!(
            layout.definition_path::<Workflow>("deploy"),
            Path::new("/etc/muster/workflows/deploy.yaml")
        );
        assert_eq!(
            layout.workflow_executions_dir(),
            Path::new("/etc/muster/workflow_executions")
        );
        assert_eq!(layout.events_dir(), Path::new("/etc/muster/events"));
    }

    #[test]
    fn lists_definition_files_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let servers = dir.path().join(MCPSERVERS_DIR);
        std::fs::create_dir_all(servers.join("nested")).unwrap();
        for f in [
            "b.yaml",
            "a.yml",
            "a.yaml",
            "c.json",
            ".d.yaml",
            "nested/e.yaml",
        ] {
            std::fs::write(servers.join(f), "").unwrap();
        }
        let files = Layout::new(dir.path())
            .definition_files::<McpServer>()
            .unwrap();
        let got: Vec<_> = files
            .iter()
            .map(|f| (f.name.as_str(), f.path.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", PathBuf::from("mcpservers/a.yaml")),
                ("a", PathBuf::from("mcpservers/a.yml")),
                ("b", PathBuf::from("mcpservers/b.yaml")),
            ]
        );
        assert!(
            Layout::new(dir.path())
                .definition_files::<Workflow>()
                .unwrap()
                .is_empty()
        );
    }
}
