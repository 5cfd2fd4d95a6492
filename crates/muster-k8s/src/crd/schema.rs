//! Small helpers to generate and edit the OpenAPI schemas of the CRDs.

use schemars::JsonSchema;
use serde_json::{Map, Value, json};

use super::structural::structural;

/// The structural schema of a core type.
pub(crate) fn structural_schema_of<T: JsonSchema>() -> Value {
    let root = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    let value = root.to_value();
    let defs = value
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    structural(&value, &defs)
}

/// The node at `path` under `schema`: each element is a property name, `[]` for the items of
/// an array and `{}` for the values of a map.
///
/// # Panics
///
/// When the path does not exist: the CRDs are fixed, so this is a bug the tests catch.
pub(crate) fn node<'a>(schema: &'a mut Value, path: &[&str]) -> &'a mut Value {
    let mut current = schema;
    for part in path {
        let next = match *part {
            "[]" => current.get_mut("items"),
            "{}" => current.get_mut("additionalProperties"),
            name => current.get_mut("properties").and_then(|p| p.get_mut(name)),
        };
        current = next.unwrap_or_else(|| panic!("no schema node at {path:?} (at {part})"));
    }
    current
}

/// Sets `key` to `value` on the node at `path`.
pub(crate) fn set(schema: &mut Value, path: &[&str], key: &str, value: Value) {
    let target = node(schema, path);
    if let Some(obj) = target.as_object_mut() {
        obj.insert(key.to_owned(), value);
    }
}

/// Marks `fields` required on the node at `path`.
pub(crate) fn require(schema: &mut Value, path: &[&str], fields: &[&str]) {
    let target = node(schema, path);
    let Some(obj) = target.as_object_mut() else {
        return;
    };
    let req = obj.entry("required").or_insert_with(|| json!([]));
    if let Some(list) = req.as_array_mut() {
        for f in fields {
            if !list.iter().any(|v| v == f) {
                list.push(Value::String((*f).to_owned()));
            }
        }
    }
}

/// Drops the `required` list of the node at `path`.
pub(crate) fn unrequire(schema: &mut Value, path: &[&str]) {
    if let Some(obj) = node(schema, path).as_object_mut() {
        obj.remove("required");
    }
}

/// Removes the property `name` of the node at `path`.
pub(crate) fn remove_property(schema: &mut Value, path: &[&str], name: &str) {
    if let Some(props) = node(schema, path)
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    {
        props.remove(name);
    }
}

/// One CEL rule of `x-kubernetes-validations`.
pub(crate) struct Rule {
    /// The CEL expression; `self` is the node the rule sits on.
    pub(crate) rule: &'static str,
    /// The message the API server returns when the rule fails.
    pub(crate) message: &'static str,
    /// The field the message is about, relative to the node (e.g. `.headers`).
    pub(crate) field_path: Option<&'static str>,
}

/// A rule with a message about the node itself.
pub(crate) const fn rule(rule: &'static str, message: &'static str) -> Rule {
    Rule {
        rule,
        message,
        field_path: None,
    }
}

/// A rule whose message is about a field of the node.
pub(crate) const fn rule_at(
    field_path: &'static str,
    rule: &'static str,
    message: &'static str,
) -> Rule {
    Rule {
        rule,
        message,
        field_path: Some(field_path),
    }
}

/// Adds `rules` to the node at `path`.
pub(crate) fn validations(schema: &mut Value, path: &[&str], rules: &[Rule]) {
    let target = node(schema, path);
    let Some(obj) = target.as_object_mut() else {
        return;
    };
    let list = obj
        .entry("x-kubernetes-validations")
        .or_insert_with(|| json!([]));
    if let Some(list) = list.as_array_mut() {
        for r in rules {
            let mut v = Map::new();
            v.insert("rule".into(), Value::String(r.rule.to_owned()));
            v.insert("message".into(), Value::String(r.message.to_owned()));
            if let Some(f) = r.field_path {
                v.insert("fieldPath".into(), Value::String(f.to_owned()));
            }
            list.push(Value::Object(v));
        }
    }
}
