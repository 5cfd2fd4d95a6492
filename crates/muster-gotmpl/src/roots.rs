//! Template data assembled from named roots that are borrowed, never copied.
//!
//! The workflow engine renders against `.input`, `.results`, `.vars` and `.context`. Building
//! one JSON object of them for every render would copy every result gathered so far; a
//! [`Roots`] instead lends each root, and a root may be several maps read as one (the results
//! before a branch of the workflow and the branch's own, the latter winning).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Map as JsonMap, Value as Json};

use super::typed::Segment;
use super::value::{Dict, Elem, Value};

/// One root of the data.
#[derive(Debug, Clone)]
enum Root<'a> {
    /// A JSON value.
    Json(&'a Json),
    /// Maps read as one object; later maps win.
    Maps(Vec<&'a JsonMap<String, Json>>),
}

/// Template data made of named, borrowed roots.
#[derive(Debug, Clone, Default)]
pub struct Roots<'a> {
    entries: Vec<(&'a str, Root<'a>)>,
}

impl<'a> Roots<'a> {
    /// No roots yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the root `name` holding `value`.
    #[must_use]
    pub fn with(mut self, name: &'a str, value: &'a Json) -> Self {
        self.entries.push((name, Root::Json(value)));
        self
    }

    /// Adds the root `name` as the union of `maps`; a key of a later map wins.
    #[must_use]
    pub fn with_maps(mut self, name: &'a str, maps: Vec<&'a JsonMap<String, Json>>) -> Self {
        self.entries.push((name, Root::Maps(maps)));
        self
    }

    fn root(&self, name: &str) -> Option<&Root<'a>> {
        self.entries
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, r)| r)
    }

    /// The data as a template value: a map of the roots, with merged maps by reference.
    pub(crate) fn to_value(&self) -> Value<'a> {
        let entries: BTreeMap<String, Value<'a>> = self
            .entries
            .iter()
            .map(|(name, root)| ((*name).to_owned(), root_value(root)))
            .collect();
        Value::Dict(Rc::new(Dict {
            elem: Elem::Any,
            entries: RefCell::new(entries),
            nil: false,
        }))
    }

    /// Follows a reference path; `None` on any navigation error.
    pub(crate) fn navigate(&self, path: &[Segment]) -> Option<Json> {
        let (first, rest) = path.split_first()?;
        let root = self.root(first.key())?;
        let (start, rest): (&Json, &[Segment]) = match root {
            Root::Json(j) => (index(j, first.indices())?, rest),
            Root::Maps(maps) => {
                if !first.indices().is_empty() {
                    return None;
                }
                match rest.split_first() {
                    None => {
                        let merged: JsonMap<String, Json> = maps
                            .iter()
                            .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
                            .collect();
                        return Some(Json::Object(merged));
                    }
                    Some((second, rest)) => {
                        let v = maps.iter().rev().find_map(|m| m.get(second.key()))?;
                        (index(v, second.indices())?, rest)
                    }
                }
            }
        };
        super::typed::navigate(start, rest).cloned()
    }
}

fn index<'j>(mut cur: &'j Json, indices: &[usize]) -> Option<&'j Json> {
    for i in indices {
        cur = cur.as_array()?.get(*i)?;
    }
    Some(cur)
}

fn root_value<'a>(root: &Root<'a>) -> Value<'a> {
    match root {
        Root::Json(j) => Value::from_json(j),
        Root::Maps(maps) if maps.len() == 1 => Value::JObj(maps[0]),
        Root::Maps(maps) => {
            let mut entries = BTreeMap::new();
            for m in maps {
                for (k, v) in m.iter() {
                    entries.insert(k.clone(), Value::from_json(v));
                }
            }
            Value::Dict(Rc::new(Dict {
                elem: Elem::Any,
                entries: RefCell::new(entries),
                nil: false,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Template;

    #[test]
    fn merged_roots_read_like_one_object() {
        let input = json!({"name": "ann", "items": [{"n": 1}, {"n": 2}]});
        let base = json!({"a": {"v": 1}, "b": {"v": 2}});
        let overlay = json!({"b": {"v": 3}});
        let (Json::Object(base), Json::Object(overlay)) = (&base, &overlay) else {
            unreachable!()
        };
        let roots = Roots::new()
            .with("input", &input)
            .with_maps("results", vec![base, overlay]);
        let render = |src: &str| {
            Template::parse(src)
                .unwrap()
                .render_value_in(&roots)
                .unwrap()
        };
        assert_eq!(render("{{ .results.b.v }}"), json!(3), "a later map wins");
        assert_eq!(render("{{ .results.a }}"), json!({"v": 1}));
        assert_eq!(render("{{ .input.items[1].n }}"), json!(2));
        assert_eq!(render("{{ len .results }}"), json!(2));
        assert_eq!(
            render("{{ .input.name }}-{{ .results.b.v }}"),
            json!("ann-3")
        );
        assert!(
            Template::parse("{{ .results.missing }}")
                .unwrap()
                .render_in(&roots)
                .is_err()
        );
    }
}
