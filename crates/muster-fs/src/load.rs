//! Loading a whole config directory at once: `config.yaml` and every definition file.
//!
//! Start with [`ConfigDir::load`]. Every file gets its own result, so one broken file never
//! hides the others; only a directory that cannot be read at all fails the whole load.

mod definition;
mod error;

use std::path::{Path, PathBuf};

use muster_core::config::MusterConfig;
use muster_core::{McpServer, Mode, Object, ValidationContext, ValidationErrors, Workflow};

pub use error::{LoadDirError, LoadError, Problem};

use crate::codec::from_yaml;
use crate::layout::{CONFIG_FILE, DefinitionFile, Layout};
use crate::store::FsKind as Definition;
use definition::load_definition;

/// A muster config directory in filesystem mode.
///
/// ```no_run
/// use muster_fs::ConfigDir;
///
/// let loaded = ConfigDir::new("/home/me/.config/muster").load()?;
/// for server in &loaded.mcp_servers {
///     match &server.result {
///         Ok(obj) => println!("{}: {:?}", server.name, obj.spec.server_type()),
///         Err(err) => eprintln!("{err}"),
///     }
/// }
/// # Ok::<(), muster_fs::LoadDirError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigDir {
    layout: Layout,
}

/// Everything read from a config directory.
#[derive(Debug)]
#[non_exhaustive]
pub struct LoadedConfig {
    /// The config directory; every path below is relative to it.
    pub root: PathBuf,
    /// `config.yaml`.
    pub config: ConfigFile,
    /// Every MCPServer definition, sorted by name.
    pub mcp_servers: Vec<Loaded<Object<McpServer>>>,
    /// Every Workflow definition, sorted by name.
    pub workflows: Vec<Loaded<Object<Workflow>>>,
}

/// The result of reading `config.yaml`.
#[derive(Debug)]
#[non_exhaustive]
pub struct ConfigFile {
    /// `config.yaml`, relative to the config directory.
    pub path: PathBuf,
    /// Whether the file exists; when it does not, the config is the default one.
    pub present: bool,
    /// The config, or why it could not be read.
    pub result: Result<MusterConfig, LoadError>,
}

/// One definition file and what became of it.
#[derive(Debug)]
#[non_exhaustive]
pub struct Loaded<T> {
    /// The resource name: the file name without extension.
    pub name: String,
    /// The file, relative to the config directory.
    pub path: PathBuf,
    /// The object with its validated spec (and the file's `status:`, when present), or every
    /// problem of the file.
    pub result: Result<T, LoadError>,
}

// === impl ConfigDir ===

