//! [`AggregatedCatalog`]: one immutable snapshot of everything the aggregator exposes, with
//! the route of every exposed name.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::future::BoxFuture;
use muster_core::tool::{ToolError, ToolProvider};
use rmcp::model::{GetPromptResult, JsonObject, Prompt, ReadResourceResult, Resource, Tool};
use serde_json::Value;

use crate::metrics::CallMeter;

/// Key under a tool's `_meta` holding its discovery labels (an object of strings); the
/// workflow tools put a workflow's `metadata.labels` there.
pub const LABELS_META_KEY: &str = "muster.giantswarm.io/labels";

/// Where an exposed tool comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolOrigin {
    /// One MCP server's tool, under a per-server name.
    Server {
        /// The server name.
        server: String,
    },
    /// A family tool; the instance argument selects the member server.
    Family {
        /// The family name.
        family: String,
    },
    /// A core or workflow provider's tool, exposed under its own name.
    Core {
        /// The provider's name.
        provider: String,
    },
}

/// Where an exposed prompt or resource comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ItemOrigin {
    /// An MCP server.
    Server {
        /// The server name.
        server: String,
    },
    /// A core provider.
    Core {
        /// The provider's name.
        provider: String,
    },
}

/// The provider serving one exposed name and the name it knows the item by.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) provider: Arc<dyn ToolProvider>,
    pub(crate) upstream: Arc<str>,
    /// The metrics of calls through this target, when metrics are on (tools only).
    pub(crate) meter: Option<CallMeter>,
}

impl PartialEq for Target {
    /// Same upstream name on the same provider instance.
    fn eq(&self, other: &Self) -> bool {
        self.upstream == other.upstream
            && std::ptr::addr_eq(Arc::as_ptr(&self.provider), Arc::as_ptr(&other.provider))
    }
}

/// One member of a family tool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FamilyTarget {
    pub(crate) server: String,
    pub(crate) target: Target,
}

/// How a call of an exposed tool is routed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Route {
    /// Straight to one provider.
    Single(Target),
    /// To the member named by the instance argument, which is removed first.
    Family {
        instance_arg: String,
        /// Sorted by server name.
        members: Vec<FamilyTarget>,
    },
}

/// One tool as clients see it, with its origin, labels and route.
#[derive(Debug, Clone, PartialEq)]
pub struct ExposedTool {
    tool: Tool,
    origin: ToolOrigin,
    labels: BTreeMap<String, String>,
    pub(crate) route: Route,
}

impl ExposedTool {
    pub(crate) fn new(tool: Tool, origin: ToolOrigin, route: Route) -> Self {
        let labels = labels_of(&tool);
        Self {
            tool,
            origin,
            labels,
            route,
        }
    }

    /// The tool definition under its exposed name.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }

    /// The exposed name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// The description, `""` when the tool has none.
    pub fn description(&self) -> &str {
        self.tool.description.as_deref().unwrap_or("")
    }

    /// The input schema.
    pub fn input_schema(&self) -> &Arc<JsonObject> {
        &self.tool.input_schema
    }

    /// Where the tool comes from.
    pub fn origin(&self) -> &ToolOrigin {
        &self.origin
    }

    /// Discovery labels (from `_meta`), empty for most tools.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }

    /// For a family tool, the member servers (sorted).
    pub fn family_members(&self) -> Option<Vec<&str>> {
        match &self.route {
            Route::Family { members, .. } => {
                Some(members.iter().map(|m| m.server.as_str()).collect())
            }
            Route::Single(_) => None,
        }
    }
}

/// One prompt as clients see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExposedPrompt {
    prompt: Prompt,
    origin: ItemOrigin,
    target: Target,
}

impl ExposedPrompt {
    pub(crate) fn new(prompt: Prompt, origin: ItemOrigin, target: Target) -> Self {
        Self {
            prompt,
            origin,
            target,
        }
    }

    /// The prompt under its exposed name.
    pub fn prompt(&self) -> &Prompt {
        &self.prompt
    }

    /// The exposed name.
    pub fn name(&self) -> &str {
        &self.prompt.name
    }

    /// Where the prompt comes from.
    pub fn origin(&self) -> &ItemOrigin {
        &self.origin
    }

    /// Renders the prompt through its provider.
    pub fn get(
        &self,
        arguments: Option<JsonObject>,
    ) -> BoxFuture<'static, Result<GetPromptResult, ToolError>> {
        self.target
            .provider
            .get_prompt(&self.target.upstream, arguments)
    }
}

/// One resource as clients see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExposedResource {
    resource: Resource,
    origin: ItemOrigin,
    target: Target,
}

impl ExposedResource {
    pub(crate) fn new(resource: Resource, origin: ItemOrigin, target: Target) -> Self {
        Self {
            resource,
            origin,
            target,
        }
    }

    /// The resource under its exposed URI.
    pub fn resource(&self) -> &Resource {
        &self.resource
    }

