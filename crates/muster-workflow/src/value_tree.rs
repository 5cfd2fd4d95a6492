//! JSON trees whose string leaves are templates (step arguments, the output template),
//! compiled once and rendered many times.

use serde_json::{Map, Value};

use crate::template::{Roots, Template, TemplateError};

/// How a rendered leaf becomes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeafMode {
    /// Step and condition arguments: typed like the output template, and text rendered from
    /// several actions that reads `true`/`false` becomes a boolean (as the original does).
    Arguments,
    /// Output template leaves and jsonPath expectations: typed, never inferred from text.
    Typed,
}

/// A compiled JSON tree.
#[derive(Debug)]
pub(crate) enum Node {
    /// A value without templates.
    Literal(Value),
    /// A string containing `{{ … }}`.
    Template {
        source: String,
        template: Box<Template>,
        single_action: bool,
    },
    /// An array.
    Array(Vec<Node>),
    /// An object, keys in their original order.
    Object(Vec<(String, Node)>),
}

/// A leaf that failed to compile or render, with its position in the tree.
#[derive(Debug)]
pub(crate) struct LeafError {
    /// The key path of the leaf, e.g. `message` or `items[0].name`.
    pub(crate) path: String,
    /// The template error.
    pub(crate) error: TemplateError,
}

impl Node {
    /// Compiles every template leaf of `value`; reports every leaf that does not parse.
    pub(crate) fn compile(value: &Value) -> Result<Node, Vec<LeafError>> {
        let mut errors = Vec::new();
        let node = compile_at(value, String::new(), &mut errors);
        if errors.is_empty() {
            Ok(node)
        } else {
            Err(errors)
        }
    }

    /// Compiles an object of arguments.
    pub(crate) fn compile_map(map: &Map<String, Value>) -> Result<Node, Vec<LeafError>> {
        Self::compile(&Value::Object(map.clone()))
    }

    /// Renders the tree against `data`.
    pub(crate) fn render(&self, data: &Roots<'_>, mode: LeafMode) -> Result<Value, LeafError> {
        self.render_at(data, mode, "")
    }

    fn render_at(&self, data: &Roots<'_>, mode: LeafMode, path: &str) -> Result<Value, LeafError> {
        match self {
            Node::Literal(v) => Ok(v.clone()),
            Node::Template {
                template,
                single_action,
                ..
            } => {
                let value = template.render_value_in(data).map_err(|error| LeafError {
                    path: path.to_owned(),
                    error,
                })?;
                Ok(match (mode, value) {
                    (LeafMode::Arguments, Value::String(s)) if !single_action => match s.as_str() {
                        "true" => Value::Bool(true),
                        "false" => Value::Bool(false),
                        _ => Value::String(s),
                    },
                    (_, v) => v,
                })
            }
            Node::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, n)| n.render_at(data, mode, &format!("{path}[{i}]")))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            Node::Object(entries) => {
                let mut out = Map::with_capacity(entries.len());
                for (k, n) in entries {
                    let child = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    out.insert(k.clone(), n.render_at(data, mode, &child)?);
                }
                Ok(Value::Object(out))
            }
        }
    }

    /// Every `.input.<name>` the templates of this tree mention, in first-seen order.
    pub(crate) fn input_references(&self, out: &mut Vec<String>) {
        match self {
            Node::Literal(_) => {}
            Node::Template { source, .. } => collect_input_refs(source, out),
            Node::Array(items) => items.iter().for_each(|n| n.input_references(out)),
            Node::Object(entries) => entries.iter().for_each(|(_, n)| n.input_references(out)),
        }
    }
}

fn compile_at(value: &Value, path: String, errors: &mut Vec<LeafError>) -> Node {
    match value {
        Value::String(s) if s.contains("{{") && s.contains("}}") => match Template::parse(s) {
            Ok(t) => Node::Template {
                source: s.clone(),
                template: Box::new(t),
                single_action: is_single_action(s),
            },
            Err(error) => {
                errors.push(LeafError { path, error });
                Node::Literal(value.clone())
            }
        },
        Value::Array(items) => Node::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| compile_at(v, format!("{path}[{i}]"), errors))
                .collect(),
        ),
        Value::Object(map) => Node::Object(
            map.iter()
                .map(|(k, v)| {
                    let child = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    (k.clone(), compile_at(v, child, errors))
                })
                .collect(),
        ),
        other => Node::Literal(other.clone()),
    }
}

/// Whether the whole (trimmed) string is exactly one `{{ … }}` action.
pub(crate) fn is_single_action(s: &str) -> bool {
    let t = s.trim();
    t.starts_with("{{") && t.ends_with("}}") && t.matches("{{").count() == 1
}

fn collect_input_refs(source: &str, out: &mut Vec<String>) {
    let mut rest = source;
    while let Some(i) = rest.find(".input.") {
        let tail = &rest[i + ".input.".len()..];
        let name: String = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        if !name.is_empty() {
            let key = format!("input.{name}");
            if !out.contains(&key) {
                out.push(key);
            }
        }
        rest = tail;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn input_references_in_first_seen_order() {
        let node = Node::compile(&json!({
            "a": "{{ .input.env }}-{{ .input.name }}",
            "b": ["{{ .input.env }}", "plain"],
        }))
        .unwrap();
        let mut refs = Vec::new();
        node.input_references(&mut refs);
        assert_eq!(refs, ["input.env", "input.name"]);
    }

    #[test]
    fn single_action_detection() {
        assert!(is_single_action(" {{ .input.x }} "));
        assert!(!is_single_action("v{{ .x }}"));
        assert!(!is_single_action("{{ .a }}{{ .b }}"));
    }
}
