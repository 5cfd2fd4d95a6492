//! The resource envelope of a definition file: `apiVersion`, `kind`, `metadata`, `spec` and an
//! optional `status`.
//!
//! A definition file is a full resource, as `kubectl` would take it. A flat file, with the spec
//! fields at the top level, is refused with a message that says so rather than read as an
//! empty spec.

use muster_core::{API_VERSION, Meta, ValidationErrors};
use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};

use crate::codec::{ParseError, from_yaml};

/// A definition as read from a file: metadata, the spec in document form and the status.
#[derive(Debug, Clone, PartialEq)]
pub struct Document<S, St> {
    /// The metadata, with the name taken from the file and the namespace defaulted.
    pub metadata: Meta,
    /// The spec as written, not yet validated.
    pub spec: S,
    /// The `status:` block, when the file has one.
    pub status: Option<St>,
}

/// What a definition file must declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected<'a> {
    /// The `kind`, e.g. `MCPServer`.
    pub kind: &'a str,
    /// The resource name, i.e. the file name without extension.
    pub name: &'a str,
    /// The namespace used when `metadata.namespace` is absent.
    pub namespace: &'a str,
}

/// Why a definition file could not be read as a document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The YAML is malformed, or a field has the wrong type.
    #[error(transparent)]
    Parse(ParseError),
    /// The envelope is wrong in a way that stops the spec from being read: not a full
    /// resource, or another kind.
    #[error("{0}")]
    Envelope(ValidationErrors),
}

/// The envelope alone, read first so that a wrong `kind` or a missing `spec` is reported as
/// such instead of as type errors inside a spec of the wrong shape.
#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    expecting = "a resource with apiVersion, kind, metadata and spec"
)]
struct Envelope {
    api_version: Option<String>,
    kind: Option<String>,
    metadata: Option<Meta>,
    spec: Option<IgnoredAny>,
}

/// The typed part, read once the envelope is known to be right.
#[derive(Deserialize)]
struct Body<S, St> {
    spec: S,
    status: Option<St>,
}

/// Reads a definition file's text as a document of the expected kind and name.
///
/// Returns the document together with envelope violations that do not stop the spec from
/// being read (a wrong `apiVersion`, a `metadata.name` that differs from the file name), so the
/// caller can report them along with the spec's own violations.
pub fn decode_document<S: DeserializeOwned, St: DeserializeOwned>(
    text: &str,
    expected: &Expected<'_>,
) -> Result<(Document<S, St>, ValidationErrors), DecodeError> {
    let envelope: Envelope = from_yaml(text).map_err(DecodeError::Parse)?;
    let (violations, blocking) = check_envelope(&envelope, expected);
    if blocking {
        return Err(DecodeError::Envelope(violations));
    }
    let body: Body<S, St> = from_yaml(text).map_err(DecodeError::Parse)?;
    let mut metadata = envelope.metadata.unwrap_or_default();
    if metadata.name.is_empty() {
        expected.name.clone_into(&mut metadata.name);
    }
    if metadata.namespace.as_deref().is_none_or(str::is_empty) {
        metadata.namespace = Some(expected.namespace.to_owned());
    }
    Ok((
        Document {
            metadata,
            spec: body.spec,
            status: body.status,
        },
        violations,
    ))
}

/// Every envelope violation, and whether one of them stops the spec from being read.
fn check_envelope(envelope: &Envelope, expected: &Expected<'_>) -> (ValidationErrors, bool) {
    let kind = expected.kind;
    let mut errs = ValidationErrors::new();
    let flat = envelope.api_version.is_none() && envelope.kind.is_none();
    match envelope.api_version.as_deref() {
        Some(API_VERSION) => {}
        None if flat => {}
        None => errs.push(
            "apiVersion",
            format!("is required and must be {API_VERSION}"),
        ),
        Some(other) => errs.push("apiVersion", format!("must be {API_VERSION}, not {other}")),
    }
    let mut blocking = false;
    match envelope.kind.as_deref() {
        Some(k) if k == kind => {}
        None if flat => {}
        None => {
            errs.push("kind", format!("is required and must be {kind}"));
            blocking = true;
        }
        Some(other) => {
            errs.push("kind", format!("must be {kind}, not {other}"));
            blocking = true;
        }
    }
    if let Some(meta) = &envelope.metadata
        && !meta.name.is_empty()
        && meta.name != expected.name
    {
        errs.push(
            "metadata.name",
            format!(
                "must equal the file name {:?}, not {:?}",
                expected.name, meta.name
            ),
        );
    }
    if envelope.spec.is_none() {
        errs.push(
            "spec",
            format!(
                "is required: a definition file must be a full {kind} resource with apiVersion, \
                 kind, metadata and spec: (flat files are not read)"
            ),
        );
        blocking = true;
    }
    (errs, blocking)
}

#[cfg(test)]
mod tests;
