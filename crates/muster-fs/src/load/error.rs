//! What can be wrong with one file of a config directory, and with the directory itself.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use muster_core::ValidationErrors;

use crate::codec::{Location, ParseError};

/// Why one file of a config directory could not be loaded.
///
/// Paths are relative to the config directory, e.g. `mcpservers/bad.yaml`. `Display` gives
/// one line per problem, each starting with the path (and the line and column when known):
///
/// ```text
/// mcpservers/bad.yaml:3:7: spec.timeout: invalid type: string "x", expected i64
/// mcpservers/bad.yaml: spec.url: url is required for streamable-http and sse types
/// ```
///
/// [`problems`](Self::problems) gives the same lines without the path, for a caller that has
/// already named the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The YAML is malformed, or a field has the wrong type.
    #[error("{}", parse_line(.path, .error))]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where and what.
        #[source]
        error: ParseError,
    },
    /// The file parsed, but breaks rules of the envelope or of the spec.
    #[error("{}", violation_lines(.path, .errors))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Every violation, each with its field path.
        errors: ValidationErrors,
    },
    /// Another file in the same directory defines the same name (`x.yaml` next to `x.yml`);
    /// the `.yaml` file is the one that is read.
    #[error("{}: {name} is already defined by {}", .path.display(), .first.display())]
    Duplicate {
        /// The file that is not read.
        path: PathBuf,
        /// The resource name both files define.
        name: String,
        /// The file that is read.
        first: PathBuf,
    },
}

/// One problem of a file, without the file's path.
///
/// Displays as `spec.timeout: invalid type: string "x", expected i64 (line 3, column 7)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The field path, e.g. `spec.url`; empty when the problem is not about one field.
    pub field: String,
    /// The rule broken or the parser's complaint.
    pub message: String,
    /// Where in the file, when known.
    pub location: Option<Location>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)?;
        if let Some(at) = self.location {
            write!(f, " (line {}, column {})", at.line, at.column)?;
        }
        Ok(())
    }
}

impl LoadError {
    /// The file the error is about, relative to the config directory.
    pub fn path(&self) -> &Path {
        match self {
            Self::Read { path, .. }
            | Self::Parse { path, .. }
            | Self::Invalid { path, .. }
            | Self::Duplicate { path, .. } => path,
        }
    }

    /// Every problem, in the order found. A parse error is one problem; a validation error
    /// has one problem per violation.
    pub fn problems(&self) -> Vec<Problem> {
        match self {
            Self::Read { source, .. } => vec![Problem {
                field: String::new(),
                message: format!("cannot read: {source}"),
                location: None,
            }],
            Self::Parse { error, .. } => vec![Problem {
                field: error.field.clone(),
                message: error.message.clone(),
                location: error.location,
            }],
            Self::Invalid { errors, .. } => errors
                .violations()
                .iter()
                .map(|v| Problem {
                    field: v.path.clone(),
                    message: v.rule.clone(),
                    location: None,
                })
                .collect(),
            Self::Duplicate { name, first, .. } => vec![Problem {
                field: String::new(),
                message: format!("{name} is already defined by {}", first.display()),
                location: None,
            }],
        }
    }
}

/// `path:3:7: field: message`, or `path: field: message` without a location.
fn parse_line(path: &Path, error: &ParseError) -> String {
    let sep = if error.location.is_some() { ":" } else { ": " };
    format!("{}{sep}{error}", path.display())
}

/// One `path: field: rule` line per violation.
fn violation_lines(path: &Path, errors: &ValidationErrors) -> String {
    let lines: Vec<String> = errors
        .violations()
        .iter()
        .map(|v| format!("{}: {v}", path.display()))
        .collect();
    lines.join("\n")
}

/// Why a config directory could not be read at all.
///
/// Problems of single files are never this error: they are reported per file as
/// [`LoadError`]s and leave every other file unaffected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadDirError {
    /// The config directory does not exist.
    #[error("config directory {} does not exist", .path.display())]
    NotFound {
        /// The directory.
        path: PathBuf,
    },
    /// The config path exists but is not a directory.
    #[error("config path {} is not a directory", .path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// A directory could not be listed.
    #[error("cannot list {}: {source}", .path.display())]
    List {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_error_display() {
        let err = LoadError::Parse {
            path: PathBuf::from("mcpservers/bad.yaml"),
            error: ParseError {
                field: "spec.timeout".to_owned(),
                message: "invalid type: string \"x\", expected i64".to_owned(),
                location: Some(Location { line: 3, column: 7 }),
            },
        };
        assert_eq!(
            err.to_string(),
            "mcpservers/bad.yaml:3:7: spec.timeout: invalid type: string \"x\", expected i64"
        );
        assert_eq!(
            err.problems()[0].to_string(),
            "spec.timeout: invalid type: string \"x\", expected i64 (line 3, column 7)"
        );
    }

    #[test]
    fn invalid_display_has_one_line_per_violation() {
        let mut errors = ValidationErrors::new();
        errors.push("spec.url", "url is required");
        errors.push("spec.env", "refused");
        let err = LoadError::Invalid {
            path: PathBuf::from("mcpservers/x.yaml"),
            errors,
        };
        assert_eq!(
            err.to_string(),
            "mcpservers/x.yaml: spec.url: url is required\nmcpservers/x.yaml: spec.env: refused"
        );
        let problems: Vec<String> = err.problems().iter().map(ToString::to_string).collect();
        assert_eq!(problems, ["spec.url: url is required", "spec.env: refused"]);
    }
}
