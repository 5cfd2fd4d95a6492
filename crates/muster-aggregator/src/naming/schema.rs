//! Input-schema helpers for families: comparing schemas by what they accept, adding the
//! instance argument, and the description trailer naming the member servers.

use std::collections::BTreeMap;

use rmcp::model::JsonObject;
use serde_json::{Map, Value};

/// The start of the trailer a family tool's description carries, e.g.
/// ` (available on servers: a, b)`.
pub const SERVERS_TRAILER_PREFIX: &str = " (available on servers: ";

/// The start of the instance argument's description, followed by the member servers.
pub const INSTANCE_ARG_DESCRIPTION_PREFIX: &str =
    "Target instance to execute this tool on. Available: ";

/// Keywords that annotate a schema without changing what it accepts.
const ANNOTATIONS: [&str; 4] = ["description", "title", "examples", "$comment"];
/// Keywords whose value maps names to subschemas.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords whose value is one subschema (or, for `items`, possibly a list of them).
const SCHEMA_VALUES: [&str; 11] = [
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];
/// Keywords whose value is a list of subschemas.
const SCHEMA_LISTS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];

/// A canonical text of what `schema` accepts: annotations (`description`, `title`,
/// `examples`, `$comment`) are dropped at every level, keys are sorted, `required` is
/// sorted, and an empty `properties` or `required` counts as absent. Two schemas that
/// differ only in wording have the same shape.
pub(crate) fn shape_key(schema: &JsonObject) -> String {
    let canonical = canonical_schema(schema);
    serde_json::to_string(&canonical).unwrap_or_default()
}

fn canonical_schema(schema: &JsonObject) -> Value {
    let mut sorted: BTreeMap<&str, Value> = BTreeMap::new();
    for (key, value) in schema {
        let key = key.as_str();
        if ANNOTATIONS.contains(&key) {
            continue;
        }
        let canonical = if SCHEMA_MAPS.contains(&key) {
            match value {
                Value::Object(map) if map.is_empty() => continue,
                Value::Object(map) => {
                    let entries: BTreeMap<&str, Value> = map
                        .iter()
                        .map(|(k, v)| (k.as_str(), canonical_value(v)))
                        .collect();
                    to_object(entries)
                }
                other => sort_keys(other),
            }
        } else if SCHEMA_VALUES.contains(&key) {
            match value {
                Value::Array(items) => Value::Array(items.iter().map(canonical_value).collect()),
                other => canonical_value(other),
            }
        } else if SCHEMA_LISTS.contains(&key) {
            match value {
                Value::Array(items) => Value::Array(items.iter().map(canonical_value).collect()),
                other => sort_keys(other),
            }
        } else if key == "required" {
            match value {
                Value::Array(items) if items.is_empty() => continue,
                Value::Array(items) => {
                    let mut names: Vec<Value> = items.clone();
                    names.sort_by_key(|v| v.to_string());
                    names.dedup();
                    Value::Array(names)
                }
                other => sort_keys(other),
            }
        } else {
            sort_keys(value)
        };
        sorted.insert(key, canonical);
    }
    to_object(sorted)
}

/// A subschema: objects are schemas, anything else (booleans) is kept.
fn canonical_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => canonical_schema(map),
        other => other.clone(),
    }
}

/// A plain JSON value with its object keys sorted (for `enum`, `const`, `default`, ...).
fn sort_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let entries: BTreeMap<&str, Value> = map
                .iter()
                .map(|(k, v)| (k.as_str(), sort_keys(v)))
                .collect();
            to_object(entries)
        }
        Value::Array(items) => Value::Array(items.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

fn to_object(entries: BTreeMap<&str, Value>) -> Value {
    let mut map = Map::with_capacity(entries.len());
    for (k, v) in entries {
        map.insert(k.to_owned(), v);
    }
    Value::Object(map)
}

/// Whether `schema` declares a property called `name`.
pub(crate) fn has_property(schema: &JsonObject, name: &str) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|props| props.contains_key(name))
}

/// A copy of `schema` with a required string property `arg` whose `enum` lists `servers`.
/// The original is left untouched.
pub(crate) fn with_instance_arg(schema: &JsonObject, arg: &str, servers: &[&str]) -> JsonObject {
    let mut schema = schema.clone();
    let mut property = Map::new();
    property.insert("type".into(), Value::from("string"));
    property.insert(
        "description".into(),
        Value::from(format!(
            "{INSTANCE_ARG_DESCRIPTION_PREFIX}{}",
            servers.join(", ")
        )),
    );
    property.insert(
        "enum".into(),
        Value::Array(servers.iter().map(|s| Value::from(*s)).collect()),
    );

    let properties = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if !properties.is_object() {
        *properties = Value::Object(Map::new());
    }
    if let Value::Object(props) = properties {
        props.insert(arg.to_owned(), Value::Object(property));
    }

    let required = schema
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !required.is_array() {
        *required = Value::Array(Vec::new());
    }
    if let Value::Array(names) = required
        && !names.iter().any(|n| n.as_str() == Some(arg))
    {
        names.push(Value::from(arg));
    }
    schema
}

