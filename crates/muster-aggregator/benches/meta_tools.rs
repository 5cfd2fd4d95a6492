//! Meta-tool latency over a large catalogue: 100 MCP server backends × 50 tools each (plus
//! 30 core tools), all in-process providers, so only the aggregator's own work is measured.
//!
//! Run: `cargo bench -p muster-aggregator --bench meta_tools`. Criterion reports each
//! benchmark; a final pass prints p50 and p99 per meta-tool call from 500 timed calls.

#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use muster_aggregator::meta_tools::MetaTools;
use muster_aggregator::registry::{BackendNaming, Registry};
use muster_core::tool::{
    CallContext, Catalog, Revision, ToolCall, ToolError, ToolProvider, ToolService,
};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tokio::sync::watch;
use tokio::time::Instant;

const BACKENDS: usize = 100;
const TOOLS_PER_BACKEND: usize = 50;
const TIMED_CALLS: usize = 500;

const VERBS: [&str; 10] = [
    "list", "get", "create", "delete", "update", "describe", "watch", "scale", "restart", "query",
];
const NOUNS: [&str; 10] = [
    "pods",
    "deployments",
    "services",
    "nodes",
    "metrics",
    "dashboards",
    "alerts",
    "volumes",
    "secrets",
    "events",
];

#[derive(Debug)]
struct Fixed {
    name: String,
    catalog: Arc<Catalog>,
    revision: watch::Sender<Revision>,
}

impl ToolProvider for Fixed {
    fn name(&self) -> &str {
        &self.name
    }
    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog)
    }
    fn revisions(&self) -> watch::Receiver<Revision> {
        self.revision.subscribe()
    }
    fn service(&self) -> ToolService {
        ToolService::new(tower::service_fn(|call: ToolCall| async move {
            Ok::<_, ToolError>(CallToolResult::success(vec![ContentBlock::text(format!(
                "ran {}",
                call.name
            ))]))
        }))
    }
}

fn provider(name: &str, tools: Vec<Tool>) -> Arc<dyn ToolProvider> {
    Arc::new(Fixed {
        name: name.to_owned(),
        catalog: Arc::new(Catalog {
            tools,
            ..Catalog::default()
        }),
        revision: watch::channel(Revision::default()).0,
    })
}

fn schema() -> JsonObject {
    match json!({"type": "object",
                 "properties": {"namespace": {"type": "string", "description": "Namespace"},
                                "name": {"type": "string"}},
                 "required": ["namespace"]})
    {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

fn backend_tools(server: usize) -> Vec<Tool> {
    (0..TOOLS_PER_BACKEND)
        .map(|t| {
            let verb = VERBS[t % VERBS.len()];
            let noun = NOUNS[(t / VERBS.len() + server) % NOUNS.len()];
            Tool::new(
                format!("{verb}_{noun}_{t}"),
                format!(
                    "{} {noun} of cluster {server} ({t}).\nLonger documentation that discovery never shows.",
                    capitalise(verb)
                ),
                schema(),
            )
        })
        .collect()
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().collect::<String>() + chars.as_str())
        .unwrap_or_default()
}

fn registry() -> Registry {
    let registry = Registry::new();
    for server in 0..BACKENDS {
        let name = format!("server{server:03}");
        registry.upsert_backend(
            &name,
            BackendNaming::default(),
            provider(&name, backend_tools(server)),
        );
    }
    let core: Vec<Tool> = (0..30)
        .map(|i| Tool::new(format!("core_tool_{i}"), format!("Core tool {i}"), schema()))
        .collect();
    registry.set_core(provider("core", core));
    registry
}

fn args(v: Value) -> Option<JsonObject> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The calls measured: (label, meta-tool, arguments).
fn cases() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("list_tools", "list_tools", json!({})),
        (
            "filter_tools/pattern",
            "filter_tools",
            json!({"pattern": "x_server042_*"}),
        ),
        (
            "filter_tools/description",
            "filter_tools",
            json!({"description_filter": "dashboards of cluster 7"}),
        ),
        (
            "filter_tools/query",
            "filter_tools",
            json!({"query": "restart deployments cluster"}),
        ),
        ("list_core_tools", "list_core_tools", json!({})),
        (
            "describe_tool",
            "describe_tool",
            json!({"name": "x_server042_list_pods_0"}),
        ),
        (
            "call_tool",
            "call_tool",
            json!({"name": "x_server042_list_pods_0", "arguments": {"namespace": "default"}}),
        ),
    ]
}

fn criterion_benches(c: &mut Criterion, runtime: &Runtime, meta: &MetaTools) {
    let mut group = c.benchmark_group(format!("meta_tools_{BACKENDS}x{TOOLS_PER_BACKEND}"));
    for (label, tool, arguments) in cases() {
        group.bench_function(label, |b| {
            b.to_async(runtime).iter(|| async {
                let result = meta
                    .call(tool, args(arguments.clone()), CallContext::anonymous())
                    .await
                    .unwrap();
                black_box(result);
            });
        });
    }
    let registry = meta.registry().clone();
    group.bench_function("snapshot_rebuild", |b| b.iter(|| registry.refresh()));
    group.finish();
}

/// p50 and p99 of `TIMED_CALLS` calls per case.
fn percentiles(runtime: &Runtime, meta: &MetaTools) {
    println!(
        "\nmeta-tool latency, {BACKENDS} backends x {TOOLS_PER_BACKEND} tools ({TIMED_CALLS} calls each):"
    );
    for (label, tool, arguments) in cases() {
        let mut samples: Vec<f64> = runtime.block_on(async {
            let mut samples = Vec::with_capacity(TIMED_CALLS);
            for _ in 0..TIMED_CALLS {
                let started = Instant::now();
                let result = meta
                    .call(tool, args(arguments.clone()), CallContext::anonymous())
                    .await
                    .unwrap();
                samples.push(started.elapsed().as_secs_f64() * 1e6);
                black_box(result);
            }
            samples
        });
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| {
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let i = ((samples.len() - 1) as f64 * q).round() as usize;
            samples[i]
        };
        println!(
            "  {label:<26} p50 {:>9.1} µs   p99 {:>9.1} µs",
            at(0.50),
            at(0.99)
        );
    }
}

fn main() {
    let runtime = Runtime::new().unwrap();
    let meta = runtime.block_on(async { MetaTools::new(registry()) });
    assert_eq!(
        meta.registry().snapshot().tools().len(),
        BACKENDS * TOOLS_PER_BACKEND + 30
    );

    let mut criterion = Criterion::default().configure_from_args();
    criterion_benches(&mut criterion, &runtime, &meta);
    criterion.final_summary();
    percentiles(&runtime, &meta);
}
