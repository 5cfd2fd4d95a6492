//! Reading and validating one definition file of a given kind.

use muster_core::resource::check_name;
use muster_core::{API_VERSION, Object, ValidationContext};

use super::LoadError;
use crate::document::{DecodeError, Expected, decode_document};
use crate::layout::{DefinitionFile, Layout};
use crate::store::FsKind as Definition;

/// Reads, decodes and validates one definition file.
///
/// Envelope violations (a wrong `apiVersion`, a name that differs from the file name) are
/// reported together with the spec's own violations.
pub(crate) fn load_definition<K: Definition>(
    layout: &Layout,
    file: &DefinitionFile,
    ctx: &ValidationContext,
) -> Result<Object<K>, LoadError> {
    let path = file.path.clone();
    let text = match std::fs::read_to_string(layout.resolve(&file.path)) {
        Ok(text) => text,
        Err(source) => return Err(LoadError::Read { path, source }),
    };
    let expected = Expected {
        kind: K::KIND,
        name: &file.name,
        namespace: &ctx.muster_namespace,
    };
    let (document, mut errors) = match decode_document::<K::Written, K::Status>(&text, &expected) {
        Ok(decoded) => decoded,
        Err(DecodeError::Parse(error)) => return Err(LoadError::Parse { path, error }),
        Err(DecodeError::Envelope(errors)) => return Err(LoadError::Invalid { path, errors }),
    };
    let spec = match K::validate(document.spec, &document.metadata, ctx) {
        Ok(spec) => Some(spec),
        Err(spec_errors) => {
            errors.extend(spec_errors);
            None
        }
    };
    // MCPServer validation checks the name too; report it once.
    if let Err(violation) = check_name(&file.name)
        && !errors.contains(&violation.path, &violation.rule)
    {
        errors.push(violation.path, violation.rule);
    }
    match spec {
        Some(spec) if errors.is_empty() => Ok(Object {
            api_version: API_VERSION.to_owned(),
            kind: K::KIND.to_owned(),
            metadata: document.metadata,
            spec,
            status: document.status,
        }),
        _ => Err(LoadError::Invalid { path, errors }),
    }
}
