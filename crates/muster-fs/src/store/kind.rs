//! [`FsKind`]: what the file store needs to know about a kind beyond its directory.

use muster_core::resource::mcp_server::McpServerDefinition;
use muster_core::resource::workflow::WorkflowSpec;
use muster_core::{Kind, McpServer, Meta, ValidationContext, ValidationErrors, Workflow};
use serde::de::DeserializeOwned;

use crate::layout::DefinitionDir;

/// A kind stored by [`FsStore`](crate::FsStore): one definition file per object in
/// [`DefinitionDir::DIR`], its spec written in [`FsKind::Written`] form.
///
/// Implemented by [`McpServer`] and [`Workflow`].
pub trait FsKind: Kind + DefinitionDir {
    /// The spec as written in a file, before validation.
    type Written: DeserializeOwned;

    /// Validates a written spec for the object described by `metadata`, returning every
    /// violation with its field path under `spec.`.
    fn validate(
        written: Self::Written,
        metadata: &Meta,
        ctx: &ValidationContext,
    ) -> Result<Self::Spec, ValidationErrors>;

    /// The written form of a spec, to validate it before it is stored.
    fn to_written(spec: &Self::Spec) -> Self::Written;
}

impl FsKind for McpServer {
    type Written = McpServerDefinition;

    fn validate(
        written: McpServerDefinition,
        metadata: &Meta,
        ctx: &ValidationContext,
    ) -> Result<Self::Spec, ValidationErrors> {
        written.validate_named(&metadata.name, metadata.namespace_or_default(), ctx)
    }

    fn to_written(spec: &Self::Spec) -> McpServerDefinition {
        McpServerDefinition::from(spec.clone())
    }
}

impl FsKind for Workflow {
    type Written = WorkflowSpec;

    fn validate(
        written: WorkflowSpec,
        _metadata: &Meta,
        _ctx: &ValidationContext,
    ) -> Result<Self::Spec, ValidationErrors> {
        written.validate().map(|()| written)
    }

    fn to_written(spec: &WorkflowSpec) -> WorkflowSpec {
        spec.clone()
    }
}
