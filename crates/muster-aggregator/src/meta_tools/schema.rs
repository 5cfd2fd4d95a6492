//! Building meta-tool definitions the way the original registers them: an input schema
//! `{"type":"object","properties":{...},"required":[...]}` whose properties are
//! `{"type","description"}` plus `"default"` when set.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::{Map, Value};

/// One argument of a meta-tool.
pub(super) struct Arg {
    name: &'static str,
    kind: &'static str,
    description: &'static str,
    required: bool,
    default: Option<Value>,
}

impl Arg {
    /// An optional argument.
    pub(super) const fn optional(
        name: &'static str,
        kind: &'static str,
        description: &'static str,
    ) -> Self {
        Self {
            name,
            kind,
            description,
            required: false,
            default: None,
        }
    }

    /// A required argument.
    pub(super) const fn required(
        name: &'static str,
        kind: &'static str,
        description: &'static str,
    ) -> Self {
        Self {
            name,
            kind,
            description,
            required: true,
            default: None,
        }
    }

    /// The argument with a default value.
    pub(super) fn default(mut self, value: impl Into<Value>) -> Self {
        self.default = Some(value.into());
        self
    }
}

/// A meta-tool definition.
pub(super) fn tool(name: &'static str, description: &'static str, args: Vec<Arg>) -> Tool {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for arg in args {
        let mut property = Map::new();
        property.insert("type".into(), Value::from(arg.kind));
        property.insert("description".into(), Value::from(arg.description));
        if let Some(default) = arg.default {
            property.insert("default".into(), default);
        }
        properties.insert(arg.name.into(), Value::Object(property));
        if arg.required {
            required.push(Value::from(arg.name));
        }
    }
    let mut schema = JsonObject::new();
    schema.insert("type".into(), Value::from("object"));
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), Value::Array(required));

    Tool::new(name, description, Arc::new(schema))
}