    /// The exposed URI.
    pub fn uri(&self) -> &str {
        &self.resource.uri
    }

    /// Where the resource comes from.
    pub fn origin(&self) -> &ItemOrigin {
        &self.origin
    }

    /// Reads the resource through its provider.
    pub fn read(&self) -> BoxFuture<'static, Result<ReadResourceResult, ToolError>> {
        self.target.provider.read_resource(&self.target.upstream)
    }
}

/// Everything the aggregator exposes at one moment, in listing order, with an index by
/// exposed name. Shared as `Arc<AggregatedCatalog>` and never mutated: the registry
/// publishes a new one when its providers change, so readers never rebuild anything.
#[derive(Debug, Default)]
pub struct AggregatedCatalog {
    generation: u64,
    tools: Vec<ExposedTool>,
    tool_index: NameIndex,
    core_tools: usize,
    prompts: Vec<ExposedPrompt>,
    prompt_index: NameIndex,
    resources: Vec<ExposedResource>,
    resource_index: NameIndex,
    /// Per-server names exposed earlier whose server no longer offers them → that server.
    retired: HashMap<String, String>,
}

impl AggregatedCatalog {
    pub(crate) fn new(
        generation: u64,
        tools: Vec<ExposedTool>,
        prompts: Vec<ExposedPrompt>,
        resources: Vec<ExposedResource>,
        retired: HashMap<String, String>,
    ) -> Self {
        let tool_index = index(tools.iter().map(ExposedTool::name));
        let core_tools = tools
            .iter()
            .filter(|t| matches!(t.origin, ToolOrigin::Core { .. }))
            .count();
        let prompt_index = index(prompts.iter().map(ExposedPrompt::name));
        let resource_index = index(resources.iter().map(ExposedResource::uri));
        Self {
            generation,
            tools,
            tool_index,
            core_tools,
            prompts,
            prompt_index,
            resources,
            resource_index,
            retired,
        }
    }

    /// Increases with every published snapshot.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether `other` exposes exactly the same items, routed to the same provider
    /// instances (the generation aside).
    pub(crate) fn same_content(&self, other: &Self) -> bool {
        self.tools == other.tools
            && self.prompts == other.prompts
            && self.resources == other.resources
            && self.retired == other.retired
    }

    /// Every exposed tool: MCP server tools (servers by name), family tools (by family and
    /// tool), then the core providers' tools in provider order.
    pub fn tools(&self) -> &[ExposedTool] {
        &self.tools
    }

    /// The tool exposed under `name`.
    pub fn tool(&self, name: &str) -> Option<&ExposedTool> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    /// Whether a tool is exposed under `name`.
    pub fn contains_tool(&self, name: &str) -> bool {
        self.tool_index.contains_key(name)
    }

    /// How many tools come from core providers.
    pub fn core_tool_count(&self) -> usize {
        self.core_tools
    }

    /// Every exposed prompt.
    pub fn prompts(&self) -> &[ExposedPrompt] {
        &self.prompts
    }

    /// The prompt exposed under `name`.
    pub fn prompt(&self, name: &str) -> Option<&ExposedPrompt> {
        self.prompt_index.get(name).map(|&i| &self.prompts[i])
    }

    /// Every exposed resource.
    pub fn resources(&self) -> &[ExposedResource] {
        &self.resources
    }

    /// The resource exposed under `uri`.
    pub fn resource(&self, uri: &str) -> Option<&ExposedResource> {
        self.resource_index.get(uri).map(|&i| &self.resources[i])
    }

    /// The server that used to expose the per-server tool `name` and no longer does.
    pub fn retired_server(&self, name: &str) -> Option<&str> {
        self.retired.get(name).map(String::as_str)
    }

    /// The per-server names exposed earlier that are gone now, with their former server.
    pub(crate) fn retired(&self) -> &HashMap<String, String> {
        &self.retired
    }

    /// What else than a tool `name` is (`prompt` or `resource`), for "wrong kind" errors.
    pub(crate) fn kind_of(&self, name: &str) -> Option<&'static str> {
        if self.prompt_index.contains_key(name) {
            Some("prompt")
        } else if self.resource_index.contains_key(name) {
            Some("resource")
        } else {
            None
        }
    }
}

/// Positions by name, looked up on every call: hashed with foldhash (seeded per process)
/// instead of SipHash.
type NameIndex = HashMap<String, usize, foldhash::quality::RandomState>;

fn index<'a>(names: impl Iterator<Item = &'a str>) -> NameIndex {
    let mut index = NameIndex::default();
    for (i, name) in names.enumerate() {
        index.entry(name.to_owned()).or_insert(i);
    }
    index
}

/// The labels under [`LABELS_META_KEY`], values as text.
fn labels_of(tool: &Tool) -> BTreeMap<String, String> {
    let Some(Value::Object(labels)) = tool.meta.as_ref().and_then(|m| m.get(LABELS_META_KEY))
    else {
        return BTreeMap::new();
    };
    labels
        .iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), text)
        })
        .collect()
}
