//! The WorkflowExecution CRD (`wfe`): no status subresource, immutable once finished.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use muster_core::resource::execution::ExecutionRecord;
use serde_json::{Value, json};

use super::schema::{rule, set, structural_schema_of, validations};
use super::{CrdShape, age_column, build};

/// The `spec` schema of WorkflowExecution.
pub(crate) fn spec_schema() -> Value {
    let mut s = structural_schema_of::<ExecutionRecord>();
    set(&mut s, &["startedAt"], "format", json!("date-time"));
    set(&mut s, &["completedAt"], "format", json!("date-time"));
    validations(
        &mut s,
        &[],
        &[rule(
            "oldSelf.status == 'inprogress' || self == oldSelf",
            "a finished WorkflowExecution is immutable",
        )],
    );
    s
}

/// The CRD of WorkflowExecution: columns Workflow, Status, Duration(ms), Started, Age.
pub fn workflow_execution_crd() -> CustomResourceDefinition {
    build(CrdShape {
        kind: "WorkflowExecution",
        plural: "workflowexecutions",
        singular: "workflowexecution",
        short_names: &["wfe"],
        spec_description: "The record of one workflow run, written by muster; immutable once the run finished.",
        spec: spec_schema(),
        status: None,
        printer_columns: json!([
            { "name": "Workflow", "type": "string", "jsonPath": ".spec.workflowName" },
            { "name": "Status", "type": "string", "jsonPath": ".spec.status" },
            { "name": "Duration(ms)", "type": "integer", "jsonPath": ".spec.durationMs" },
            { "name": "Started", "type": "date", "jsonPath": ".spec.startedAt" },
            age_column(),
        ]),
    })
}
