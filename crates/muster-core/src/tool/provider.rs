//! [`ToolProvider`]: a catalog of tools plus the service that calls them.

use std::sync::Arc;

use futures_core::future::BoxFuture;
use rmcp::model::{
    CallToolResult, GetPromptResult, JsonObject, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, Tool,
};
use tokio::sync::watch;
use tower::util::BoxCloneSyncService;

use super::{ToolCall, ToolError};

/// A type-erased tool service. `Sync`, so it can live in shared state.
pub type ToolService = BoxCloneSyncService<ToolCall, CallToolResult, ToolError>;

/// Increases whenever a provider's catalog changes; feeds `notifications/*/list_changed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Revision(pub u64);

impl Revision {
    /// The next revision.
    #[must_use]
    pub const fn next(self) -> Self {
        Self(self.0 + 1)
    }
}

/// What a provider offers, as of one revision. Shared as `Arc<Catalog>`; never mutated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    /// The revision this catalog belongs to.
    pub revision: Revision,
    /// Tools, under the names the provider serves them by.
    pub tools: Vec<Tool>,
    /// Prompts.
    pub prompts: Vec<Prompt>,
    /// Concrete resources.
    pub resources: Vec<Resource>,
    /// Resource templates.
    pub resource_templates: Vec<ResourceTemplate>,
}

impl Catalog {
    /// The tool with this name.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// A source of tools: MCP server backends, the core tools, the workflow tools.
///
/// Readers take cheap [`catalog`](Self::catalog) snapshots; the provider publishes a new
/// snapshot and bumps its [`revisions`](Self::revisions) when its tools change.
pub trait ToolProvider: Send + Sync + std::fmt::Debug {
    /// A stable name for logs and errors, e.g. the MCP server name or `core`.
    fn name(&self) -> &str;

    /// The current catalog.
    fn catalog(&self) -> Arc<Catalog>;

    /// Changes of the catalog's revision.
    fn revisions(&self) -> watch::Receiver<Revision>;

    /// The service that calls this provider's tools.
    fn service(&self) -> ToolService;

    /// Renders one of the provider's prompts. Providers without prompts keep the default,
    /// which reports the prompt as unknown.
    fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> BoxFuture<'static, Result<GetPromptResult, ToolError>> {
        let _ = arguments;
        let name = name.to_owned();
        Box::pin(async move { Err(ToolError::UnknownTool { name }) })
    }

    /// Reads one of the provider's resources. Providers without resources keep the default,
    /// which reports the resource as unknown.
    fn read_resource(
        &self,
        uri: &str,
    ) -> BoxFuture<'static, Result<ReadResourceResult, ToolError>> {
        let name = uri.to_owned();
        Box::pin(async move { Err(ToolError::UnknownTool { name }) })
    }
}

/// Answers whether a tool can be called by a given caller: the catalog view of one session.
///
/// The workflow tools use it to decide whether a workflow is available; the aggregator
/// implements it over its catalog and per-session visibility.
pub trait ToolAvailability: Send + Sync + std::fmt::Debug {
    /// Whether `tool` is visible to the caller of `context`.
    fn is_available(&self, tool: &str, context: &super::CallContext) -> bool;
}

/// A fixed set of tool names, available to everyone; for embedders and tests.
#[derive(Debug, Clone, Default)]
pub struct StaticAvailability(pub std::collections::BTreeSet<String>);

impl StaticAvailability {
    /// The set of `names`.
    pub fn of<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> Self {
        Self(names.into_iter().map(Into::into).collect())
    }
}

impl ToolAvailability for StaticAvailability {
    fn is_available(&self, tool: &str, _: &super::CallContext) -> bool {
        self.0.contains(tool)
    }
}
