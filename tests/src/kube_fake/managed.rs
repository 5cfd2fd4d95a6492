//! `metadata.managedFields`: which manager set which fields, in the `FieldsV1` form, and the
//! ownership rules server-side apply uses to find conflicts and removed fields.
//!
//! Simplified against the real structured-merge-diff: lists are atomic (one field) unless the
//! schema says `x-kubernetes-list-type: map` (items keyed by `x-kubernetes-list-map-keys`) or
//! `set`; built-in resources have no schema here, so their lists are atomic.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

/// One step of a field path, printed as in `FieldsV1` (`f:spec`, `k:{"name":"a"}`, `v:"x"`).
pub(crate) type PathElement = String;

/// A set of leaf field paths.
pub(crate) type FieldSet = BTreeSet<Vec<PathElement>>;

/// Metadata fields the server owns; they are never part of a manager's set.
const SERVER_FIELDS: &[&str] = &[
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
];

fn list_keys(schema: Option<&Value>) -> Option<ListKind> {
    let s = schema?;
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("map") => Some(ListKind::Map(
            s.get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|k| {
                    k.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
        )),
        Some("set") => Some(ListKind::Set),
        _ => None,
    }
}

enum ListKind {
    Map(Vec<String>),
    Set,
}

/// The schema of a property of `schema` (an object schema), if any.
pub(crate) fn child_schema<'a>(schema: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    let s = schema?;
    s.get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
}

/// The key element of a list item (`k:{...}` for map lists, `v:...` for sets).
fn item_element(item: &Value, kind: &ListKind) -> Option<PathElement> {
    match kind {
        ListKind::Map(keys) => {
            let mut m = Map::new();
            for k in keys {
                m.insert(k.clone(), item.get(k)?.clone());
            }
            Some(format!("k:{}", Value::Object(m)))
        }
        ListKind::Set => Some(format!("v:{item}")),
    }
}

/// The leaf fields of an object (its `metadata` system fields left out).
pub(crate) fn fields_of(obj: &Value, schema: Option<&Value>) -> FieldSet {
    let mut set = FieldSet::new();
    let mut path = Vec::new();
    if let Value::Object(m) = obj {
        for (k, v) in m {
            if k == "apiVersion" || k == "kind" {
                continue;
            }
            path.push(format!("f:{k}"));
            if k == "metadata" {
                if let Value::Object(meta) = v {
                    for (mk, mv) in meta {
                        if SERVER_FIELDS.contains(&mk.as_str()) || mk == "name" || mk == "namespace"
                        {
                            continue;
                        }
                        path.push(format!("f:{mk}"));
                        walk(
                            mv,
                            None,
                            &mut path,
                            &mut set,
                            mk == "labels" || mk == "annotations",
                        );
                        path.pop();
                    }
                }
            } else {
                walk(v, child_schema(schema, k), &mut path, &mut set, false);
            }
            path.pop();
        }
    }
    set
}

fn walk(
    v: &Value,
    schema: Option<&Value>,
    path: &mut Vec<PathElement>,
    set: &mut FieldSet,
    map: bool,
) {
    match v {
        Value::Object(m)
            if !m.is_empty()
                && (map
                    || schema.is_none_or(|s| {
                        s.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic")
                    })) =>
        {
            for (k, child) in m {
                path.push(format!("f:{k}"));
                walk(child, child_schema(schema, k), path, set, false);
                path.pop();
            }
        }
        Value::Array(items) => match list_keys(schema) {
            Some(kind) => {
                let item_schema = schema.and_then(|s| s.get("items"));
                for item in items {
                    let Some(el) = item_element(item, &kind) else {
                        set.insert(path.clone());
                        return;
                    };
                    path.push(el);
                    set.insert(path.clone());
                    if let (ListKind::Map(_), Value::Object(_)) = (&kind, item) {
                        walk(item, item_schema, path, set, false);
                    }
                    path.pop();
                }
                if items.is_empty() {
                    set.insert(path.clone());
                }
            }
            None => {
                set.insert(path.clone());
            }
        },
        _ => {
            set.insert(path.clone());
        }
    }
}

