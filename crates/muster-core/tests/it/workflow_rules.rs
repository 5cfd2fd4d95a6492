//! Every structural rule of the Workflow spec (`WorkflowSpec::validate`), as tables of cases,
//! and the data derived from a spec: `referenced_tools`, `computed_status`, `warnings`.
//!
//! As for MCPServers, a failing case lists exactly the violations it must produce as
//! (field path, rule fragment) pairs.

use std::collections::HashSet;

use muster_core::ValidationErrors;
use muster_core::resource::workflow::{ArgType, StepAction, WorkflowSpec};
use serde_json::{Value, json};

use crate::merge;

const ITEMS_RULE: &str = "items is required and must be a template string";

enum Expect {
    Ok,
    Violations(Vec<(String, String)>),
}

struct Case {
    name: String,
    spec: Value,
    expect: Expect,
}

fn ok(name: impl Into<String>, spec: Value) -> Case {
    Case {
        name: name.into(),
        spec,
        expect: Expect::Ok,
    }
}

fn fail(name: impl Into<String>, spec: Value, violations: &[(&str, &str)]) -> Case {
    let violations = violations
        .iter()
        .map(|(p, r)| ((*p).to_owned(), (*r).to_owned()))
        .collect();
    Case {
        name: name.into(),
        spec,
        expect: Expect::Violations(violations),
    }
}

/// A workflow with these steps.
fn wf(steps: Value) -> Value {
    json!({ "steps": steps })
}

/// A tool step.
fn t(id: &str, tool: &str) -> Value {
    json!({ "id": id, "tool": tool })
}

/// `step` with `patch` merged in.
fn with(step: Value, patch: Value) -> Value {
    merge(step, patch)
}

/// A loop over `{{ .input.clusters }}` with this body.
fn for_each(id: &str, body: Value) -> Value {
    json!({ "id": id, "forEach": { "items": "{{ .input.clusters }}", "steps": body } })
}

/// A loop with these `forEach` fields over a valid one.
fn for_each_with(id: &str, fields: Value) -> Value {
    merge(
        for_each(id, json!([t(&format!("{id}_body"), "tool")])),
        json!({ "forEach": fields }),
    )
}

/// A nested loop (for a loop body) with this `as` and body.
fn nested(id: &str, as_: Option<&str>, body: Value) -> Value {
    let mut step =
        json!({ "id": id, "forEach": { "items": "{{ .results.list.items }}", "steps": body } });
    if let Some(as_) = as_ {
        step["forEach"]["as"] = json!(as_);
    }
    step
}

fn parallel(id: &str, group: Value) -> Value {
    json!({ "id": id, "parallel": group })
}

/// Two tool steps, `first` and `second`; the second one has this condition.
fn conditioned(condition: Value) -> Value {
    wf(json!([
        t("first", "a"),
        with(t("second", "b"), json!({ "condition": condition }))
    ]))
}

/// A `condition` field calling this tool.
fn tool_condition(tool: &str) -> Value {
    json!({ "condition": { "tool": tool, "expectNot": { "success": false } } })
}

/// A workflow with this argument schema.
fn args(args: Value) -> Value {
    json!({ "args": args, "steps": [t("s", "tool")] })
}

