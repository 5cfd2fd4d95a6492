//! Typed rendering: reference paths keep their JSON value, single actions keep their Go value's
//! type, everything else is text. Also rendering of whole JSON trees.

use serde_json::{Map as JsonMap, Number, Value as Json};

use super::ast::{List, Node};
use super::exec;
use super::gofmt::format_float;
use super::value::Value;
use super::{MissingKey, Template, TemplateError};

/// One segment of a reference path: a key and the array indices that follow it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    key: String,
    indices: Vec<usize>,
}

impl Segment {
    /// The key of the segment.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// The indices after the key.
    pub(crate) fn indices(&self) -> &[usize] {
        &self.indices
    }
}

/// The shape of a template's text, which decides how [`Template::render_value`] types it.
#[derive(Clone, Debug)]
pub(crate) enum Shape {
    /// No `{{` at all.
    Literal,
    /// `{{ .a.b[0].c }}` and nothing else.
    RefPath(Vec<Segment>),
    /// Exactly one action (no variable declaration), only whitespace around it.
    SingleAction,
    /// Anything else.
    Mixed,
}

impl Shape {
    pub(crate) fn of(src: &str, root: Option<&List>) -> Shape {
        if !src.contains("{{") {
            return Shape::Literal;
        }
        if let Some(path) = parse_ref_path(src) {
            return Shape::RefPath(path);
        }
        match root {
            Some(list) if single_action(list).is_some() => Shape::SingleAction,
            _ => Shape::Mixed,
        }
    }
}

/// The pipeline of a template that is exactly one action.
fn single_action(list: &List) -> Option<&super::ast::Pipe> {
    let mut found = None;
    for n in list {
        match n {
            Node::Text(t) if t.trim().is_empty() => {}
            Node::Action(p) if p.decl.is_empty() && found.is_none() => found = Some(p),
            _ => return None,
        }
    }
    found
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Parses `{{ .a.b[0] }}` (whitespace allowed inside the braces, none outside after trimming).
fn parse_ref_path(src: &str) -> Option<Vec<Segment>> {
    let t = src.trim();
    let inner = t.strip_prefix("{{")?.strip_suffix("}}")?.trim();
    let path = inner.strip_prefix('.')?;
    let first = path.chars().next()?;
    if !(first.is_alphanumeric() || first == '_') {
        return None;
    }
    let mut segs = Vec::new();
    for seg in path.split('.') {
        let key_end = seg.find('[').unwrap_or(seg.len());
        let key = &seg[..key_end];
        if key.is_empty() || !key.chars().all(is_path_char) {
            return None;
        }
        let mut rest = &seg[key_end..];
        let mut indices = Vec::new();
        while !rest.is_empty() {
            let close = rest.find(']')?;
            let num = rest.strip_prefix('[')?.get(..close - 1)?;
            if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            indices.push(num.parse().ok()?);
            rest = &rest[close + 1..];
        }
        segs.push(Segment {
            key: key.to_owned(),
            indices,
        });
    }
    Some(segs)
}

/// Follows a reference path through JSON; `None` on any navigation error.
pub(crate) fn navigate<'a>(data: &'a Json, path: &[Segment]) -> Option<&'a Json> {
    let mut cur = data;
    for seg in path {
        cur = cur.as_object()?.get(&seg.key)?;
        for i in &seg.indices {
            cur = cur.as_array()?.get(*i)?;
        }
    }
    Some(cur)
}

/// The JSON form of a value produced by a single action.
pub(crate) fn to_json(v: &Value<'_>) -> Json {
    match v {
        Value::Nil => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) | Value::Int64(i) => Json::Number((*i).into()),
        Value::Uint8(u) => Json::Number((*u).into()),
        Value::Float(f) => float_json(*f),
        Value::Str(s) => Json::String(s.to_string()),
        Value::JArr(a) => Json::Array(a.to_vec()),
        Value::JObj(o) => Json::Object((*o).clone()),
        Value::List(l) => Json::Array(l.items.iter().map(to_json).collect()),
        Value::Dict(d) => {
            let m: JsonMap<String, Json> = d
                .entries
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), to_json(v)))
                .collect();
            Json::Object(m)
        }
        Value::Time(t) => Json::String(t.to_rfc3339_nano()),
    }
}

fn float_json(f: f64) -> Json {
    if !f.is_finite() {
        // NaN and infinities have no JSON form: keep Go's text.
        return Json::String(format_float(f, 'g', None));
    }
    if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
        return Json::Number((f as i64).into());
    }
    Number::from_f64(f).map_or(Json::Null, Json::Number)
}

