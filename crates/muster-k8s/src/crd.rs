//! The three custom resource definitions of muster, generated from the muster-core spec types.
//!
//! Each CRD's OpenAPI schema is the schema of the core type (through schemars), made
//! structural (the `structural` module), with the constraints of the CRD reference added as OpenAPI
//! validation (patterns, ranges, enums, sizes) and as CEL `x-kubernetes-validations` rules (the
//! cross-field rules: exactly one of `tool`/`forEach`/`parallel`, the credential refusals, the
//! auth field rules, ...). So the API server refuses a bad `kubectl apply` and names the field
//! and the rule, before muster sees it.
//!
//! [`crds`] returns them; [`crds_yaml`] renders them as one multi-document YAML stream, which
//! `muster crd` prints and `deploy/crds/muster.yaml` holds.

mod mcp_server;
mod schema;
mod structural;
mod workflow;
mod workflow_execution;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use crate::error::Error;

pub use mcp_server::mcp_server_crd;
pub use workflow::workflow_crd;
pub use workflow_execution::workflow_execution_crd;

/// The API group, `muster.giantswarm.io`.
pub const GROUP: &str = muster_core::API_GROUP;
/// The served and stored version, `v1alpha1`.
pub const VERSION: &str = "v1alpha1";

/// The CRDs of MCPServer, Workflow and WorkflowExecution, in that order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![mcp_server_crd(), workflow_crd(), workflow_execution_crd()]
}

/// The CRDs as one YAML stream of three documents separated by `---`.
pub fn crds_yaml() -> Result<String, Error> {
    let mut out = String::new();
    for crd in crds() {
        out.push_str("---\n");
        out.push_str(&serde_norway::to_string(&crd).map_err(|e| Error::Codec(e.to_string()))?);
    }
    Ok(out)
}

/// What differs between the three CRDs.
struct CrdShape {
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    short_names: &'static [&'static str],
    spec_description: &'static str,
    spec: Value,
    status: Option<Value>,
    printer_columns: Value,
}

fn build(mut shape: CrdShape) -> CustomResourceDefinition {
    shape.spec["description"] = Value::String(shape.spec_description.to_owned());
    let mut properties = json!({
        "apiVersion": { "type": "string" },
        "kind": { "type": "string" },
        "metadata": { "type": "object" },
        "spec": shape.spec,
    });
    let mut subresources = json!({});
    if let Some(status) = shape.status {
        properties["status"] = status;
        subresources = json!({ "status": {} });
    }
    let value = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{}.{GROUP}", shape.plural) },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": shape.kind,
                "listKind": format!("{}List", shape.kind),
                "plural": shape.plural,
                "singular": shape.singular,
                "shortNames": shape.short_names,
                "categories": ["muster"],
            },
            "scope": "Namespaced",
            "versions": [{
                "name": VERSION,
                "served": true,
                "storage": true,
                "additionalPrinterColumns": shape.printer_columns,
                "subresources": subresources,
                "schema": { "openAPIV3Schema": {
                    "description": format!("A muster {} resource.", shape.kind),
                    "type": "object",
                    "required": ["spec"],
                    "properties": properties,
                }},
            }],
        },
    });
    // The shape above is fixed; a failure here is a bug caught by the golden test.
    serde_json::from_value(value)
        .unwrap_or_else(|e| panic!("the {} CRD is malformed: {e}", shape.kind))
}

/// The `Age` printer column every kubectl user expects last.
fn age_column() -> Value {
    json!({ "name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp" })
}

/// `status.observedGeneration`: the generation the status was computed from.
fn with_observed_generation(mut status: Value) -> Value {
    status["properties"]["observedGeneration"] = json!({
        "type": "integer",
        "format": "int64",
        "description": "The metadata.generation of the spec this status was computed from.",
    });
    status
}

#[cfg(test)]
mod tests;