impl ConfigDir {
    /// The config directory at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            layout: Layout::new(root),
        }
    }

    /// The directory's layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Reads `config.yaml` and every MCPServer and Workflow definition.
    ///
    /// Definitions are validated for filesystem mode. Their namespace defaults to the one
    /// `config.yaml` configures (`default` unless set), which is also muster's own namespace
    /// for the rules that depend on it.
    pub fn load(&self) -> Result<LoadedConfig, LoadDirError> {
        self.load_in(Mode::Filesystem)
    }

    /// Like [`load`](Self::load), validating the definitions with the rules of `mode`
    /// (Kubernetes mode refuses stdio servers and credentials in `headers` or `url`).
    pub fn load_in(&self, mode: Mode) -> Result<LoadedConfig, LoadDirError> {
        let root = self.layout.root();
        match std::fs::metadata(root) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(LoadDirError::NotADirectory {
                    path: root.to_owned(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LoadDirError::NotFound {
                    path: root.to_owned(),
                });
            }
            Err(source) => {
                return Err(LoadDirError::List {
                    path: root.to_owned(),
                    source,
                });
            }
        }
        let config = self.load_config();
        let namespace = match &config.result {
            Ok(cfg) => cfg.namespace().to_owned(),
            Err(_) => muster_core::DEFAULT_NAMESPACE.to_owned(),
        };
        let ctx = ValidationContext {
            mode,
            muster_namespace: namespace,
        };
        Ok(LoadedConfig {
            root: root.to_owned(),
            config,
            mcp_servers: self.load_kind::<McpServer>(&ctx)?,
            workflows: self.load_kind::<Workflow>(&ctx)?,
        })
    }

    fn load_config(&self) -> ConfigFile {
        let path = PathBuf::from(CONFIG_FILE);
        let (present, result) = match std::fs::read_to_string(self.layout.config_file()) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                (false, Ok(MusterConfig::default()))
            }
            Err(source) => (
                true,
                Err(LoadError::Read {
                    path: path.clone(),
                    source,
                }),
            ),
            Ok(text) => (
                true,
                from_yaml::<MusterConfig>(&text)
                    .map_err(|error| LoadError::Parse {
                        path: path.clone(),
                        error,
                    })
                    .and_then(|config| refuse_unsupported(&path, config)),
            ),
        };
        ConfigFile {
            path,
            present,
            result,
        }
    }

    fn load_kind<K: Definition>(
        &self,
        ctx: &ValidationContext,
    ) -> Result<Vec<Loaded<Object<K>>>, LoadDirError> {
        let files = self
            .layout
            .definition_files::<K>()
            .map_err(|source| LoadDirError::List {
                path: self.layout.definitions_dir::<K>(),
                source,
            })?;
        let mut loaded = Vec::with_capacity(files.len());
        let mut previous: Option<&DefinitionFile> = None;
        for file in &files {
            // Files come sorted by name and then `.yaml` before `.yml`, so a name defined twice
            // is read from its `.yaml` file and the other one is reported.
            let result = match previous.filter(|p| p.name == file.name) {
                Some(first) => Err(LoadError::Duplicate {
                    path: file.path.clone(),
                    name: file.name.clone(),
                    first: first.path.clone(),
                }),
                None => load_definition::<K>(&self.layout, file, ctx),
            };
            if previous.is_none_or(|p| p.name != file.name) {
                previous = Some(file);
            }
            loaded.push(Loaded {
                name: file.name.clone(),
                path: file.path.clone(),
                result,
            });
        }
        Ok(loaded)
    }
}

/// A configuration with settings this muster cannot honour, or with a bound out of its
/// range, is an error naming each, so `muster validate` and `muster serve` refuse it alike.
fn refuse_unsupported(path: &Path, config: MusterConfig) -> Result<MusterConfig, LoadError> {
    let mut unsupported = config.unsupported_settings();
    unsupported.extend(config.aggregator.limits.problems());
    unsupported.extend(config.namespace_problems());
    if unsupported.is_empty() {
        return Ok(config);
    }
    let mut errors = ValidationErrors::new();
    for violation in unsupported {
        errors.push(violation.path, violation.rule);
    }
    Err(LoadError::Invalid {
        path: path.to_owned(),
        errors,
    })
}

// === impl LoadedConfig ===

impl LoadedConfig {
    /// Whether every file loaded without a problem.
    pub fn is_valid(&self) -> bool {
        self.config.result.is_ok()
            && self.mcp_servers.iter().all(Loaded::is_ok)
            && self.workflows.iter().all(Loaded::is_ok)
    }

    /// The config, or the default config when `config.yaml` is absent or broken.
    pub fn config_or_default(&self) -> MusterConfig {
        self.config
            .result
            .as_ref()
            .map_or_else(|_| MusterConfig::default(), Clone::clone)
    }

    /// The MCPServers that loaded without a problem.
    pub fn valid_mcp_servers(&self) -> impl Iterator<Item = &Object<McpServer>> {
        self.mcp_servers.iter().filter_map(Loaded::object)
    }

    /// The Workflows that loaded without a problem.
    pub fn valid_workflows(&self) -> impl Iterator<Item = &Object<Workflow>> {
        self.workflows.iter().filter_map(Loaded::object)
    }

    /// Resolves a path held by this result (relative to the config directory).
    pub fn resolve(&self, relative: &Path) -> PathBuf {
        self.root.join(relative)
    }
}

// === impl Loaded ===

impl<T> Loaded<T> {
    /// Whether the file loaded without a problem.
    pub fn is_ok(&self) -> bool {
        self.result.is_ok()
    }

    /// The loaded value, when the file had no problem.
    pub fn object(&self) -> Option<&T> {
        self.result.as_ref().ok()
    }

    /// The error, when the file had a problem.
    pub fn error(&self) -> Option<&LoadError> {
        self.result.as_ref().err()
    }
}

#[cfg(test)]
mod tests;