/// `description` without a trailing ` (available on servers: ...)`.
pub(crate) fn strip_servers_trailer(description: &str) -> &str {
    match description.rfind(SERVERS_TRAILER_PREFIX) {
        Some(at) if description.ends_with(')') => &description[..at],
        _ => description,
    }
}

/// `description` with the trailer naming `servers` (replacing any existing trailer).
pub(crate) fn with_servers_trailer(description: &str, servers: &[&str]) -> String {
    format!(
        "{}{SERVERS_TRAILER_PREFIX}{})",
        strip_servers_trailer(description),
        servers.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn shapes_ignore_wording_but_not_arguments() {
        let base = obj(json!({
            "type": "object",
            "properties": {"namespace": {"type": "string", "description": "ns"}},
            "required": ["namespace"]
        }));
        let table = [
            // (other schema, same shape?)
            (
                json!({"type": "object", "properties": {"namespace": {"type": "string"}},
                       "required": ["namespace"]}),
                true,
            ),
            (
                json!({"required": ["namespace"], "title": "T", "description": "D",
                       "properties": {"namespace": {"description": "other", "type": "string",
                                                    "examples": ["a"]}},
                       "type": "object"}),
                true,
            ),
            (
                json!({"type": "object", "properties": {"namespace": {"type": "integer"}},
                       "required": ["namespace"]}),
                false,
            ),
            (
                json!({"type": "object", "properties": {"namespace": {"type": "string"}}}),
                false,
            ),
            (
                json!({"type": "object", "properties": {"namespace": {"type": "string"},
                                                        "all": {"type": "boolean"}},
                       "required": ["namespace"]}),
                false,
            ),
            (
                json!({"type": "object", "properties": {"namespace": {"type": "string",
                                                                      "default": "x"}},
                       "required": ["namespace"]}),
                false,
            ),
        ];
        for (other, same) in table {
            assert_eq!(
                shape_key(&base) == shape_key(&obj(other.clone())),
                same,
                "{other}"
            );
        }
    }

    #[test]
    fn a_property_named_description_is_an_argument_not_an_annotation() {
        let with = obj(json!({"type": "object",
                              "properties": {"description": {"type": "string"}}}));
        let without = obj(json!({"type": "object"}));
        assert_ne!(shape_key(&with), shape_key(&without));
    }

    #[test]
    fn empty_properties_and_required_count_as_absent() {
        let a = obj(json!({"type": "object", "properties": {}, "required": []}));
        let b = obj(json!({"type": "object"}));
        assert_eq!(shape_key(&a), shape_key(&b));
        let c = obj(json!({"type": "object", "required": ["b", "a"],
                           "properties": {"a": {}, "b": {}}}));
        let d = obj(json!({"type": "object", "required": ["a", "b"],
                           "properties": {"b": {}, "a": {}}}));
        assert_eq!(shape_key(&c), shape_key(&d));
    }

    #[test]
    fn nested_annotations_are_ignored() {
        let a = obj(
            json!({"type": "object", "properties": {"xs": {"type": "array",
            "items": {"type": "object", "description": "one",
                      "properties": {"n": {"type": "number", "title": "N"}}}}}}),
        );
        let b = obj(
            json!({"type": "object", "properties": {"xs": {"type": "array",
            "items": {"type": "object",
                      "properties": {"n": {"type": "number"}}}}}}),
        );
        assert_eq!(shape_key(&a), shape_key(&b));
    }

    #[test]
    fn instance_arg_is_added_and_required() {
        let schema = obj(json!({"type": "object",
                                "properties": {"namespace": {"type": "string"}}}));
        let out = with_instance_arg(&schema, "management_cluster", &["a", "b"]);
        assert_eq!(
            Value::Object(out),
            json!({"type": "object",
                   "properties": {
                       "namespace": {"type": "string"},
                       "management_cluster": {
                           "type": "string",
                           "description": "Target instance to execute this tool on. Available: a, b",
                           "enum": ["a", "b"]}},
                   "required": ["management_cluster"]})
        );
        // The original is not mutated.
        assert!(!has_property(&schema, "management_cluster"));

        let bare = obj(json!({"type": "object", "required": ["x"]}));
        let out = with_instance_arg(&bare, "c", &["s"]);
        assert_eq!(out["required"], json!(["x", "c"]));
        assert!(has_property(&out, "c"));
    }

    #[test]
    fn trailers() {
        let table = [
            ("List pods", "List pods (available on servers: a, b)"),
            (
                "List pods (available on servers: old)",
                "List pods (available on servers: a, b)",
            ),
            ("", " (available on servers: a, b)"),
            (
                "List (available on servers: x) now",
                "List (available on servers: x) now (available on servers: a, b)",
            ),
        ];
        for (input, expected) in table {
            assert_eq!(with_servers_trailer(input, &["a", "b"]), expected);
        }
        assert_eq!(strip_servers_trailer("plain"), "plain");
    }
}