/// The `fieldsV1` JSON of a field set.
pub(crate) fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for (i, el) in path.iter().enumerate() {
            let entry = node.entry(el.clone()).or_insert_with(|| json!({}));
            let Value::Object(child) = entry else { break };
            if i + 1 == path.len() && !child.is_empty() {
                child.insert(".".into(), json!({}));
            }
            node = child;
        }
    }
    // Interior nodes that are members themselves (list items) carry ".".
    fn mark(node: &mut Map<String, Value>) {
        for (k, v) in node.iter_mut() {
            if let Value::Object(child) = v {
                if (k.starts_with("k:") || k.starts_with("v:"))
                    && !child.is_empty()
                    && !child.contains_key(".")
                {
                    child.insert(".".into(), json!({}));
                }
                mark(child);
            }
        }
    }
    mark(&mut root);
    Value::Object(root)
}

/// Reads a `fieldsV1` JSON back into a field set.
pub(crate) fn from_fields_v1(v: &Value) -> FieldSet {
    fn go(v: &Value, path: &mut Vec<PathElement>, set: &mut FieldSet) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, child) in m {
                    if k == "." {
                        set.insert(path.clone());
                        continue;
                    }
                    path.push(k.clone());
                    go(child, path, set);
                    path.pop();
                }
            }
            _ => {
                set.insert(path.clone());
            }
        }
    }
    let mut set = FieldSet::new();
    go(v, &mut Vec::new(), &mut set);
    set
}

/// Reads the value at a field path, when present.
pub(crate) fn value_at<'a>(obj: &'a Value, path: &[PathElement]) -> Option<&'a Value> {
    let mut cur = obj;
    for el in path {
        cur = step(cur, el)?;
    }
    Some(cur)
}

fn step<'a>(cur: &'a Value, el: &str) -> Option<&'a Value> {
    if let Some(f) = el.strip_prefix("f:") {
        return cur.get(f);
    }
    let items = cur.as_array()?;
    if let Some(k) = el.strip_prefix("k:") {
        let keys: Map<String, Value> = serde_json::from_str(k).ok()?;
        return items
            .iter()
            .find(|i| keys.iter().all(|(kk, kv)| i.get(kk) == Some(kv)));
    }
    if let Some(v) = el.strip_prefix("v:") {
        let want: Value = serde_json::from_str(v).ok()?;
        return items.iter().find(|i| **i == want);
    }
    None
}

/// Removes the field at a path; empty parent maps that remain are removed too.
pub(crate) fn remove_at(obj: &mut Value, path: &[PathElement]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    fn parent_mut<'a>(cur: &'a mut Value, path: &[PathElement]) -> Option<&'a mut Value> {
        let mut cur = cur;
        for el in path {
            cur = if let Some(f) = el.strip_prefix("f:") {
                cur.get_mut(f)?
            } else {
                let probe = step(cur, el)?.clone();
                cur.as_array_mut()?.iter_mut().find(|i| **i == probe)?
            };
        }
        Some(cur)
    }
    if let Some(parent) = parent_mut(obj, parents) {
        if let Some(f) = last.strip_prefix("f:") {
            if let Value::Object(m) = parent {
                m.remove(f);
            }
        } else if let Some(probe) = step(parent, last).cloned()
            && let Value::Array(items) = parent
        {
            items.retain(|i| *i != probe);
        }
    }
    // prune emptied maps on the way up (but never the top-level sections themselves)
    for depth in (2..path.len()).rev() {
        if let Some(p) = parent_mut(obj, &path[..depth])
            && p.as_object().is_some_and(Map::is_empty)
            && let Some(pp) = parent_mut(obj, &path[..depth - 1])
            && let (Some(f), Value::Object(m)) = (path[depth - 1].strip_prefix("f:"), pp)
        {
            m.remove(f);
        }
    }
}

/// Renders a path as server-side apply prints it in conflicts: `.spec.url`,
/// `.spec.ports[name="http"]`.
pub(crate) fn display(path: &[PathElement]) -> String {
    let mut s = String::new();
    for el in path {
        if let Some(f) = el.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = el.strip_prefix("k:") {
            let keys: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            let inner: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s.push_str(&format!("[{}]", inner.join(",")));
        } else if let Some(v) = el.strip_prefix("v:") {
            s.push_str(&format!("[={v}]"));
        }
    }
    s
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) manager: String,
    pub(crate) operation: String,
    pub(crate) api_version: String,
    pub(crate) subresource: Option<String>,
    pub(crate) time: String,
    pub(crate) fields: FieldSet,
}

