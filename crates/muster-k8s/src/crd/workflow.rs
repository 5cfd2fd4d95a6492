//! The Workflow CRD (`wf`).
//!
//! A CRD schema cannot be recursive, so the one core [`Step`] type is unrolled into the levels
//! the CRD reference defines: a top-level step (tool, forEach or parallel), a forEach body
//! sub-step (tool or a nested forEach), a nested loop's step and a parallel / onFailure
//! sub-step (tool calls only).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use muster_core::resource::workflow::{ForEach, Step, WorkflowSpec, WorkflowStatus};
use serde_json::{Value, json};

use super::schema::{
    Rule, remove_property, require, rule, rule_at, set, structural_schema_of, unrequire,
    validations,
};
use super::{CrdShape, age_column, build, with_observed_generation};

/// Where a step sits, which decides the actions it may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// `spec.steps[]`: tool, forEach or parallel.
    Top,
    /// `forEach.steps[]` of a top-level loop: tool or a nested forEach.
    Body,
    /// The steps of a nested loop, `parallel[]` and `onFailure[]`: tool calls.
    Leaf,
}

const CONDITION_RULES: &[Rule] = &[
    rule(
        "(has(self.template) ? 1 : 0) + (has(self.tool) ? 1 : 0) + (has(self.fromStep) ? 1 : 0) == 1",
        "a condition sets exactly one of template, tool or fromStep",
    ),
    rule(
        "has(self.template) || has(self.expect) || has(self.expectNot)",
        "a tool or fromStep condition must declare expect or expectNot",
    ),
];

const UNIQUE_IDS: Rule = rule(
    "self.all(x, self.exists_one(y, y.id == x.id))",
    "step ids must be unique",
);

fn step_schema(level: Level) -> Value {
    let mut s = structural_schema_of::<Step>();
    remove_property(&mut s, &[], "forEach");
    remove_property(&mut s, &[], "parallel");
    unrequire(&mut s, &[]);
    require(&mut s, &[], &["id"]);
    set(&mut s, &["id"], "pattern", json!("^[a-zA-Z0-9_-]+$"));
    set(&mut s, &["id"], "maxLength", json!(63));
    set(&mut s, &["description"], "maxLength", json!(500));
    set(&mut s, &["paginate", "maxPages"], "minimum", json!(1));
    set(&mut s, &["paginate", "maxPages"], "maximum", json!(1000));
    validations(&mut s, &["condition"], CONDITION_RULES);
    validations(
        &mut s,
        &[],
        &[rule_at(
            ".paginate",
            "!has(self.paginate) || has(self.tool)",
            "paginate is only for tool steps",
        )],
    );
    match level {
        Level::Top => {
            s["properties"]["forEach"] = for_each_schema(Level::Body);
            s["properties"]["parallel"] = json!({
                "type": "array",
                "description": "Sub-steps executed concurrently.",
                "minItems": 1,
                "items": step_schema(Level::Leaf),
                "x-kubernetes-validations": [{"rule": UNIQUE_IDS.rule, "message": UNIQUE_IDS.message}],
            });
            validations(
                &mut s,
                &[],
                &[rule(
                    "(has(self.tool) ? 1 : 0) + (has(self.forEach) ? 1 : 0) + (has(self.parallel) ? 1 : 0) == 1",
                    "a step sets exactly one of tool, forEach or parallel",
                )],
            );
        }
        Level::Body => {
            s["properties"]["forEach"] = for_each_schema(Level::Leaf);
            validations(
                &mut s,
                &[],
                &[rule(
                    "(has(self.tool) ? 1 : 0) + (has(self.forEach) ? 1 : 0) == 1",
                    "a sub-step sets exactly one of tool or forEach",
                )],
            );
        }
        Level::Leaf => {
            validations(
                &mut s,
                &[],
                &[rule_at(".tool", "has(self.tool)", "tool is required")],
            );
        }
    }
    s
}

fn for_each_schema(body: Level) -> Value {
    let mut f = structural_schema_of::<ForEach>();
    unrequire(&mut f, &[]);
    require(&mut f, &[], &["items", "steps"]);
    set(&mut f, &["parallelism"], "minimum", json!(1));
    set(&mut f, &["parallelism"], "maximum", json!(50));
    set(
        &mut f,
        &["as"],
        "pattern",
        json!("^[a-zA-Z_][a-zA-Z0-9_]*$"),
    );
    f["properties"]["steps"] = json!({
        "type": "array",
        "description": "Body executed once per item.",
        "minItems": 1,
        "items": step_schema(body),
        "x-kubernetes-validations": [{"rule": UNIQUE_IDS.rule, "message": UNIQUE_IDS.message}],
    });
    if body == Level::Body {
        validations(
            &mut f,
            &[],
            &[rule(
                "self.steps.all(s, !has(s.forEach) || (has(s.forEach.as) ? s.forEach.as : 'item') != (has(self.as) ? self.as : 'item'))",
                "a nested forEach's as must differ from the outer loop's",
            )],
        );
    }
    f
}

/// The `spec` schema of Workflow.
pub(crate) fn spec_schema() -> Value {
    let mut s = structural_schema_of::<WorkflowSpec>();
    unrequire(&mut s, &[]);
    require(&mut s, &[], &["steps"]);
    set(&mut s, &["description"], "maxLength", json!(1000));
    set(
        &mut s,
        &["args", "{}", "type"],
        "enum",
        json!(["string", "integer", "boolean", "number", "object", "array"]),
    );
    set(
        &mut s,
        &["args", "{}", "description"],
        "maxLength",
        json!(500),
    );
    s["properties"]["steps"] = json!({
        "type": "array",
        "description": "The steps, at least one.",
        "minItems": 1,
        "items": step_schema(Level::Top),
        "x-kubernetes-validations": [{"rule": UNIQUE_IDS.rule, "message": UNIQUE_IDS.message}],
    });
    s["properties"]["onFailure"] = json!({
        "type": "array",
        "description": "Cleanup steps run when the workflow fails on a step that does not allow failure.",
        "items": step_schema(Level::Leaf),
    });
    s
}

/// The CRD of Workflow: status subresource; columns Valid, Steps, Age.
pub fn workflow_crd() -> CustomResourceDefinition {
    build(CrdShape {
        kind: "Workflow",
        plural: "workflows",
        singular: "workflow",
        short_names: &["wf"],
        spec_description: "A multi-step process muster exposes as the tool workflow_<name>.",
        spec: spec_schema(),
        status: Some(with_observed_generation(structural_schema_of::<
            WorkflowStatus,
        >())),
        printer_columns: json!([
            { "name": "Valid", "type": "boolean", "jsonPath": ".status.valid" },
            { "name": "Steps", "type": "integer", "jsonPath": ".status.stepCount" },
            age_column(),
        ]),
    })
}
