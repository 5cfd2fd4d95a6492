//! The engine against scripted tools and the in-memory execution store.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use muster_core::resource::execution::{ExecutionStatus, StepStatus};
use muster_core::resource::workflow::WorkflowSpec;
use muster_core::store::{ExecutionFilter, ExecutionStore, MemoryExecutionStore};
use muster_core::tool::{ToolCall, ToolError, ToolService};
use muster_workflow::{Engine, Plan, RunWorkflow};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use tower::util::BoxCloneSyncService;

type Log = Arc<Mutex<Vec<(String, Value)>>>;

/// Tools: `echo` answers `{"said": text}`, `fail` reports an error result, `broken` cannot be
/// called, `slow_echo` waits `ms` before answering, `page` serves three pages of items.
fn tools(log: Log) -> ToolService {
    BoxCloneSyncService::new(tower::service_fn(move |call: ToolCall| {
        let log = log.clone();
        async move {
            let args = Value::Object(call.arguments_or_empty()?);
            log.lock()
                .unwrap()
                .push((call.name.to_string(), args.clone()));
            let text = |v: Value| {
                Ok(CallToolResult::success(vec![ContentBlock::text(
                    v.to_string(),
                )]))
            };
            match call.name.as_str() {
                "echo" => text(json!({ "said": args["text"] })),
                "slow_echo" => {
                    tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0)))
                        .await;
                    text(json!({ "said": args["text"] }))
                }
                "status" => text(json!({ "status": "connected", "items": [{"name": "a"}] })),
                "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("boom")])),
                "page" => {
                    let token = args.get("continue").and_then(Value::as_str).unwrap_or("");
                    let (items, next) = match token {
                        "" => (json!([1, 2]), json!("p2")),
                        "p2" => (json!([3]), json!("p3")),
                        _ => (json!([4, 5]), json!("")),
                    };
                    text(json!({ "items": items, "continue": next }))
                }
                "plain" => Ok(CallToolResult::success(vec![ContentBlock::text(
                    "not json",
                )])),
                other => Err(ToolError::UnknownTool {
                    name: other.to_owned(),
                }),
            }
        }
    }))
}

struct Harness {
    engine: Engine,
    store: Arc<MemoryExecutionStore>,
    log: Log,
}

fn harness() -> Harness {
    let log: Log = Arc::default();
    let store = Arc::new(MemoryExecutionStore::new());
    let engine = Engine::builder(tools(log.clone()), store.clone()).build();
    Harness { engine, store, log }
}

fn plan(spec: Value) -> Arc<Plan> {
    let spec: WorkflowSpec = serde_json::from_value(spec).unwrap();
    Arc::new(Plan::compile("wf", &spec).unwrap_or_else(|e| panic!("plan: {e}")))
}

async fn run(h: &Harness, spec: Value, args: Value) -> (Value, bool) {
    let resp = h
        .engine
        .run(RunWorkflow::new(plan(spec), args.as_object().cloned()))
        .await
        .unwrap();
    (resp.document, resp.is_error)
}

