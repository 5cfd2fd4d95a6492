//! Integration tests of muster-core's resource types and validation.
//!
//! - `mcp_server_rules`: every rule of the MCPServer spec, as a table of passing and failing
//!   definitions.
//! - `workflow_rules`: every structural rule of the Workflow spec, in the same table style, plus
//!   the derived data (`referenced_tools`, `computed_status`, `warnings`).
//! - `seed_examples`: every concrete example of the CRD reference parses and validates.
//! - `roundtrip`: property tests that specs survive a JSON and a YAML round trip.

#![allow(missing_docs)]

mod mcp_server_rules;
mod roundtrip;
mod seed_examples;
mod workflow_rules;

use serde_json::Value;

/// `base` with `patch` merged in: objects key by key, recursively; any other value replaces.
fn merge(mut base: Value, patch: Value) -> Value {
    match (&mut base, patch) {
        (Value::Object(fields), Value::Object(patch)) => {
            for (key, value) in patch {
                match fields.get_mut(&key) {
                    Some(old) => {
                        let merged = merge(old.take(), value);
                        *old = merged;
                    }
                    None => {
                        fields.insert(key, value);
                    }
                }
            }
            base
        }
        (_, patch) => patch,
    }
}