pub(crate) fn render_value(t: &Template, data: &Json) -> Result<Json, TemplateError> {
    render_value_with(t, Value::from_json(data), |path| {
        navigate(data, path).cloned()
    })
}

/// [`render_value`] against borrowed roots.
pub(crate) fn render_value_in(
    t: &Template,
    roots: &super::Roots<'_>,
) -> Result<Json, TemplateError> {
    render_value_with(t, roots.to_value(), |path| roots.navigate(path))
}

fn render_value_with<'a>(
    t: &'a Template,
    data: Value<'a>,
    navigate_ref: impl Fn(&[Segment]) -> Option<Json>,
) -> Result<Json, TemplateError> {
    let inner = &t.inner;
    match &inner.shape {
        Shape::Literal => return Ok(Json::String(inner.source.clone())),
        Shape::RefPath(path) => {
            if let Some(v) = navigate_ref(path) {
                return Ok(v);
            }
        }
        Shape::SingleAction | Shape::Mixed => {}
    }
    let trees = t.trees()?;
    let pipe = trees.get(&inner.name).and_then(single_action);
    match pipe {
        Some(pipe) => {
            let v = exec::eval_single(
                trees,
                &inner.source,
                &inner.name,
                t.missing_key == MissingKey::Error,
                pipe,
                data,
            )
            .map_err(|m| t.exec_error(m))?;
            Ok(to_json(&v))
        }
        None => t.render_data(data).map(Json::String),
    }
}

/// Renders every string leaf of `value` with [`Template::render_value`] against `data`;
/// strings without `{{` are kept as they are. Templates are named after their position
/// (`args.namespace`, `items[2]`).
pub fn render_tree(value: &Json, data: &Json) -> Result<Json, TemplateError> {
    TemplateTree::parse(value)?.render(data)
}

/// A JSON document whose string leaves are parsed templates: parse once, render many times.
#[derive(Clone, Debug)]
pub struct TemplateTree {
    root: TreeNode,
}

#[derive(Clone, Debug)]
enum TreeNode {
    Literal(Json),
    Template(Template),
    Array(Vec<TreeNode>),
    Object(Vec<(String, TreeNode)>),
}

fn child_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

impl TreeNode {
    fn parse(value: &Json, path: &str) -> Result<TreeNode, TemplateError> {
        Ok(match value {
            Json::String(s) if s.contains("{{") => {
                let name = if path.is_empty() {
                    super::DEFAULT_NAME
                } else {
                    path
                };
                TreeNode::Template(Template::parse_named(name, s)?)
            }
            Json::Array(a) => TreeNode::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, v)| TreeNode::parse(v, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            Json::Object(o) => TreeNode::Object(
                o.iter()
                    .map(|(k, v)| Ok((k.clone(), TreeNode::parse(v, &child_path(path, k))?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
            other => TreeNode::Literal(other.clone()),
        })
    }

    fn render(&self, data: &Json) -> Result<Json, TemplateError> {
        Ok(match self {
            TreeNode::Literal(v) => v.clone(),
            TreeNode::Template(t) => t.render_value(data)?,
            TreeNode::Array(a) => {
                Json::Array(a.iter().map(|n| n.render(data)).collect::<Result<_, _>>()?)
            }
            TreeNode::Object(o) => Json::Object(
                o.iter()
                    .map(|(k, n)| Ok((k.clone(), n.render(data)?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
        })
    }

    fn visit<'s>(&'s self, out: &mut Vec<&'s Template>) {
        match self {
            TreeNode::Literal(_) => {}
            TreeNode::Template(t) => out.push(t),
            TreeNode::Array(a) => a.iter().for_each(|n| n.visit(out)),
            TreeNode::Object(o) => o.iter().for_each(|(_, n)| n.visit(out)),
        }
    }
}

impl TemplateTree {
    /// Parses every string leaf containing `{{`.
    pub fn parse(value: &Json) -> Result<TemplateTree, TemplateError> {
        Ok(TemplateTree {
            root: TreeNode::parse(value, "")?,
        })
    }

    /// Renders the tree against `data`.
    pub fn render(&self, data: &Json) -> Result<Json, TemplateError> {
        self.root.render(data)
    }

    /// The templates of the tree, in document order.
    pub fn templates(&self) -> Vec<&Template> {
        let mut out = Vec::new();
        self.root.visit(&mut out);
        out
    }
}
