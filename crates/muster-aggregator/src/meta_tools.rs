//! The meta-tools: the only tools muster registers on its MCP server (reference §1).
//!
//! Clients discover everything else with `list_tools`, `filter_tools`, `describe_tool` and
//! `list_core_tools`, call it through `call_tool`, and reach downstream resources and prompts
//! through the resource and prompt meta-tools. Every meta-tool answers with a single text
//! content; JSON payloads are pretty-printed with two-space indentation and failures are a
//! plain message with `isError: true`.
//!
//! [`MetaTools`] dispatches by name against the registry's current snapshot;
//! [`definitions`] lists the eleven tools in their fixed order with their exact schemas.

mod call_tool;
mod describe_tool;
mod filter_tools;
mod index;
mod list_core_tools;
mod list_tools;
mod prompts;
mod reply;
mod resources;
mod schema;
mod summary;

use std::sync::{Arc, LazyLock};

use muster_core::tool::{CallContext, ToolService};
use rmcp::model::{CallToolResult, JsonObject, Tool};

pub use crate::naming::META_TOOL_NAMES;
pub use call_tool::envelope;
pub(crate) use call_tool::{Outcome as CallToolOutcome, ReadArguments, wrap as enveloped};

use self::index::IndexCache;
use crate::metrics::{AggregatorMetrics, CallMeter};
use crate::observe;
use crate::registry::Registry;
use tracing::Instrument as _;

static DEFINITIONS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    vec![
        list_tools::definition(),
        describe_tool::definition(),
        list_core_tools::definition(),
        filter_tools::definition(),
        call_tool::definition(),
        resources::list_definition(),
        resources::describe_definition(),
        resources::get_definition(),
        prompts::list_definition(),
        prompts::describe_definition(),
        prompts::get_definition(),
    ]
});

/// The eleven meta-tools as `tools/list` returns them, in their fixed order.
pub fn definitions() -> &'static [Tool] {
    &DEFINITIONS
}

/// Whether `name` is a meta-tool.
pub fn is_meta_tool(name: &str) -> bool {
    META_TOOL_NAMES.contains(&name)
}

/// The meta-tool `name` names, as a name that lives as long as the program; `None` when it
/// is no meta-tool.
pub(crate) fn meta_tool_name(name: &str) -> Option<&'static str> {
    META_TOOL_NAMES.iter().copied().find(|known| *known == name)
}

/// The arguments of a meta-tool call, as a front door read them.
#[derive(Debug)]
pub(crate) enum Arguments {
    /// The arguments object as sent (absent: none).
    Object(Option<JsonObject>),
    /// `call_tool`'s, read straight from their JSON without a map of them.
    CallTool(call_tool::ReadArguments),
}

impl Arguments {
    /// The arguments of the meta-tool `name` in `json`, the text of a JSON value (absent:
    /// none); `None` when that value is not an object. `call_tool`'s are read without a
    /// map when its `name` is a string and its `arguments` an object or `null`, each given
    /// once; anything else is parsed as the object, whose errors `call_tool` words.
    pub(crate) fn read(name: &str, json: Option<&str>) -> Option<Self> {
        let Some(json) = json else {
            return Some(Self::Object(None));
        };
        if name == "call_tool"
            && let Ok(read) = serde_json::from_str(json)
        {
            return Some(Self::CallTool(read));
        }
        serde_json::from_str(json)
            .ok()
            .map(|o| Self::Object(Some(o)))
    }

    /// The arguments as an object (absent: none).
    fn into_object(self) -> Option<JsonObject> {
        match self {
            Self::Object(object) => object,
            Self::CallTool(read) => Some(read.into_object()),
        }
    }
}

/// A meta-tool's answer, for a front door that writes the JSON-RPC reply itself.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// A result to encode.
    Result(CallToolResult),
    /// The result of the tool `call_tool` called: the answer is `call_tool`'s envelope of it.
    Envelope(CallToolResult),
    /// A successful result encoded as JSON already (without `resultType`), shared by
    /// every call on the same catalog snapshot.
    Encoded(Arc<str>),
}

/// Runs meta-tools against a [`Registry`]: catalogue reads use the snapshot current at the
/// time of the call, `call_tool` goes through the registry's routing service.
#[derive(Debug, Clone)]
pub struct MetaTools {
    registry: Registry,
    service: ToolService,
    index: Arc<IndexCache>,
    /// One meter per meta-tool, in [`META_TOOL_NAMES`] order, when metrics are on.
    meters: Arc<[CallMeter]>,
}

