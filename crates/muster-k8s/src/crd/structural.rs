//! Turns a schemars schema of a muster-core type into a Kubernetes structural schema.
//!
//! The API server accepts only *structural* OpenAPI v3 schemas: every node has a type, no
//! `$ref`, no `anyOf`/`oneOf` with types, no `const`, free-form JSON marked with
//! `x-kubernetes-preserve-unknown-fields`. schemars emits JSON Schema, so the schema of a core
//! type is inlined and rewritten here, node by node.

use serde_json::{Map, Value, json};

/// Formats the API server understands; others are dropped.
const KEPT_FORMATS: [&str; 3] = ["date-time", "int32", "int64"];

/// The structural form of `schema`, with every `$ref` into `defs` inlined.
///
/// A `$ref` to a definition that is already being inlined (a recursive type) becomes
/// `{"x-muster-recursive": "<name>"}`, for the caller to replace with a depth-limited form.
pub(crate) fn structural(schema: &Value, defs: &Map<String, Value>) -> Value {
    let mut stack = Vec::new();
    rewrite(schema, defs, &mut stack)
}

fn rewrite(schema: &Value, defs: &Map<String, Value>, stack: &mut Vec<String>) -> Value {
    let Some(obj) = schema.as_object() else {
        // `true` (anything) and `false` cannot be told apart from free-form JSON here.
        return free_form();
    };
    if let Some(target) = obj.get("$ref").and_then(Value::as_str) {
        let name = target.rsplit('/').next().unwrap_or(target).to_owned();
        if stack.contains(&name) {
            return json!({ "x-muster-recursive": name });
        }
        let Some(def) = defs.get(&name) else {
            return free_form();
        };
        stack.push(name);
        let mut inlined = rewrite(def, defs, stack);
        stack.pop();
        if let (Some(desc), Some(o)) = (obj.get("description"), inlined.as_object_mut()) {
            o.insert("description".into(), desc.clone());
        }
        return inlined;
    }
    // `Option<T>` as `anyOf: [T, null]` (or `oneOf`).
    for key in ["anyOf", "oneOf"] {
        if let Some(variants) = obj.get(key).and_then(Value::as_array) {
            let non_null: Vec<&Value> = variants.iter().filter(|v| !is_null_schema(v)).collect();
            if non_null.len() == 1 {
                let mut inner = rewrite(non_null[0], defs, stack);
                copy_description(obj, &mut inner);
                return inner;
            }
            if let Some(values) = enum_of_consts(&non_null) {
                let mut out = json!({ "type": "string", "enum": values });
                copy_description(obj, &mut out);
                return out;
            }
            return free_form();
        }
    }
    let mut out = Map::new();
    for (key, value) in obj {
        match key.as_str() {
            "type" => {
                if let Some(t) = single_type(value) {
                    out.insert("type".into(), Value::String(t));
                }
            }
            "properties" => {
                let props: Map<String, Value> = value
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(k, v)| (k.clone(), rewrite(v, defs, stack)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert("properties".into(), Value::Object(props));
            }
            "items" => {
                out.insert("items".into(), rewrite(value, defs, stack));
            }
            "additionalProperties" => match value {
                Value::Bool(true) => {}
                Value::Bool(false) => {}
                other => {
                    out.insert("additionalProperties".into(), rewrite(other, defs, stack));
                }
            },
            "enum" => {
                let values: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|v| !v.is_null())
                    .cloned()
                    .collect();
                out.insert("enum".into(), Value::Array(values));
            }
            "const" => {
                out.insert("enum".into(), json!([value]));
            }
            "format" if value.as_str().is_some_and(|f| KEPT_FORMATS.contains(&f)) => {
                out.insert("format".into(), value.clone());
            }
            "description" | "required" | "minimum" | "maximum" | "minLength" | "maxLength"
            | "minItems" | "maxItems" | "pattern" | "maxProperties" => {
                out.insert(key.clone(), value.clone());
            }
            // `$schema`, `title`, `default`, `examples`, `nullable`, `$defs`, ...
            _ => {}
        }
    }
    let is_object = out.get("type").and_then(Value::as_str) == Some("object");
    let has_shape = out.contains_key("properties") || out.contains_key("additionalProperties");
    if !out.contains_key("type") && !out.contains_key("enum") {
        let mut ff = free_form();
        copy_description(obj, &mut ff);
        return ff;
    }
    if out.contains_key("enum") && !out.contains_key("type") {
        out.insert("type".into(), Value::String("string".into()));
    }
    if is_object && !has_shape {
        out.insert(
            "x-kubernetes-preserve-unknown-fields".into(),
            Value::Bool(true),
        );
    }
    if let Some(Value::Array(req)) = out.get("required")
        && req.is_empty()
    {
        out.remove("required");
    }
    Value::Object(out)
}

/// Any JSON value, kept as it is.
pub(crate) fn free_form() -> Value {
    json!({ "x-kubernetes-preserve-unknown-fields": true })
}

fn copy_description(from: &Map<String, Value>, to: &mut Value) {
    if let (Some(desc), Some(o)) = (from.get("description"), to.as_object_mut()) {
        o.insert("description".into(), desc.clone());
    }
}

fn is_null_schema(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("null")
        || v.get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.iter().all(Value::is_null))
        || v.get("const").is_some_and(Value::is_null)
}

fn enum_of_consts(variants: &[&Value]) -> Option<Vec<Value>> {
    let mut values = Vec::new();
    for v in variants {
        if let Some(c) = v.get("const") {
            values.push(c.clone());
        } else if let Some(e) = v.get("enum").and_then(Value::as_array) {
            values.extend(e.iter().filter(|x| !x.is_null()).cloned());
        } else {
            return None;
        }
    }
    values.iter().all(Value::is_string).then_some(values)
}

fn single_type(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if s != "null" => Some(s.clone()),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .map(str::to_owned),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_refs_and_free_form() {
        let defs = json!({
            "Inner": { "type": "object", "properties": { "a": { "type": ["string", "null"] } } },
            "Rec": { "type": "object", "properties": { "next": { "$ref": "#/$defs/Rec" } } }
        });
        let defs = defs.as_object().unwrap();
        let schema = json!({
            "type": "object",
            "properties": {
                "inner": { "anyOf": [{ "$ref": "#/$defs/Inner" }, { "type": "null" }] },
                "any": true,
                "map": { "type": "object", "additionalProperties": true },
                "kind": { "const": "X" },
                "rec": { "$ref": "#/$defs/Rec" },
                "n": { "type": "integer", "format": "uint32", "minimum": 0 }
            }
        });
        let out = structural(&schema, defs);
        assert_eq!(
            out["properties"]["inner"]["properties"]["a"],
            json!({"type": "string"})
        );
        assert_eq!(out["properties"]["any"], free_form());
        assert_eq!(
            out["properties"]["map"],
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(
            out["properties"]["kind"],
            json!({"enum": ["X"], "type": "string"})
        );
        assert_eq!(
            out["properties"]["rec"]["properties"]["next"],
            json!({"x-muster-recursive": "Rec"})
        );
        assert_eq!(
            out["properties"]["n"],
            json!({"type": "integer", "minimum": 0})
        );
    }
}