/// Reads `metadata.managedFields`.
pub(crate) fn entries(obj: &Value) -> Vec<Entry> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| Entry {
                    manager: e
                        .get("manager")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    operation: e
                        .get("operation")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    api_version: e
                        .get("apiVersion")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    subresource: e
                        .get("subresource")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    time: e
                        .get("time")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    fields: e.get("fieldsV1").map(from_fields_v1).unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Writes `metadata.managedFields` (entries with no field left are dropped).
pub(crate) fn set_entries(obj: &mut Value, list: &[Entry]) {
    let arr: Vec<Value> = list
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut m = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&e.fields),
            });
            if let Some(s) = &e.subresource {
                m["subresource"] = json!(s);
            }
            m
        })
        .collect();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if arr.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(arr));
        }
    }
}

/// The fields whose value differs between two objects, or that exist in only one of them.
pub(crate) fn changed_fields(old: &Value, new: &Value, schema: Option<&Value>) -> FieldSet {
    let a = fields_of(old, schema);
    let b = fields_of(new, schema);
    let mut out = FieldSet::new();
    for p in a.union(&b) {
        if value_at(old, p) != value_at(new, p) {
            out.insert(p.clone());
        }
    }
    out
}

/// Records a non-apply write by `manager`: it now owns the fields it changed, which no other
/// manager owns any longer; fields that are gone leave every set.
pub(crate) fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    api_version: &str,
    subresource: Option<&str>,
    schema: Option<&Value>,
    now: &str,
) {
    let mut list = old.map(entries).unwrap_or_default();
    let changed = match old {
        Some(o) => changed_fields(o, new, schema),
        None => fields_of(new, schema),
    };
    if changed.is_empty() {
        set_entries(new, &list);
        return;
    }
    let present = fields_of(new, schema);
    for e in &mut list {
        e.fields
            .retain(|p| !changed.contains(p) && present.contains(p));
    }
    let mine: FieldSet = changed.intersection(&present).cloned().collect();
    let sub = subresource.map(str::to_owned);
    match list
        .iter_mut()
        .find(|e| e.manager == manager && e.operation == "Update" && e.subresource == sub)
    {
        Some(e) => {
            e.fields.extend(mine);
            e.time = now.to_owned();
            e.api_version = api_version.to_owned();
        }
        None => list.push(Entry {
            manager: manager.to_owned(),
            operation: "Update".into(),
            api_version: api_version.to_owned(),
            subresource: sub,
            time: now.to_owned(),
            fields: mine,
        }),
    }
    set_entries(new, &list);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn field_sets_round_trip_through_fields_v1() {
        let schema = json!({"properties": {"spec": {"properties": {
            "env": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"properties": {"name": {}, "value": {}}}},
            "args": {"type": "array"}}}}});
        let obj = json!({"apiVersion": "v", "kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}},
                         "spec": {"env": [{"name": "A", "value": "1"}], "args": ["x"]}});
        let set = fields_of(&obj, Some(&schema));
        let v1 = to_fields_v1(&set);
        assert_eq!(
            v1,
            json!({
                "f:metadata": {"f:labels": {"f:a": {}}},
                "f:spec": {"f:args": {}, "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}}},
            })
        );
        assert_eq!(from_fields_v1(&v1), set);
        let mut o = obj.clone();
        remove_at(
            &mut o,
            &[
                "f:spec".to_owned(),
                "f:env".to_owned(),
                "k:{\"name\":\"A\"}".to_owned(),
            ],
        );
        assert_eq!(o["spec"]["env"], json!([]));
        assert_eq!(
            display(&[
                "f:spec".to_owned(),
                "f:env".to_owned(),
                "k:{\"name\":\"A\"}".to_owned()
            ]),
            r#".spec.env[name="A"]"#
        );
    }
}