impl MetaTools {
    /// Meta-tools over `registry`.
    pub fn new(registry: Registry) -> Self {
        let service = registry.service();
        let meters = registry
            .metrics()
            .map(AggregatorMetrics::meta_meters)
            .unwrap_or_default();
        Self {
            registry,
            service,
            index: Arc::default(),
            meters: meters.into(),
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Runs the meta-tool `name`, or returns `None` when `name` is not a meta-tool.
    /// `arguments` may be absent; `context` is handed to the tool `call_tool` calls.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: CallContext,
    ) -> Option<CallToolResult> {
        if name == "call_tool" {
            return Some(
                self.call_tool(Arguments::Object(arguments), context)
                    .await
                    .into_answer(),
            );
        }
        // Boxed: the other meta-tools' states would otherwise add to every `call_tool`
        // future, which is moved whole into each layer that awaits it.
        Box::pin(self.call_observed(name, arguments, context)).await
    }

    /// `call_tool`, observed like every meta-tool, without the dispatch of the others.
    async fn call_tool(&self, arguments: Arguments, context: CallContext) -> CallToolOutcome {
        let observer = self.observer_of(CALL_TOOL_INDEX, context.request_meta.as_ref());
        let started = observer.start();
        let outcome = call_tool::run(self.service.clone(), arguments, context)
            .instrument(observer.span.clone())
            .await;
        observer.record(Some(&outcome), started, CallToolOutcome::is_error);
        outcome
    }

    /// [`call`](Self::call) of a meta-tool other than `call_tool`.
    async fn call_observed(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: CallContext,
    ) -> Option<CallToolResult> {
        let observer = self.observer(name, context.request_meta.as_ref())?;
        let started = observer.start();
        let result = self
            .run(name, arguments, context)
            .instrument(observer.span.clone())
            .await;
        observer.record(result.as_ref(), started, |r| r.is_error == Some(true));
        result
    }

    /// [`call`](Self::call) for a front door that writes the JSON itself: `list_tools`
    /// answers with its result encoded once per catalog snapshot (5 000 tools make 0.4 MB of
    /// text to escape), every other meta-tool with its result.
    pub(crate) async fn answer(
        &self,
        name: &str,
        arguments: Arguments,
        context: CallContext,
    ) -> Option<Answer> {
        if name == "call_tool" {
            return Some(match self.call_tool(arguments, context).await {
                CallToolOutcome::Called(inner) => Answer::Envelope(inner),
                CallToolOutcome::Refused(error) => Answer::Result(error),
            });
        }
        let arguments = arguments.into_object();
        if name != "list_tools" {
            return Box::pin(self.call_observed(name, arguments, context))
                .await
                .map(Answer::Result);
        }
        let observer = self.observer(name, context.request_meta.as_ref())?;
        let started = observer.start();
        let catalog = self.registry.snapshot_for(&context.session);
        let encoded = observer
            .span
            .in_scope(|| list_tools::encoded(&self.index.get(&catalog)));
        observer.record(Some(&encoded), started, |_| false);
        Some(Answer::Encoded(encoded))
    }

    /// The span and meter of a call of the meta-tool `name` (`None`: not a meta-tool),
    /// the span's parent taken from the caller's `request_meta`.
    fn observer(&self, name: &str, request_meta: Option<&JsonObject>) -> Option<Observer<'_>> {
        let index = META_TOOL_NAMES.iter().position(|&n| n == name)?;
        Some(self.observer_of(index, request_meta))
    }

    /// The span and meter of a call of the meta-tool at `index` of [`META_TOOL_NAMES`].
    fn observer_of(&self, index: usize, request_meta: Option<&JsonObject>) -> Observer<'_> {
        let name = META_TOOL_NAMES[index];
        let span = muster_core::call_span!(
            target: observe::SPAN_TARGET,
            "meta_tool",
            otel.name = %format_args!("tools/call {name}"),
            otel.kind = "server",
            mcp.method.name = "tools/call",
            gen_ai.tool.name = name,
        );
        if !span.is_disabled() {
            observe::set_parent_from_meta(&span, request_meta);
        }
        Observer {
            span,
            meter: self.meters.get(index),
        }
    }

    async fn run(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: CallContext,
    ) -> Option<CallToolResult> {
        let args = arguments.unwrap_or_default();
        let catalog = self.registry.snapshot_for(&context.session);
        Some(match name {
            "list_tools" => list_tools::run(&self.index.get(&catalog)),
            "describe_tool" => describe_tool::run(&catalog, &args),
            "list_core_tools" => list_core_tools::run(&self.index.get(&catalog), &args),
            "filter_tools" => filter_tools::run(&self.index.get(&catalog), &args),
            "list_resources" => resources::list(&catalog),
            "describe_resource" => resources::describe(&catalog, &args),
            "get_resource" => resources::get(Arc::clone(&catalog), &args).await,
            "list_prompts" => prompts::list(&catalog),
            "describe_prompt" => prompts::describe(&catalog, &args),
            "get_prompt" => prompts::get(Arc::clone(&catalog), &args).await,
            _ => return None,
        })
    }
}

/// The place of `call_tool` in [`META_TOOL_NAMES`].
const CALL_TOOL_INDEX: usize = 4;
const _: () = assert!(matches!(
    META_TOOL_NAMES[CALL_TOOL_INDEX].as_bytes(),
    b"call_tool"
));

/// What one meta-tool call is observed with. The call's own future is instrumented where
/// it is made, not handed to a combinator, so that its state is held once.
struct Observer<'a> {
    span: tracing::Span,
    /// The tool's meter, when metrics are on.
    meter: Option<&'a CallMeter>,
}

impl Observer<'_> {
    /// When the call started, if its time is counted.
    fn start(&self) -> Option<tokio::time::Instant> {
        self.meter.map(|_| tokio::time::Instant::now())
    }

    /// Counts the call that `started` with its outcome (`is_error`: whether `result` is an
    /// error result).
    fn record<T>(
        &self,
        result: Option<&T>,
        started: Option<tokio::time::Instant>,
        is_error: impl FnOnce(&T) -> bool,
    ) {
        if let (Some(meter), Some(started), Some(result)) = (self.meter, started, result) {
            meter.record_answer(is_error(result), started.elapsed());
        }
    }
}

#[cfg(test)]
mod tests;
