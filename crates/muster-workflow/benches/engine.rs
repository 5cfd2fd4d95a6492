//! Engine overhead: one workflow step against a no-op tool service (template render, tool
//! call, records written to the in-memory store), next to the bare tool call as the baseline;
//! and a 10 000-item forEach with parallelism 50.
//!
//! Run with: `cargo bench -p muster-workflow --bench engine`

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use muster_core::resource::workflow::WorkflowSpec;
use muster_core::store::MemoryExecutionStore;
use muster_core::tool::{ToolCall, ToolError, ToolService};
use muster_workflow::{Engine, Plan, RunWorkflow};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;

fn noop_tools() -> ToolService {
    BoxCloneSyncService::new(tower::service_fn(|_: ToolCall| async {
        Ok::<_, ToolError>(CallToolResult::success(vec![ContentBlock::text(
            "{\"ok\":true}",
        )]))
    }))
}

fn plan(spec: serde_json::Value) -> Arc<Plan> {
    let spec: WorkflowSpec = serde_json::from_value(spec).unwrap();
    Arc::new(Plan::compile("bench", &spec).unwrap())
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let tools = noop_tools();

    let mut group = c.benchmark_group("step");
    group.bench_function("bare tool call (baseline)", |b| {
        b.to_async(&rt).iter(|| {
            let call = ToolCall::new("noop", json!({"text": "hello ann"}).as_object().cloned());
            tools.clone().oneshot(call)
        });
    });
    let one_step = plan(
        json!({"steps": [{"id": "s", "tool": "noop", "args": {"text": "hello {{ .input.name }}"}}]}),
    );
    let ten_steps = plan(
        json!({"steps": (0..10).map(|i| json!({"id": format!("s{i}"), "tool": "noop", "args": {"text": "hello {{ .input.name }}"}})).collect::<Vec<_>>()}),
    );
    let store = Arc::new(MemoryExecutionStore::new());
    let engine = Engine::builder(tools.clone(), store).build();
    for (name, plan) in [
        ("workflow of 1 step", one_step),
        ("workflow of 10 steps", ten_steps),
    ] {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| {
                engine.run(RunWorkflow::new(
                    plan.clone(),
                    json!({"name": "ann"}).as_object().cloned(),
                ))
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("forEach");
    group.sample_size(10);
    let items: Vec<u32> = (0..10_000).collect();
    let loop_plan = plan(json!({
        "args": {"items": {"type": "array"}},
        "steps": [{"id": "loop", "forEach": {"items": "{{ .input.items }}", "parallelism": 50,
            "steps": [{"id": "each", "tool": "noop", "args": {"n": "{{ .vars.item }}"}}]}}]
    }));
    group.bench_function("10000 items, parallelism 50", |b| {
        b.to_async(&rt).iter(|| {
            let store = Arc::new(MemoryExecutionStore::new());
            let engine = Engine::builder(tools.clone(), store).build();
            let plan = loop_plan.clone();
            let args = json!({ "items": items }).as_object().cloned();
            async move { engine.run(RunWorkflow::new(plan, args)).await }
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