#[tokio::test]
async fn sequential_steps_chain_results_and_merge_the_last_one() {
    let h = harness();
    let (doc, is_error) = run(
        &h,
        json!({
            "args": {"name": {"type": "string", "required": true}},
            "steps": [
                {"id": "first", "tool": "echo", "args": {"text": "hi {{ .input.name }}"}, "output": true},
                {"id": "second", "tool": "echo", "args": {"text": "{{ .results.first.said }}!"}}
            ]
        }),
        json!({"name": "ann"}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["status"], "completed");
    assert_eq!(doc["workflow"], "wf");
    assert_eq!(doc["steps"][0]["result"]["said"], "hi ann");
    assert!(
        doc["steps"][1].get("result").is_none(),
        "no output flag, no result"
    );
    assert_eq!(
        doc["said"], "hi ann!",
        "the last step's object result is merged"
    );
    assert_eq!(doc["template_vars"], json!(["input.name"]));
    let id = doc["execution_id"].as_str().unwrap();
    let rec = h
        .store
        .get(&muster_core::resource::execution::ExecutionId::from_string(
            id,
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rec.status, ExecutionStatus::Completed);
    assert_eq!(rec.steps.len(), 2);
    assert!(rec.steps.iter().all(|s| s.status == StepStatus::Completed));
    assert_eq!(rec.steps[1].input, json!({"text": "hi ann!"}));
}

#[tokio::test]
async fn for_each_indexes_results_and_keeps_the_last() {
    let h = harness();
    let (doc, is_error) = run(
        &h,
        json!({
            "args": {"items": {"type": "array", "required": true}},
            "steps": [
                {"id": "loop", "forEach": {"items": "{{ .input.items }}", "as": "it", "steps": [
                    {"id": "make", "tool": "echo", "args": {"text": "made-{{ .vars.it }}"}, "store": true},
                    {"id": "confirm", "tool": "echo", "args": {"text": "confirm {{ .results.make.said }} #{{ .vars.it_index }}"}}
                ]}},
                {"id": "summary", "tool": "echo", "args": {"text": "first={{ .results.make_0.said }} confirm0={{ .results.confirm_0.said }} second={{ .results.make_1.said }} last={{ .results.make.said }} n={{ len .results.loop }}"}}
            ]
        }),
        json!({"items": ["a", "b"]}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(
        doc["said"],
        "first=made-a confirm0=confirm made-a #0 second=made-b last=made-b n=2"
    );
    let ids: Vec<_> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["make", "confirm", "make", "confirm", "summary"]);
}

#[tokio::test]
async fn parallel_iterations_come_out_in_item_order() {
    let h = harness();
    let (doc, is_error) = run(
        &h,
        json!({
            "args": {"delays": {"type": "array"}},
            "steps": [
                {"id": "loop", "output": true, "forEach": {"items": "{{ .input.delays }}", "as": "d", "parallelism": 4, "steps": [
                    {"id": "wait", "tool": "slow_echo", "args": {"ms": "{{ .vars.d }}", "text": "{{ .vars.d_index }}"}}
                ]}}
            ]
        }),
        json!({"delays": [60, 10, 40, 0, 20]}),
    )
    .await;
    assert!(!is_error, "{doc}");
    let records = doc["steps"].as_array().unwrap().last().unwrap()["result"]
        .as_array()
        .unwrap()
        .clone();
    let order: Vec<_> = records
        .iter()
        .map(|r| r["results"]["wait"]["said"].clone())
        .collect();
    assert_eq!(order, [json!(0), json!(1), json!(2), json!(3), json!(4)]);
    assert!(records.iter().all(|r| r["status"] == "completed"));
    assert_eq!(records[2]["item"], 40);
}

#[tokio::test]
async fn nested_loops_key_results_by_both_indices() {
    let h = harness();
    let (doc, is_error) = run(
        &h,
        json!({
            "steps": [
                {"id": "outer", "forEach": {"items": "{{ list \"x\" \"y\" }}", "as": "o", "steps": [
                    {"id": "inner", "forEach": {"items": "{{ list 1 2 }}", "as": "i", "steps": [
                        {"id": "cell", "tool": "echo", "args": {"text": "{{ .vars.o }}{{ .vars.i }}"}}
                    ]}}
                ]}},
                {"id": "show", "tool": "echo", "args": {"text": "{{ .results.cell_0_1.said }} {{ .results.cell_1_0.said }}"}}
            ]
        }),
        json!({}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["said"], "x2 y1");
}

#[tokio::test]
async fn conditions_skip_and_gate() {
    let h = harness();
    let (doc, is_error) = run(
        &h,
        json!({
            "args": {"env": {"type": "string", "default": "dev"}},
            "steps": [
                {"id": "check", "tool": "status"},
                {"id": "prod_only", "tool": "echo", "args": {"text": "p"}, "condition": {"template": "{{ eq .input.env \"production\" }}"}},
                {"id": "when_connected", "tool": "echo", "args": {"text": "c"}, "output": true,
                 "condition": {"fromStep": "check", "expect": {"success": true, "jsonPath": {"status": "connected", "items[0].name": "a", "{{ len .result.items }}": 1}}}},
                {"id": "when_failing", "tool": "echo", "args": {"text": "f"}, "condition": {"tool": "fail", "expectNot": {"success": true}}},
                {"id": "on_error_tool", "tool": "echo", "args": {"text": "e"}, "condition": {"tool": "broken", "expect": {"success": false}}}
            ]
        }),
        json!({}),
    )
    .await;
    assert!(!is_error, "{doc}");
    let steps = doc["steps"].as_array().unwrap();
    let status = |id: &str| steps.iter().find(|s| s["id"] == id).unwrap()["status"].clone();
    assert_eq!(status("prod_only"), "skipped");
    assert_eq!(status("when_connected"), "completed");
    assert_eq!(status("when_failing"), "completed");
    assert_eq!(
        status("on_error_tool"),
        "skipped",
        "a call error makes the condition false"
    );
    let skipped = steps.iter().find(|s| s["id"] == "prod_only").unwrap();
    assert_eq!(skipped["condition_evaluation"], false);
    assert_eq!(skipped["condition_tool"], "template");
    let gated = steps.iter().find(|s| s["id"] == "when_connected").unwrap();
    assert_eq!(gated["condition_tool"], "from_step:check");
}

#[tokio::test]
async fn allow_failure_continues_and_a_failure_runs_on_failure() {
    let h = harness();
    let (doc, is_error) = run(
        &h,
        json!({
            "steps": [
                {"id": "tolerated", "tool": "fail", "allowFailure": true},
                {"id": "after", "tool": "echo", "args": {"text": "{{ .results.tolerated.isError }}"}, "output": true},
                {"id": "fatal", "tool": "fail"},
                {"id": "never", "tool": "echo", "args": {"text": "x"}}
            ],
            "onFailure": [{"id": "cleanup", "tool": "echo", "args": {"text": "cleanup after {{ .results.fatal.error }}"}, "output": true}]
        }),
        json!({}),
    )
    .await;
    assert!(is_error);
    assert_eq!(doc["status"], "failed");
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps[0]["status"], "failed");
    assert_eq!(steps[0]["allow_failure"], true);
    assert_eq!(steps[1]["result"]["said"], true);
    assert_eq!(steps[2]["id"], "fatal");
    assert_eq!(steps[2]["error"], "boom");
    assert_eq!(steps[3]["id"], "cleanup");
    assert_eq!(steps[3]["result"]["said"], "cleanup after boom");
    assert!(
        !h.log.lock().unwrap().iter().any(|(_, a)| a["text"] == "x"),
        "steps after the failure do not run"
    );
    let page = h.store.list(&ExecutionFilter::default()).await.unwrap();
    assert_eq!(page.items[0].status, ExecutionStatus::Failed);
    assert_eq!(
        page.items[0].error.as_deref(),
        Some("step fatal failed: boom")
    );
}

#[tokio::test]
async fn input_and_engine_errors_answer_with_an_error_document() {
    let h = harness();
    let spec = json!({
        "args": {"name": {"type": "string", "required": true}},
        "steps": [{"id": "s", "tool": "echo", "args": {"text": "{{ .input.nope }}"}}],
        "onFailure": [{"id": "cleanup", "tool": "echo", "args": {"text": "cleaned"}}]
    });
    let (doc, is_error) = run(&h, spec.clone(), json!({})).await;
    assert!(is_error);
    assert_eq!(
        doc["error"],
        "input validation failed: required field 'name' is missing"
    );
    assert!(doc["execution_id"].is_string());

    let (doc, is_error) = run(&h, spec, json!({"name": "x"})).await;
    assert!(is_error);
    let error = doc["error"].as_str().unwrap();
    assert!(error.starts_with("failed to resolve arguments for step s: failed to render arguments for argument 'text':"), "{error}");
    assert!(
        h.log
            .lock()
            .unwrap()
            .iter()
            .any(|(_, a)| a["text"] == "cleaned"),
        "onFailure runs after an engine error"
    );
}

#[tokio::test]
async fn output_template_keeps_types() {
    let h = harness();
    let (doc, is_error) = run(
        &h,
        json!({
            "args": {"v": {"type": "string", "default": "08"}},
            "steps": [{"id": "st", "tool": "status"}],
            "output": {
                "items": "{{ .results.st.items }}",
                "count": "{{ len .results.st.items }}",
                "ok": "{{ eq .results.st.status \"connected\" }}",
                "version": "{{ .input.v }}",
                "label": "v{{ .input.v }}",
                "nested": {"literal": 3, "list": ["{{ .results.st.status }}"]}
            }
        }),
        json!({}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["items"], json!([{"name": "a"}]));
    assert_eq!(doc["count"], json!(1));
    assert_eq!(doc["ok"], json!(true));
    assert_eq!(doc["version"], json!("08"));
    assert_eq!(doc["label"], json!("v08"));
    assert_eq!(doc["nested"], json!({"literal": 3, "list": ["connected"]}));
    assert!(
        doc.get("steps").is_none(),
        "the output template replaces the default document"
    );
}

#[tokio::test]
async fn paginate_and_jq() {
    let h = harness();
    let (doc, is_error) = run(
        &h,
        json!({
            "steps": [
                {"id": "all", "tool": "page", "paginate": {"maxPages": 10}, "output": true},
                {"id": "two", "tool": "page", "paginate": {"maxPages": 2}, "output": true},
                {"id": "shaped", "tool": "status", "jq": "[.items[] | {n: .name, env: $input.env}]", "output": true}
            ]
        }),
        json!({"env": "prod"}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["steps"][0]["result"]["items"], json!([1, 2, 3, 4, 5]));
    assert_eq!(
        doc["steps"][0]["result"]["pagination"],
        json!({"pages": 3, "truncated": false})
    );
    assert_eq!(doc["steps"][1]["result"]["items"], json!([1, 2, 3]));
    assert_eq!(
        doc["steps"][1]["result"]["pagination"],
        json!({"pages": 2, "truncated": true})
    );
    assert_eq!(
        doc["steps"][1]["result"]["continue"], "p3",
        "a truncated result keeps the next token"
    );
    assert_eq!(
        doc["steps"][2]["result"],
        json!([{"n": "a", "env": "prod"}])
    );
}

#[tokio::test]
async fn parallel_siblings_see_the_results_before_the_group() {
    let h = harness();
    let (doc, is_error) = run(
        &h,
        json!({
            "steps": [
                {"id": "seed", "tool": "echo", "args": {"text": "s"}},
                {"id": "group", "parallel": [
                    {"id": "a", "tool": "slow_echo", "args": {"ms": 30, "text": "a-{{ .results.seed.said }}"}},
                    {"id": "b", "tool": "echo", "args": {"text": "b"}},
                    {"id": "c", "tool": "fail", "allowFailure": true}
                ]},
                {"id": "join", "tool": "echo", "args": {"text": "{{ .results.a.said }}+{{ .results.b.said }}"}}
            ]
        }),
        json!({}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["said"], "a-s+b");
    let ids: Vec<_> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["seed", "a", "b", "c", "join"],
        "entries in declaration order"
    );
}

#[tokio::test]
async fn plans_report_bad_templates_and_jq_with_paths() {
    let spec: WorkflowSpec = serde_json::from_value(json!({
        "steps": [
            {"id": "a", "tool": "echo", "args": {"text": "{{ if }}"}},
            {"id": "b", "tool": "echo", "jq": "[.items["}
        ]
    }))
    .unwrap();
    let errs = Plan::compile("wf", &spec).unwrap_err();
    assert!(
        errs.violations()
            .iter()
            .any(|v| v.path == "spec.steps[0].args.text"),
        "{errs}"
    );
    assert!(
        errs.violations()
            .iter()
            .any(|v| v.path == "spec.steps[1].jq"),
        "{errs}"
    );
}

#[tokio::test]
async fn nesting_is_limited() {
    let log: Log = Arc::default();
    let store = Arc::new(MemoryExecutionStore::new());
    let engine = Engine::builder(tools(log), store).max_depth(2).build();
    let mut req = RunWorkflow::new(plan(json!({"steps": [{"id": "s", "tool": "echo"}]})), None);
    req.context.workflow_depth = 2;
    assert!(matches!(
        engine.run(req).await,
        Err(muster_workflow::WorkflowError::DepthExceeded { limit: 2 })
    ));
}

#[tokio::test]
async fn progress_counts_finished_steps() {
    let h = harness();
    let updates: Arc<Mutex<Vec<(f64, String)>>> = Arc::default();
    let sink = {
        let updates = updates.clone();
        muster_core::tool::ProgressSink::new(move |u| {
            updates
                .lock()
                .unwrap()
                .push((u.progress, u.message.unwrap_or_default()));
        })
    };
    let mut req = RunWorkflow::new(
        plan(json!({"steps": [
            {"id": "one", "tool": "echo", "args": {"text": "a"}},
            {"id": "two", "tool": "fail", "allowFailure": true}
        ]})),
        None,
    );
    req.context.progress = Some(sink);
    h.engine.run(req).await.unwrap();
    let got = updates.lock().unwrap().clone();
    assert_eq!(
        got,
        [
            (1.0, "step one completed".to_owned()),
            (2.0, "step two failed".to_owned())
        ]
    );
}

/// An engine whose tool `self_twice` runs `plan` again, nested, through the same engine (a
/// workflow calling itself twice in parallel), and whose `echo` answers.
fn self_calling(
    limits: muster_core::config::WorkflowLimits,
) -> (Engine, Arc<MemoryExecutionStore>, Arc<Plan>) {
    let store = Arc::new(MemoryExecutionStore::new());
    let slot: Arc<std::sync::OnceLock<(Engine, Arc<Plan>)>> = Arc::default();
    let tools: ToolService = {
        let slot = slot.clone();
        BoxCloneSyncService::new(tower::service_fn(move |call: ToolCall| {
            let slot = slot.clone();
            async move {
                let (engine, plan) = slot.get().unwrap().clone();
                if call.name.as_str() != "self_twice" {
                    return Ok(CallToolResult::success(vec![ContentBlock::text("{}")]));
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                let run = RunWorkflow {
                    plan,
                    arguments: None,
                    context: call.context,
                };
                match engine.run(run).await {
                    Ok(r) => Ok(r.into_call_tool_result()),
                    Err(e) => Err(ToolError::failed(e.to_string())),
                }
            }
        }))
    };
    let engine = Engine::builder(tools, store.clone()).limits(limits).build();
    let plan = plan(json!({"steps": [
        {"id": "fan", "parallel": [
            {"id": "left", "tool": "self_twice"},
            {"id": "right", "tool": "self_twice"}
        ]}
    ]}));
    slot.set((engine.clone(), plan.clone())).ok().unwrap();
    (engine, store, plan)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_calling_parallel_workflow_is_stopped_by_its_tree_budget() {
    let limits = muster_core::config::WorkflowLimits {
        max_runs_per_tree: 50,
        max_depth: 12,
        ..Default::default()
    };
    let (engine, store, plan) = self_calling(limits);
    let response = tokio::time::timeout(
        Duration::from_secs(20),
        engine.run(RunWorkflow::new(plan, None)),
    )
    .await
    .expect("the tree stops")
    .unwrap();
    assert!(response.is_error);
    let error = response.document["error"].as_str().unwrap().to_owned();
    assert_eq!(
        error,
        "workflow call tree exceeded 50 workflow runs (limits.workflows.maxRunsPerTree)"
    );
    // Bounded records: the runs admitted, every one finished (none left in progress), each
    // within the message budget.
    let page = store
        .list(&ExecutionFilter {
            limit: 1000,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(page.total <= 50, "{}", page.total);
    for summary in &page.items {
        assert_ne!(summary.status, ExecutionStatus::Inprogress);
        let record = store.get(&summary.id).await.unwrap().unwrap();
        assert!(record.error.as_ref().is_none_or(|e| e.len() <= 8192));
        assert!(record.json_size() <= 64 * 1024, "{}", record.json_size());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_depth_limit_error_is_short_and_plain() {
    // Only the depth limit stops this tree: its error is not the cascade of escaped JSON.
    let limits = muster_core::config::WorkflowLimits {
        max_depth: 6,
        ..Default::default()
    };
    let (engine, _store, plan) = self_calling(limits);
    let response = engine.run(RunWorkflow::new(plan, None)).await.unwrap();
    assert!(response.is_error);
    let error = response.document["error"].as_str().unwrap();
    assert_eq!(
        error,
        "workflow nesting depth limit (6) exceeded (limits.workflows.maxDepth)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_caller_stops_the_whole_tree() {
    let limits = muster_core::config::WorkflowLimits {
        max_runs_per_tree: 100_000,
        max_steps_per_tree: 1_000_000,
        max_depth: 14,
        ..Default::default()
    };
    let (engine, store, plan) = self_calling(limits);
    let req = RunWorkflow::new(plan, None);
    let caller = req.context.cancellation.clone();
    let run = tokio::spawn({
        let engine = engine.clone();
        async move { engine.run(req).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    caller.cancel();
    let response = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the tree stops when its caller goes away")
        .unwrap()
        .unwrap();
    assert!(response.is_error);
    // Nothing is still running: the number of records no longer grows.
    let count = || async { store.list(&ExecutionFilter::default()).await.unwrap().total };
    let before = count().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(count().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jq_program_over_budget_fails_its_step_naming_the_budget() {
    let log: Log = Arc::default();
    let store = Arc::new(MemoryExecutionStore::new());
    let limits = muster_core::config::WorkflowLimits {
        evaluation_timeout_ms: 300,
        ..Default::default()
    };
    let engine = Engine::builder(tools(log), store).limits(limits).build();
    let response = within_5s(engine.run(RunWorkflow::new(
        plan(json!({"steps": [
            {"id": "spin", "tool": "echo", "args": {"text": "x"}, "jq": "last(range(700000000))"}
        ]})),
        None,
    )))
    .await
    .unwrap();
    assert!(response.is_error);
    assert_eq!(
        response.document["steps"][0]["error"],
        "jq program exceeded its time budget (budget 300ms, limits.workflows.evaluationTimeoutMs)"
    );
    assert_eq!(response.document["steps"][0]["id"], "spin");
    // A template that loops past the budget fails the same way.
    let response = within_5s(engine.run(RunWorkflow::new(
        plan(json!({"steps": [
            {"id": "loop", "tool": "echo", "args": {"text":
                "{{ range $i := until 1000000 }}{{ range $j := until 1000000 }}{{ end }}{{ end }}"}}
        ]})),
        None,
    )))
    .await
    .unwrap();
    let text = response.document.to_string();
    assert!(
        text.contains("failed to resolve arguments for step loop") && text.contains("budget 300ms"),
        "{text}"
    );
}

/// `f`'s output, failing the test when it takes more than 5 s (it would run for minutes).
async fn within_5s<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), f)
        .await
        .expect("stopped by the evaluation budget")
}

#[tokio::test]
async fn events_count_the_recorded_steps_in_the_original_wording() {
    let log: Log = Arc::default();
    let store = Arc::new(MemoryExecutionStore::new());
    let sink = Arc::new(muster_core::event::MemoryEventSink::with_capacity(100));
    let engine = Engine::builder(tools(log), store.clone())
        .events(sink.clone())
        .build();
    let spec = json!({
        "steps": [
            {"id": "loop", "forEach": {"items": "{{ list 1 2 }}", "steps": [
                {"id": "make", "tool": "echo", "args": {"text": "x"}}
            ]}, "output": true},
            {"id": "summary", "tool": "echo", "args": {"text": "done"}}
        ]
    });
    let resp = engine
        .run(RunWorkflow::new(plan(spec), None))
        .await
        .unwrap();
    assert!(!resp.is_error, "{}", resp.document);
    let id = resp.document["execution_id"].as_str().unwrap().to_owned();
    let rec = store
        .get(&muster_core::resource::execution::ExecutionId::from_string(
            &id,
        ))
        .await
        .unwrap()
        .unwrap();
    let messages: Vec<(String, String)> = sink
        .events()
        .into_iter()
        .map(|e| (e.reason, e.message))
        .collect();
    let message = |reason: &str| {
        messages
            .iter()
            .find(|(r, _)| r == reason)
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| panic!("no {reason} in {messages:?}"))
    };
    assert_eq!(
        message("WorkflowExecutionStarted"),
        format!("Workflow wf execution started (execution: {id})")
    );
    assert_eq!(
        message("WorkflowStepStarted"),
        "Workflow wf step make started (tool: echo)"
    );
    assert_eq!(
        message("WorkflowStepCompleted"),
        "Workflow wf step make completed successfully"
    );
    let completed = message("WorkflowExecutionCompleted");
    let expected = format!(
        "Workflow wf execution completed successfully ({} steps) in ",
        rec.steps.len()
    );
    assert!(completed.starts_with(&expected), "{completed} / {expected}");
    assert_eq!(rec.steps.len(), 3, "{:?}", rec.steps);
}

/// Counts the calls of the `gate` tool in flight. A `gate` call enters, then waits until the
/// peak of calls in flight has reached its `want` argument: calls that run at the same time
/// release each other at once, while a call left alone (nobody else started) gives up after
/// [`GATE_PATIENCE`] and answers an error, so an engine that runs one call after another fails
/// the workflow instead of hanging. A released call stays in flight for [`GATE_HOLD`], the
/// window in which a call beyond the cap would be counted.
#[derive(Clone)]
struct Gauge {
    active: Arc<std::sync::atomic::AtomicUsize>,
    peak: Arc<tokio::sync::watch::Sender<usize>>,
}

const GATE_PATIENCE: Duration = Duration::from_secs(10);
const GATE_HOLD: Duration = Duration::from_millis(30);

impl Gauge {
    fn new() -> Self {
        Self {
            active: Arc::default(),
            peak: Arc::new(tokio::sync::watch::channel(0).0),
        }
    }

    fn peak(&self) -> usize {
        *self.peak.borrow()
    }

    fn tools(&self) -> ToolService {
        let gauge = self.clone();
        BoxCloneSyncService::new(tower::service_fn(move |call: ToolCall| {
            let gauge = gauge.clone();
            async move {
                let want = call
                    .arguments_or_empty()?
                    .get("want")
                    .and_then(Value::as_u64)
                    .unwrap_or(1) as usize;
                let now = gauge
                    .active
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
                    + 1;
                gauge.peak.send_modify(|p| *p = (*p).max(now));
                let mut peak = gauge.peak.subscribe();
                let met = tokio::time::timeout(GATE_PATIENCE, peak.wait_for(|p| *p >= want))
                    .await
                    .is_ok();
                if met {
                    tokio::time::sleep(GATE_HOLD).await;
                }
                gauge
                    .active
                    .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                Ok(if met {
                    CallToolResult::success(vec![ContentBlock::text("{}")])
                } else {
                    CallToolResult::error(vec![ContentBlock::text(format!(
                        "no {want} calls were in flight together"
                    ))])
                })
            }
        }))
    }

    async fn run(&self, spec: Value) -> (Value, bool) {
        let engine = Engine::builder(self.tools(), Arc::new(MemoryExecutionStore::new())).build();
        let resp = engine
            .run(RunWorkflow::new(plan(spec), None))
            .await
            .unwrap();
        (resp.document, resp.is_error)
    }
}

#[tokio::test]
async fn for_each_with_parallelism_runs_that_many_iterations_at_once_and_no_more() {
    let gauge = Gauge::new();
    let (doc, is_error) = gauge
        .run(json!({"steps": [
            {"id": "loop", "forEach": {"items": "{{ list 1 2 3 4 5 6 7 }}", "as": "n", "parallelism": 3, "steps": [
                {"id": "enter", "tool": "gate", "args": {"want": 3}}
            ]}}
        ]}))
        .await;
    assert!(!is_error, "three iterations never ran together: {doc}");
    assert_eq!(gauge.peak(), 3, "parallelism 3 is a cap: {doc}");
}

#[tokio::test]
async fn for_each_without_parallelism_runs_one_iteration_at_a_time() {
    let gauge = Gauge::new();
    let (doc, is_error) = gauge
        .run(json!({"steps": [
            {"id": "loop", "forEach": {"items": "{{ list 1 2 3 4 }}", "as": "n", "steps": [
                {"id": "enter", "tool": "gate", "args": {"want": 1}}
            ]}}
        ]}))
        .await;
    assert!(!is_error, "{doc}");
    assert_eq!(gauge.peak(), 1, "iterations overlapped: {doc}");
}

#[tokio::test]
async fn parallel_sub_steps_all_run_at_once() {
    let gauge = Gauge::new();
    let (doc, is_error) = gauge
        .run(json!({"steps": [
            {"id": "group", "parallel": [
                {"id": "a", "tool": "gate", "args": {"want": 4}},
                {"id": "b", "tool": "gate", "args": {"want": 4}},
                {"id": "c", "tool": "gate", "args": {"want": 4}},
                {"id": "d", "tool": "gate", "args": {"want": 4}}
            ]},
            {"id": "after", "tool": "gate", "args": {"want": 1}}
        ]}))
        .await;
    assert!(!is_error, "the four sub-steps never ran together: {doc}");
    assert_eq!(gauge.peak(), 4, "{doc}");
    let statuses: Vec<_> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["completed"; 5], "{doc}");
}