fn chars(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

fn parse(spec: &Value) -> WorkflowSpec {
    serde_json::from_value(spec.clone()).expect("spec parses")
}

fn run(cases: Vec<Case>) {
    let mut names = HashSet::new();
    let mut failures = Vec::new();
    for case in &cases {
        assert!(
            names.insert(case.name.clone()),
            "duplicate case name: {}",
            case.name
        );
        let spec: WorkflowSpec = match serde_json::from_value(case.spec.clone()) {
            Ok(spec) => spec,
            Err(e) => {
                failures.push(format!("{}: does not parse: {e}", case.name));
                continue;
            }
        };
        match (&case.expect, spec.validate()) {
            (Expect::Ok, Ok(())) => {}
            (Expect::Ok, Err(errs)) => {
                failures.push(format!("{}: expected Ok, got: {errs}", case.name));
            }
            (Expect::Violations(_), Ok(())) => {
                failures.push(format!("{}: expected violations, got Ok", case.name));
            }
            (Expect::Violations(expected), Err(errs)) => {
                check_violations(&case.name, expected, &errs, &mut failures);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn check_violations(
    name: &str,
    expected: &[(String, String)],
    errs: &ValidationErrors,
    failures: &mut Vec<String>,
) {
    for (path, fragment) in expected {
        if !errs.contains(path, fragment) {
            failures.push(format!(
                "{name}: missing `{path}: ..{fragment}..`; got: {errs}"
            ));
        }
    }
    for v in errs.violations() {
        if !expected
            .iter()
            .any(|(p, f)| v.path == *p && v.rule.contains(f.as_str()))
        {
            failures.push(format!("{name}: unexpected violation `{v}`"));
        }
    }
}

#[test]
fn steps_are_required() {
    let rule = "workflow must have at least one step";
    run(vec![
        ok("one tool step", wf(json!([t("a", "tool")]))),
        fail("empty steps", wf(json!([])), &[("spec.steps", rule)]),
        fail("steps missing", json!({}), &[("spec.steps", rule)]),
        fail(
            "only onFailure steps",
            json!({ "onFailure": [t("r", "rollback")] }),
            &[("spec.steps", rule)],
        ),
    ]);
}

#[test]
fn step_ids() {
    let pattern = "must match ^[a-zA-Z0-9_-]+$";
    let dup = |id: &str| format!("duplicate step ID '{id}' found");
    let sub = |id: &str| {
        format!("duplicate sub-step id '{id}' (step ids are unique across the workflow)")
    };
    let dup_x = dup("x");
    let (sub_x, sub_loop, sub_p) = (sub("x"), sub("loop"), sub("p"));
    run(vec![
        ok(
            "id of letters, digits, _ and -",
            wf(json!([t("0-step_X", "tool")])),
        ),
        fail(
            "id missing",
            wf(json!([{ "tool": "a" }])),
            &[("spec.steps[0].id", "id is required")],
        ),
        fail(
            "id empty",
            wf(json!([t("", "a")])),
            &[("spec.steps[0].id", "id is required")],
        ),
        fail(
            "id with a dot",
            wf(json!([t("a.b", "a")])),
            &[("spec.steps[0].id", pattern)],
        ),
        fail(
            "id with a space",
            wf(json!([t("a b", "a")])),
            &[("spec.steps[0].id", pattern)],
        ),
        ok("id of 63 characters", wf(json!([t(&chars('s', 63), "a")]))),
        fail(
            "id of 64 characters",
            wf(json!([t(&chars('s', 64), "a")])),
            &[("spec.steps[0].id", "must be at most 63 characters")],
        ),
        fail(
            "id of 64 characters with a bad one",
            wf(json!([t(&format!("{}.", chars('s', 63)), "a")])),
            &[
                ("spec.steps[0].id", "must be at most 63 characters"),
                ("spec.steps[0].id", pattern),
            ],
        ),
        fail(
            "sub-step id missing",
            wf(json!([parallel("g", json!([{ "tool": "a" }]))])),
            &[("spec.steps[0].parallel[0].id", "id is required")],
        ),
        fail(
            "loop body id with a bad character",
            wf(json!([for_each("loop", json!([t("a/b", "a")]))])),
            &[("spec.steps[0].forEach.steps[0].id", pattern)],
        ),
        fail(
            "duplicate top-level ids",
            wf(json!([t("x", "a"), t("x", "b")])),
            &[("spec.steps[1].id", &dup_x)],
        ),
        fail(
            "top-level id repeated in a loop body",
            wf(json!([t("x", "a"), for_each("loop", json!([t("x", "b")]))])),
            &[("spec.steps[1].forEach.steps[0].id", &sub_x)],
        ),
        fail(
            "loop id repeated in its body",
            wf(json!([for_each("loop", json!([t("loop", "b")]))])),
            &[("spec.steps[0].forEach.steps[0].id", &sub_loop)],
        ),
        fail(
            "outer body id repeated in a nested body",
            wf(json!([for_each(
                "loop",
                json!([
                    t("x", "a"),
                    nested("inner", Some("n"), json!([t("x", "b")]))
                ])
            )])),
            &[("spec.steps[0].forEach.steps[1].forEach.steps[0].id", &sub_x)],
        ),
        fail(
            "id repeated across two loops",
            wf(json!([
                for_each("l1", json!([t("x", "a")])),
                for_each("l2", json!([t("x", "b")])),
            ])),
            &[("spec.steps[1].forEach.steps[0].id", &sub_x)],
        ),
        fail(
            "id repeated in a parallel group",
            wf(json!([parallel("g", json!([t("p", "a"), t("p", "b")]))])),
            &[("spec.steps[0].parallel[1].id", &sub_p)],
        ),
        fail(
            "top-level id repeated in a parallel group",
            wf(json!([t("p", "a"), parallel("g", json!([t("p", "b")]))])),
            &[("spec.steps[1].parallel[0].id", &sub_p)],
        ),
        fail(
            "step id repeated in onFailure",
            json!({ "steps": [t("x", "a")], "onFailure": [t("x", "rollback")] }),
            &[("spec.onFailure[0].id", &sub_x)],
        ),
        fail(
            "nested body id repeated in onFailure",
            json!({
                "steps": [for_each(
                    "loop",
                    json!([nested("inner", Some("n"), json!([t("x", "a")]))])
                )],
                "onFailure": [t("x", "rollback")],
            }),
            &[("spec.onFailure[0].id", &sub_x)],
        ),
        fail(
            "id repeated in onFailure",
            json!({ "steps": [t("a", "a")], "onFailure": [t("x", "r1"), t("x", "r2")] }),
            &[("spec.onFailure[1].id", &sub_x)],
        ),
    ]);
}

#[test]
fn top_level_actions() {
    let body = json!({ "items": "{{ .input.l }}", "steps": [t("b", "tool")] });
    let exclusive = "tool is mutually exclusive with forEach/parallel";
    run(vec![
        ok("tool step", wf(json!([t("a", "tool")]))),
        ok(
            "forEach step",
            wf(json!([for_each("loop", json!([t("b", "tool")]))])),
        ),
        ok(
            "parallel step",
            wf(json!([parallel("g", json!([t("p1", "a"), t("p2", "b")]))])),
        ),
        fail(
            "no action",
            wf(json!([{ "id": "a" }])),
            &[(
                "spec.steps[0]",
                "one of tool, forEach, or parallel is required",
            )],
        ),
        fail(
            "tool and forEach",
            wf(json!([{ "id": "a", "tool": "t", "forEach": body }])),
            &[("spec.steps[0]", exclusive)],
        ),
        fail(
            "tool and parallel",
            wf(json!([{ "id": "a", "tool": "t", "parallel": [t("p", "x")] }])),
            &[("spec.steps[0]", exclusive)],
        ),
        fail(
            "tool, forEach and parallel",
            wf(json!([{ "id": "a", "tool": "t", "forEach": body, "parallel": [t("p", "x")] }])),
            &[("spec.steps[0]", exclusive)],
        ),
        fail(
            "forEach and parallel",
            wf(json!([{ "id": "a", "forEach": body, "parallel": [t("p", "x")] }])),
            &[(
                "spec.steps[0]",
                "forEach and parallel are mutually exclusive",
            )],
        ),
        fail(
            "empty tool",
            wf(json!([t("a", "")])),
            &[("spec.steps[0].tool", "must not be empty")],
        ),
        fail(
            "blank tool",
            wf(json!([t("a", "  ")])),
            &[("spec.steps[0].tool", "must not be empty")],
        ),
        ok(
            "jq on a tool step",
            wf(json!([with(t("a", "tool"), json!({ "jq": "[.items[]]" }))])),
        ),
        fail(
            "empty jq",
            wf(json!([with(t("a", "tool"), json!({ "jq": " " }))])),
            &[("spec.steps[0].jq", "must not be empty")],
        ),
        fail(
            "empty parallel group",
            wf(json!([parallel("g", json!([]))])),
            &[(
                "spec.steps[0].parallel",
                "must contain at least one sub-step",
            )],
        ),
    ]);
}

#[test]
fn sub_step_actions() {
    let one_of = "exactly one of tool or forEach is required";
    let loop_items = json!({ "items": "{{ .input.l }}", "steps": [t("leaf", "tool")] });
    let deep = "spec.steps[0].forEach.steps[0].forEach.steps[0]";
    run(vec![
        ok(
            "loop body of tools",
            wf(json!([for_each("loop", json!([t("a", "x"), t("b", "y")]))])),
        ),
        ok(
            "loop body with a nested loop",
            wf(json!([for_each(
                "loop",
                json!([nested("inner", Some("n"), json!([t("c", "x")]))])
            )])),
        ),
        fail(
            "parallel group in a loop body",
            wf(json!([for_each(
                "loop",
                json!([parallel("g", json!([t("p", "x")]))])
            )])),
            &[
                ("spec.steps[0].forEach.steps[0]", one_of),
                (
                    "spec.steps[0].forEach.steps[0].parallel",
                    "is not allowed in a forEach body",
                ),
            ],
        ),
        fail(
            "tool and parallel in a loop body",
            wf(json!([for_each(
                "loop",
                json!([{ "id": "g", "tool": "x", "parallel": [t("p", "y")] }])
            )])),
            &[(
                "spec.steps[0].forEach.steps[0].parallel",
                "is not allowed in a forEach body",
            )],
        ),
        fail(
            "tool and nested loop in a loop body",
            wf(json!([for_each(
                "loop",
                json!([with(
                    nested("inner", Some("n"), json!([t("c", "x")])),
                    json!({ "tool": "x" })
                )])
            )])),
            &[("spec.steps[0].forEach.steps[0]", one_of)],
        ),
        fail(
            "no action in a loop body",
            wf(json!([for_each("loop", json!([{ "id": "b" }]))])),
            &[("spec.steps[0].forEach.steps[0]", one_of)],
        ),
        fail(
            "loop in a nested loop body",
            wf(json!([for_each(
                "loop",
                json!([nested(
                    "inner",
                    Some("n"),
                    json!([{
                        "id": "deep",
                        "forEach": {
                            "items": "{{ .vars.n }}",
                            "as": "d",
                            "steps": [t("leaf", "x")],
                        },
                    }])
                )])
            )])),
            &[
                (&format!("{deep}.tool"), "tool is required"),
                (
                    &format!("{deep}.forEach"),
                    "is not allowed in a nested forEach body",
                ),
            ],
        ),
        fail(
            "parallel group in a nested loop body",
            wf(json!([for_each(
                "loop",
                json!([nested(
                    "inner",
                    Some("n"),
                    json!([parallel("g", json!([t("p", "x")]))])
                )])
            )])),
            &[
                (&format!("{deep}.tool"), "tool is required"),
                (
                    &format!("{deep}.parallel"),
                    "is not allowed in a nested forEach body",
                ),
            ],
        ),
        fail(
            "loop in a parallel group",
            wf(json!([parallel(
                "g",
                json!([{ "id": "p", "forEach": loop_items }])
            )])),
            &[
                ("spec.steps[0].parallel[0].tool", "tool is required"),
                (
                    "spec.steps[0].parallel[0].forEach",
                    "is not allowed in a parallel group",
                ),
            ],
        ),
        fail(
            "parallel group in a parallel group",
            wf(json!([parallel(
                "g",
                json!([parallel("h", json!([t("p", "x")]))])
            )])),
            &[
                ("spec.steps[0].parallel[0].tool", "tool is required"),
                (
                    "spec.steps[0].parallel[0].parallel",
                    "is not allowed in a parallel group",
                ),
            ],
        ),
        fail(
            "no tool in a parallel group",
            wf(json!([parallel("g", json!([{ "id": "p" }]))])),
            &[("spec.steps[0].parallel[0].tool", "tool is required")],
        ),
        ok(
            "onFailure of tools",
            json!({ "steps": [t("a", "x")], "onFailure": [t("r1", "undo"), t("r2", "notify")] }),
        ),
        fail(
            "loop in onFailure",
            json!({ "steps": [t("a", "x")], "onFailure": [{ "id": "r", "forEach": loop_items }] }),
            &[
                ("spec.onFailure[0].tool", "tool is required"),
                ("spec.onFailure[0].forEach", "is not allowed in onFailure"),
            ],
        ),
        fail(
            "parallel group in onFailure",
            json!({ "steps": [t("a", "x")], "onFailure": [parallel("r", json!([t("p", "x")]))] }),
            &[
                ("spec.onFailure[0].tool", "tool is required"),
                ("spec.onFailure[0].parallel", "is not allowed in onFailure"),
            ],
        ),
        fail(
            "no tool in onFailure",
            json!({ "steps": [t("a", "x")], "onFailure": [{ "id": "r" }] }),
            &[("spec.onFailure[0].tool", "tool is required")],
        ),
    ]);
}

#[test]
fn for_each_fields() {
    let par = "must be between 1 and 50";
    let nested_path = "spec.steps[0].forEach.steps[0].forEach";
    let in_loop = |outer_as: Option<&str>, inner: Value| {
        let mut step = for_each("loop", json!([inner]));
        if let Some(a) = outer_as {
            step["forEach"]["as"] = json!(a);
        }
        wf(json!([step]))
    };
    run(vec![
        ok(
            "items template",
            wf(json!([for_each("loop", json!([t("b", "x")]))])),
        ),
        fail(
            "items missing",
            wf(json!([{ "id": "loop", "forEach": { "steps": [t("b", "x")] } }])),
            &[("spec.steps[0].forEach.items", ITEMS_RULE)],
        ),
        fail(
            "items null",
            wf(json!([for_each_with("loop", json!({ "items": null }))])),
            &[("spec.steps[0].forEach.items", ITEMS_RULE)],
        ),
        fail(
            "items an array",
            wf(json!([for_each_with(
                "loop",
                json!({ "items": ["a", "b"] })
            )])),
            &[("spec.steps[0].forEach.items", ITEMS_RULE)],
        ),
        fail(
            "items a number",
            wf(json!([for_each_with("loop", json!({ "items": 3 }))])),
            &[("spec.steps[0].forEach.items", ITEMS_RULE)],
        ),
        fail(
            "items blank",
            wf(json!([for_each_with("loop", json!({ "items": " " }))])),
            &[("spec.steps[0].forEach.items", ITEMS_RULE)],
        ),
        fail(
            "body empty",
            wf(json!([for_each("loop", json!([]))])),
            &[(
                "spec.steps[0].forEach.steps",
                "steps is required and must contain at least one sub-step",
            )],
        ),
        fail(
            "body missing",
            wf(json!([{ "id": "loop", "forEach": { "items": "{{ .input.l }}" } }])),
            &[(
                "spec.steps[0].forEach.steps",
                "steps is required and must contain at least one sub-step",
            )],
        ),
        fail(
            "parallelism 0",
            wf(json!([for_each_with("loop", json!({ "parallelism": 0 }))])),
            &[("spec.steps[0].forEach.parallelism", par)],
        ),
        fail(
            "parallelism 51",
            wf(json!([for_each_with("loop", json!({ "parallelism": 51 }))])),
            &[("spec.steps[0].forEach.parallelism", par)],
        ),
        fail(
            "parallelism negative",
            wf(json!([for_each_with("loop", json!({ "parallelism": -1 }))])),
            &[("spec.steps[0].forEach.parallelism", par)],
        ),
        ok(
            "parallelism 1",
            wf(json!([for_each_with("loop", json!({ "parallelism": 1 }))])),
        ),
        ok(
            "parallelism 50",
            wf(json!([for_each_with("loop", json!({ "parallelism": 50 }))])),
        ),
        ok(
            "as a variable name",
            wf(json!([for_each_with("loop", json!({ "as": "cluster_1" }))])),
        ),
        fail(
            "as with a -",
            wf(json!([for_each_with("loop", json!({ "as": "bad-name" }))])),
            &[(
                "spec.steps[0].forEach.as",
                "must match ^[a-zA-Z][a-zA-Z0-9_]*$",
            )],
        ),
        fail(
            "as starting with a digit",
            wf(json!([for_each_with("loop", json!({ "as": "9x" }))])),
            &[(
                "spec.steps[0].forEach.as",
                "must match ^[a-zA-Z][a-zA-Z0-9_]*$",
            )],
        ),
        fail(
            "nested as and outer as both default",
            in_loop(None, nested("inner", None, json!([t("c", "x")]))),
            &[(
                &format!("{nested_path}.as"),
                "must differ from the outer loop's (item)",
            )],
        ),
        fail(
            "nested as item, outer as default",
            in_loop(None, nested("inner", Some("item"), json!([t("c", "x")]))),
            &[(
                &format!("{nested_path}.as"),
                "must differ from the outer loop's (item)",
            )],
        ),
        fail(
            "nested as equal to a named outer as",
            in_loop(
                Some("cluster"),
                nested("inner", Some("cluster"), json!([t("c", "x")])),
            ),
            &[(
                &format!("{nested_path}.as"),
                "must differ from the outer loop's (cluster)",
            )],
        ),
        ok(
            "nested as default, outer as named",
            in_loop(Some("cluster"), nested("inner", None, json!([t("c", "x")]))),
        ),
        ok(
            "nested as differs",
            in_loop(None, nested("inner", Some("pod"), json!([t("c", "x")]))),
        ),
        fail(
            "nested parallelism 51",
            in_loop(
                None,
                with(
                    nested("inner", Some("n"), json!([t("c", "x")])),
                    json!({ "forEach": { "parallelism": 51 } }),
                ),
            ),
            &[(&format!("{nested_path}.parallelism"), par)],
        ),
        fail(
            "nested items missing",
            in_loop(
                None,
                json!({ "id": "inner", "forEach": { "as": "n", "steps": [t("c", "x")] } }),
            ),
            &[(&format!("{nested_path}.items"), ITEMS_RULE)],
        ),
        fail(
            "nested body empty",
            in_loop(None, nested("inner", Some("n"), json!([]))),
            &[(
                &format!("{nested_path}.steps"),
                "must contain at least one sub-step",
            )],
        ),
    ]);
}

#[test]
fn paginate() {
    let paged = |p: Value| {
        wf(json!([with(
            t("list", "x_kubernetes_list"),
            json!({ "paginate": p })
        )]))
    };
    let max = "must be between 1 and 1000";
    run(vec![
        ok("paginate with defaults", paged(json!({}))),
        ok(
            "paginate with every field",
            paged(json!({
                "itemsField": "data.items",
                "tokenField": "metadata.continue",
                "tokenArg": "continue",
                "maxPages": 10,
            })),
        ),
        ok("maxPages 1", paged(json!({ "maxPages": 1 }))),
        ok("maxPages 1000", paged(json!({ "maxPages": 1000 }))),
        fail(
            "maxPages 0",
            paged(json!({ "maxPages": 0 })),
            &[("spec.steps[0].paginate.maxPages", max)],
        ),
        fail(
            "maxPages 1001",
            paged(json!({ "maxPages": 1001 })),
            &[("spec.steps[0].paginate.maxPages", max)],
        ),
        fail(
            "empty itemsField",
            paged(json!({ "itemsField": "" })),
            &[("spec.steps[0].paginate.itemsField", "must not be empty")],
        ),
        fail(
            "blank tokenField",
            paged(json!({ "tokenField": " " })),
            &[("spec.steps[0].paginate.tokenField", "must not be empty")],
        ),
        fail(
            "empty tokenArg",
            paged(json!({ "tokenArg": "" })),
            &[("spec.steps[0].paginate.tokenArg", "must not be empty")],
        ),
        fail(
            "paginate on a loop",
            wf(json!([with(
                for_each("loop", json!([t("b", "x")])),
                json!({ "paginate": {} })
            )])),
            &[("spec.steps[0].paginate", "is allowed on tool steps only")],
        ),
        fail(
            "paginate on a parallel group",
            wf(json!([with(
                parallel("g", json!([t("p", "x")])),
                json!({ "paginate": {} })
            )])),
            &[("spec.steps[0].paginate", "is allowed on tool steps only")],
        ),
        ok(
            "paginate on a loop body tool",
            wf(json!([for_each(
                "loop",
                json!([with(t("b", "x"), json!({ "paginate": { "maxPages": 3 } }))])
            )])),
        ),
    ]);
}

#[test]
fn conditions() {
    let path = "spec.steps[1].condition";
    let expect = json!({ "success": true });
    let needs_expect = "a tool or fromStep condition requires expect or expectNot";
    run(vec![
        ok(
            "template",
            conditioned(json!({ "template": "{{ eq .input.env \"prod\" }}" })),
        ),
        ok(
            "template with an ignored expect",
            conditioned(json!({ "template": "{{ true }}", "expect": {} })),
        ),
        fail(
            "no source",
            conditioned(json!({})),
            &[(
                path,
                "condition requires exactly one of template, tool, or fromStep",
            )],
        ),
        fail(
            "template and tool",
            conditioned(json!({ "template": "{{ true }}", "tool": "check", "expect": expect })),
            &[(
                path,
                "condition.template is mutually exclusive with tool/fromStep",
            )],
        ),
        fail(
            "template and fromStep",
            conditioned(json!({ "template": "{{ true }}", "fromStep": "first" })),
            &[(
                path,
                "condition.template is mutually exclusive with tool/fromStep",
            )],
        ),
        fail(
            "template, tool and fromStep",
            conditioned(json!({ "template": "{{ true }}", "tool": "check", "fromStep": "first" })),
            &[(
                path,
                "condition.template is mutually exclusive with tool/fromStep",
            )],
        ),
        fail(
            "tool and fromStep",
            conditioned(json!({ "tool": "check", "fromStep": "first", "expect": expect })),
            &[(
                path,
                "condition: tool and fromStep are mutually exclusive \
                 (set exactly one of template, tool, or fromStep)",
            )],
        ),
        fail(
            "tool without expectation",
            conditioned(json!({ "tool": "check" })),
            &[(path, needs_expect)],
        ),
        fail(
            "fromStep without expectation",
            conditioned(json!({ "fromStep": "first" })),
            &[(path, needs_expect)],
        ),
        ok(
            "tool with expect",
            conditioned(json!({ "tool": "check", "args": { "a": 1 }, "expect": expect })),
        ),
        ok(
            "tool with expectNot",
            conditioned(json!({ "tool": "check", "expectNot": expect })),
        ),
        ok(
            "fromStep with expect and expectNot",
            conditioned(json!({
                "fromStep": "first",
                "expect": { "jsonPath": { "status": "connected" } },
                "expectNot": { "success": false },
            })),
        ),
        ok(
            "explicit success false",
            conditioned(json!({ "tool": "check", "expect": { "success": false } })),
        ),
        ok(
            "jsonPath only",
            conditioned(
                json!({ "tool": "check", "expect": { "jsonPath": { "items[0].name": "a" } } }),
            ),
        ),
        fail(
            "empty expect",
            conditioned(json!({ "tool": "check", "expect": {} })),
            &[(
                &format!("{path}.expect"),
                "either success or jsonPath must be provided",
            )],
        ),
        fail(
            "empty expectNot",
            conditioned(json!({ "fromStep": "first", "expectNot": {} })),
            &[(
                &format!("{path}.expectNot"),
                "either success or jsonPath must be provided",
            )],
        ),
        fail(
            "empty condition tool",
            conditioned(json!({ "tool": "", "expect": expect })),
            &[(&format!("{path}.tool"), "must not be empty")],
        ),
        fail(
            "empty fromStep",
            conditioned(json!({ "fromStep": "", "expect": expect })),
            &[(&format!("{path}.fromStep"), "must not be empty")],
        ),
    ]);
}

#[test]
fn from_step_names_an_earlier_step() {
    let earlier = "must name an earlier step";
    let expect = json!({ "success": true });
    let from =
        |step: &str| json!({ "condition": { "fromStep": step, "expect": { "success": true } } });
    run(vec![
        ok(
            "the step before",
            conditioned(json!({ "fromStep": "first", "expect": expect })),
        ),
        fail(
            "a later step",
            wf(json!([
                with(t("first", "a"), from("second")),
                t("second", "b")
            ])),
            &[(
                "spec.steps[0].condition.fromStep",
                "must name an earlier step, 'second' is not one",
            )],
        ),
        fail(
            "an unknown step",
            conditioned(json!({ "fromStep": "nope", "expect": expect })),
            &[(
                "spec.steps[1].condition.fromStep",
                "must name an earlier step, 'nope' is not one",
            )],
        ),
        fail(
            "the step itself",
            conditioned(json!({ "fromStep": "second", "expect": expect })),
            &[("spec.steps[1].condition.fromStep", earlier)],
        ),
        fail(
            "a loop's own body sub-step",
            wf(json!([with(
                for_each("loop", json!([t("b", "x")])),
                from("b")
            )])),
            &[("spec.steps[0].condition.fromStep", earlier)],
        ),
        fail(
            "a loop body sub-step naming its loop",
            wf(json!([for_each(
                "loop",
                json!([with(t("b", "x"), from("loop"))])
            )])),
            &[("spec.steps[0].forEach.steps[0].condition.fromStep", earlier)],
        ),
        ok(
            "a loop body sub-step naming an earlier sibling",
            wf(json!([for_each(
                "loop",
                json!([t("a", "x"), with(t("b", "y"), from("a"))])
            )])),
        ),
        ok(
            "a nested body sub-step naming an earlier outer sub-step",
            wf(json!([for_each(
                "loop",
                json!([
                    t("a", "x"),
                    nested("inner", Some("n"), json!([with(t("c", "y"), from("a"))]))
                ])
            )])),
        ),
        ok(
            "a step after a loop naming the loop and its body",
            wf(json!([
                for_each("loop", json!([t("b", "x")])),
                with(t("after", "y"), from("loop")),
                with(t("after2", "z"), from("b")),
            ])),
        ),
        fail(
            "a parallel sub-step naming a sibling",
            wf(json!([parallel(
                "g",
                json!([t("p1", "a"), with(t("p2", "b"), from("p1"))])
            )])),
            &[("spec.steps[0].parallel[1].condition.fromStep", earlier)],
        ),
        fail(
            "a parallel sub-step naming a later sibling",
            wf(json!([parallel(
                "g",
                json!([with(t("p1", "a"), from("p2")), t("p2", "b")])
            )])),
            &[("spec.steps[0].parallel[0].condition.fromStep", earlier)],
        ),
        fail(
            "a parallel group naming its own sub-step",
            wf(json!([with(
                parallel("g", json!([t("p1", "a")])),
                from("p1")
            )])),
            &[("spec.steps[0].condition.fromStep", earlier)],
        ),
        ok(
            "a parallel sub-step naming a step before the group",
            wf(json!([
                t("first", "a"),
                parallel("g", json!([with(t("p1", "b"), from("first"))]))
            ])),
        ),
        ok(
            "a step after a parallel group naming its sub-steps",
            wf(json!([
                parallel("g", json!([t("p1", "a"), t("p2", "b")])),
                with(t("after", "c"), from("p1")),
                with(t("after2", "d"), from("p2")),
                with(t("after3", "e"), from("g")),
            ])),
        ),
        ok(
            "onFailure naming a step",
            json!({
                "steps": [t("first", "a")],
                "onFailure": [with(t("undo", "b"), from("first"))],
            }),
        ),
        fail(
            "a step naming an onFailure step",
            json!({
                "steps": [t("first", "a"), with(t("second", "b"), from("undo"))],
                "onFailure": [t("undo", "c")],
            }),
            &[("spec.steps[1].condition.fromStep", earlier)],
        ),
    ]);
}

#[test]
fn arguments() {
    let one_of = "must be one of string, integer, boolean, number, object, array";
    let arg = |ty: &str, default: Value| args(json!({ "x": { "type": ty, "default": default } }));
    let mismatch = |ty: &'static str, default: Value| {
        (
            format!("{ty} with default {default}"),
            arg(ty, default),
            format!("must be of type {ty}"),
        )
    };
    let mut cases = vec![
        ok(
            "every type with a matching default",
            args(json!({
                "s": { "type": "string", "default": "x", "required": true },
                "i": { "type": "integer", "default": 3 },
                "b": { "type": "boolean", "default": false },
                "n": { "type": "number", "default": 1.5 },
                "o": { "type": "object", "default": { "a": 1 } },
                "a": { "type": "array", "default": [1, "two"] },
            })),
        ),
        ok(
            "integer with a whole float default",
            arg("integer", json!(2.0)),
        ),
        ok("number with an integer default", arg("number", json!(3))),
        ok("null default", arg("object", Value::Null)),
        ok("no default", args(json!({ "x": { "type": "string" } }))),
        fail(
            "type missing",
            args(json!({ "x": { "required": true } })),
            &[("spec.args.x.type", "type is required")],
        ),
        fail(
            "type missing with a default",
            args(json!({ "x": { "default": 1 } })),
            &[("spec.args.x.type", "type is required")],
        ),
        fail(
            "type empty",
            arg("", Value::Null),
            &[("spec.args.x.type", "type is required")],
        ),
        fail(
            "type unknown",
            arg("str", Value::Null),
            &[("spec.args.x.type", one_of)],
        ),
        fail(
            "type is case-sensitive",
            arg("String", Value::Null),
            &[("spec.args.x.type", one_of)],
        ),
        fail(
            "argument name with a -",
            args(json!({ "bad-name": { "type": "string" } })),
            &[(
                "spec.args.bad-name",
                "argument name must match ^[a-zA-Z][a-zA-Z0-9_]*$",
            )],
        ),
    ];
    for (name, spec, rule) in [
        mismatch("string", json!(1)),
        mismatch("integer", json!("1")),
        mismatch("integer", json!(1.5)),
        mismatch("boolean", json!("true")),
        mismatch("number", json!("1")),
        mismatch("object", json!([])),
        mismatch("array", json!({})),
    ] {
        cases.push(fail(name, spec, &[("spec.args.x.default", &rule)]));
    }
    run(cases);
    for ty in ArgType::ALL {
        assert_eq!(ArgType::parse(ty.as_str()), Some(ty));
    }
}

#[test]
fn description_limits() {
    let described_step = |n: usize| {
        wf(json!([with(
            t("a", "x"),
            json!({ "description": chars('d', n) })
        )]))
    };
    let described_arg =
        |n: usize| args(json!({ "x": { "type": "string", "description": chars('d', n) } }));
    run(vec![
        ok(
            "workflow description of 1000",
            json!({ "description": chars('d', 1000), "steps": [t("a", "x")] }),
        ),
        ok(
            "workflow description of 1000 two-byte characters",
            json!({ "description": chars('é', 1000), "steps": [t("a", "x")] }),
        ),
        fail(
            "workflow description of 1001",
            json!({ "description": chars('d', 1001), "steps": [t("a", "x")] }),
            &[("spec.description", "must be at most 1000 characters")],
        ),
        ok("step description of 500", described_step(500)),
        fail(
            "step description of 501",
            described_step(501),
            &[(
                "spec.steps[0].description",
                "must be at most 500 characters",
            )],
        ),
        fail(
            "sub-step description of 501",
            wf(json!([parallel(
                "g",
                json!([with(t("p", "x"), json!({ "description": chars('d', 501) }))])
            )])),
            &[(
                "spec.steps[0].parallel[0].description",
                "must be at most 500 characters",
            )],
        ),
        ok("argument description of 500", described_arg(500)),
        fail(
            "argument description of 501",
            described_arg(501),
            &[("spec.args.x.description", "must be at most 500 characters")],
        ),
    ]);
}

#[test]
fn every_violation_is_reported_at_once() {
    let spec = parse(&json!({
        "description": chars('d', 1001),
        "args": { "x": { "type": "str" } },
        "steps": [
            { "id": "a" },
            t("a", "x"),
            { "id": "loop", "forEach": { "items": [1], "parallelism": 0, "steps": [] } },
        ],
        "onFailure": [{ "id": "r" }],
    }));
    let errs = spec.validate().expect_err("invalid");
    for (path, fragment) in [
        ("spec.description", "must be at most 1000 characters"),
        ("spec.args.x.type", "must be one of"),
        (
            "spec.steps[0]",
            "one of tool, forEach, or parallel is required",
        ),
        ("spec.steps[1].id", "duplicate step ID 'a' found"),
        ("spec.steps[2].forEach.items", ITEMS_RULE),
        (
            "spec.steps[2].forEach.parallelism",
            "must be between 1 and 50",
        ),
        (
            "spec.steps[2].forEach.steps",
            "must contain at least one sub-step",
        ),
        ("spec.onFailure[0].tool", "tool is required"),
    ] {
        assert!(
            errs.contains(path, fragment),
            "missing {path}: {fragment} in {errs}"
        );
    }
    assert_eq!(errs.len(), 8, "{errs}");
}

#[test]
fn snake_case_spellings_parse_like_camel_case() {
    let snake = r#"
steps:
  - id: risky
    tool: external_api_call
    allow_failure: true
  - id: check
    tool: probe
    condition:
      from_step: risky
      expect_not:
        success: true
        json_path:
          status: failed
  - id: loop
    for_each:
      items: "{{ .input.clusters }}"
      steps:
        - id: per_cluster
          tool: inspect
on_failure:
  - id: undo
    tool: rollback
"#;
    let camel = r#"
steps:
  - id: risky
    tool: external_api_call
    allowFailure: true
  - id: check
    tool: probe
    condition:
      fromStep: risky
      expectNot:
        success: true
        jsonPath:
          status: failed
  - id: loop
    forEach:
      items: "{{ .input.clusters }}"
      steps:
        - id: per_cluster
          tool: inspect
onFailure:
  - id: undo
    tool: rollback
"#;
    let from_snake: WorkflowSpec = serde_norway::from_str(snake).expect("snake_case parses");
    let from_camel: WorkflowSpec = serde_norway::from_str(camel).expect("camelCase parses");
    assert_eq!(from_snake, from_camel);
    assert!(from_snake.validate().is_ok());
    assert!(from_snake.steps[0].allow_failure);
    assert_eq!(from_snake.on_failure.len(), 1);
    let condition = from_snake.steps[1].condition.as_ref().expect("condition");
    assert_eq!(condition.from_step.as_deref(), Some("risky"));
    let expect_not = condition.expect_not.as_ref().expect("expectNot");
    assert_eq!(
        expect_not.json_path.as_ref().map(|m| m["status"].clone()),
        Some(json!("failed"))
    );

    // The same holds for JSON, and it serializes back in camelCase.
    let json_snake: WorkflowSpec = serde_json::from_value(json!({
        "steps": [{ "id": "a", "tool": "x", "allow_failure": true }],
        "on_failure": [{ "id": "b", "tool": "y" }],
    }))
    .expect("snake_case JSON parses");
    let out = serde_json::to_value(&json_snake).expect("serializes");
    assert_eq!(
        out,
        json!({
            "steps": [{ "id": "a", "tool": "x", "allowFailure": true }],
            "onFailure": [{ "id": "b", "tool": "y" }],
        })
    );
}

#[test]
fn referenced_tools_is_the_sorted_set_of_every_tool() {
    let spec = parse(&json!({
        "steps": [
            with(t("a", "zeta"), tool_condition("cond_tool")),
            for_each("loop", json!([
                t("b", "alpha"),
                nested("inner", Some("n"), json!([
                    with(t("c", "nested_tool"), tool_condition("nested_cond")),
                ])),
            ])),
            parallel("group", json!([t("p1", "beta"), t("p2", "alpha")])),
            with(t("d", "zeta"), json!({ "condition": { "template": "{{ true }}" } })),
            with(
                t("e", "gamma"),
                json!({ "condition": { "fromStep": "d", "expect": { "success": true } } }),
            ),
        ],
        "onFailure": [t("undo", "rollback")],
    }));
    assert_eq!(
        spec.referenced_tools(),
        [
            "alpha",
            "beta",
            "cond_tool",
            "gamma",
            "nested_cond",
            "nested_tool",
            "rollback",
            "zeta"
        ]
    );
    assert!(
        parse(&wf(json!([parallel("g", json!([]))])))
            .referenced_tools()
            .is_empty()
    );
}

#[test]
fn computed_status_of_a_valid_spec() {
    let spec = parse(&json!({
        "steps": [
            t("a", "x_list"),
            for_each("loop", json!([t("b", "x_get"), t("c", "x_get")])),
            parallel("group", json!([t("p1", "x_ping")])),
        ],
        "onFailure": [t("undo", "x_undo")],
    }));
    let status = spec.computed_status();
    assert!(status.valid);
    assert!(status.validation_errors.is_empty());
    assert_eq!(
        status.referenced_tools,
        ["x_get", "x_list", "x_ping", "x_undo"]
    );
    assert_eq!(status.step_count, 3);
    assert!(status.conditions.is_empty());
    assert_eq!(
        serde_json::to_value(&status).expect("serializes"),
        json!({
            "valid": true,
            "referencedTools": ["x_get", "x_list", "x_ping", "x_undo"],
            "stepCount": 3,
        })
    );
}

#[test]
fn computed_status_of_an_invalid_spec() {
    let spec = parse(&wf(json!([{ "tool": "x" }, t("b", "y"), t("b", "z")])));
    let status = spec.computed_status();
    assert!(!status.valid);
    assert_eq!(
        status.validation_errors,
        [
            "spec.steps[0].id: id is required",
            "spec.steps[2].id: duplicate step ID 'b' found"
        ]
    );
    assert_eq!(
        status.validation_errors,
        spec.validate().expect_err("invalid").messages()
    );
    assert_eq!(status.referenced_tools, ["x", "y", "z"]);
    assert_eq!(status.step_count, 3);

    let empty = parse(&json!({})).computed_status();
    assert!(!empty.valid);
    assert_eq!(
        empty.validation_errors,
        ["spec.steps: workflow must have at least one step"]
    );
    assert_eq!(empty.step_count, 0);
}

#[test]
fn warnings() {
    let warnings = |spec: Value| {
        let spec = parse(&spec);
        assert!(
            spec.validate().is_ok(),
            "warnings never make a spec invalid"
        );
        spec.warnings()
    };
    let deprecated =
        |path: &str, id: &str| format!("{path} ({id}): store is deprecated, use output");
    let inert = |path: &str, id: &str| {
        format!(
            "{path} ({id}): output/store has no effect because the workflow declares an \
             output template"
        )
    };
    let template = json!({ "summary": "{{ .results.a }}" });

    assert!(warnings(wf(json!([t("a", "x")]))).is_empty());
    assert!(warnings(wf(json!([with(t("a", "x"), json!({ "output": true }))]))).is_empty());
    assert_eq!(
        warnings(wf(json!([with(t("a", "x"), json!({ "store": true }))]))),
        [deprecated("spec.steps[0]", "a")]
    );
    assert_eq!(
        warnings(wf(json!([with(t("a", "x"), json!({ "store": false }))]))),
        [deprecated("spec.steps[0]", "a")]
    );
    assert!(
        warnings(wf(json!([with(
            t("a", "x"),
            json!({ "store": true, "output": true })
        )])))
        .is_empty(),
        "store next to output is not reported as deprecated"
    );
    assert_eq!(
        warnings(
            json!({ "steps": [with(t("a", "x"), json!({ "output": true }))], "output": template })
        ),
        [inert("spec.steps[0]", "a")]
    );
    assert_eq!(
        warnings(
            json!({ "steps": [with(t("a", "x"), json!({ "store": true }))], "output": template })
        ),
        [
            deprecated("spec.steps[0]", "a"),
            inert("spec.steps[0]", "a")
        ]
    );
    assert!(warnings(json!({ "steps": [t("a", "x")], "output": template })).is_empty());
    assert_eq!(
        warnings(json!({
            "steps": [
                parallel("g", json!([with(t("p", "x"), json!({ "output": true }))])),
                for_each("loop", json!([
                    with(t("b", "y"), json!({ "store": true })),
                    nested(
                        "inner",
                        Some("n"),
                        json!([with(t("c", "z"), json!({ "store": true, "output": false }))]),
                    ),
                ])),
            ],
            "output": template,
        })),
        [
            inert("spec.steps[0].parallel[0]", "p"),
            deprecated("spec.steps[1].forEach.steps[0]", "b"),
            inert("spec.steps[1].forEach.steps[0]", "b"),
            inert("spec.steps[1].forEach.steps[1].forEach.steps[0]", "c"),
        ]
    );
    assert_eq!(
        warnings(wf(json!([for_each(
            "loop",
            json!([nested(
                "inner",
                Some("n"),
                json!([with(t("c", "z"), json!({ "store": true }))])
            ),])
        )]))),
        [deprecated(
            "spec.steps[0].forEach.steps[0].forEach.steps[0]",
            "c"
        )]
    );
}

#[test]
fn step_accessors() {
    let spec = parse(&wf(json!([
        with(t("a", "x"), json!({ "store": true })),
        with(t("b", "x"), json!({ "store": true, "output": false })),
        for_each("loop", json!([t("c", "y")])),
        parallel("group", json!([t("p1", "z"), t("p2", "z")])),
        { "id": "none" },
    ])));
    let steps = &spec.steps;
    assert!(steps[0].effective_output());
    assert!(!steps[1].effective_output(), "output wins over store");
    assert_eq!(steps[0].action(), Some(StepAction::Tool("x")));
    assert!(matches!(steps[2].action(), Some(StepAction::ForEach(f)) if f.variable() == "item"));
    assert!(matches!(steps[3].action(), Some(StepAction::Parallel(g)) if g.len() == 2));
    assert_eq!(steps[4].action(), None);
    let children: Vec<&str> = steps[3].children().map(|s| s.id.as_str()).collect();
    assert_eq!(children, ["p1", "p2"]);
}
