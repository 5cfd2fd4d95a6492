//! The PATCH types: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch
//! (with merge-patch semantics, see the docs page) and server-side apply.

use serde_json::{Value, json};

use super::managed::{self, Entry, FieldSet, child_schema, fields_of, value_at};
use super::status::ApiError;

/// The patch types, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl PatchType {
    pub(crate) fn from_content_type(ct: &str) -> Option<Self> {
        let base = ct.split(';').next().unwrap_or_default().trim();
        match base {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/json-patch+json" => Some(Self::Json),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// The media types a custom resource accepts for PATCH.
pub(crate) const CUSTOM_RESOURCE_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// The media types a built-in resource accepts for PATCH.
pub(crate) const BUILTIN_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

/// Applies a merge, JSON or strategic patch to `old`.
pub(crate) fn apply_patch(kind: PatchType, old: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let mut doc = old.clone();
    match kind {
        PatchType::Merge | PatchType::Strategic => {
            let patch = parse_json(body)?;
            if !patch.is_object() {
                return Err(ApiError::bad_request("the patch is not a JSON object"));
            }
            let patch = if kind == PatchType::Strategic {
                strip_directives(patch)
            } else {
                patch
            };
            json_patch::merge(&mut doc, &patch);
        }
        PatchType::Json => {
            let patch: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            json_patch::patch(&mut doc, &patch)
                .map_err(|e| ApiError::new(422, "Invalid", e.to_string()))?;
        }
        PatchType::Apply => return Err(ApiError::internal("apply handled elsewhere")),
    }
    Ok(doc)
}

/// Drops the `$patch`/`$retainKeys`/`$setElementOrder` directives of a strategic merge patch.
fn strip_directives(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| !k.starts_with('$') && !k.starts_with("$setElementOrder/"))
                .map(|(k, v)| (k, strip_directives(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Parses an apply configuration (YAML or JSON).
pub(crate) fn parse_apply(body: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let v: Value = serde_norway::from_str(text)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the apply configuration is not an object",
        ));
    }
    if v.pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    Ok(v)
}

/// What one server-side apply asks for.
pub(crate) struct Apply<'a> {
    pub(crate) manager: &'a str,
    pub(crate) force: bool,
    pub(crate) api_version: &'a str,
    pub(crate) subresource: Option<&'a str>,
    pub(crate) schema: Option<&'a Value>,
    pub(crate) now: &'a str,
    /// Whether the resource has a status subresource (a main-resource apply then owns no
    /// status field: the server resets them).
    pub(crate) status_subresource: bool,
}

impl Apply<'_> {
    /// Merges `config` into `existing` (or creates from it), moving field ownership.
    pub(crate) fn run(&self, existing: Option<&Value>, config: &Value) -> Result<Value, ApiError> {
        let wanted = self.scoped(fields_of(config, self.schema));
        let sub = self.subresource.map(str::to_owned);
        let Some(existing) = existing else {
            let mut obj = config.clone();
            managed::set_entries(&mut obj, &[self.entry(wanted)]);
            return Ok(obj);
        };
        let mut list = managed::entries(existing);
        let mine =
            |e: &Entry| e.manager == self.manager && e.operation == "Apply" && e.subresource == sub;
        // conflicts: fields other managers own whose value this apply changes
        let mut conflicts: Vec<(String, String, String)> = Vec::new();
        for e in list.iter().filter(|e| !mine(e)) {
            for p in e.fields.intersection(&wanted) {
                if value_at(existing, p) != value_at(config, p) {
                    conflicts.push((
                        e.manager.clone(),
                        e.api_version.clone(),
                        managed::display(p),
                    ));
                }
            }
        }
        if !conflicts.is_empty() && !self.force {
            return Err(conflict_error(&conflicts));
        }
        let previous: FieldSet = list
            .iter()
            .find(|e| mine(e))
            .map(|e| e.fields.clone())
            .unwrap_or_default();
        for e in list.iter_mut().filter(|e| !mine(e)) {
            e.fields
                .retain(|p| !(wanted.contains(p) && value_at(existing, p) != value_at(config, p)));
        }
        let mut obj = existing.clone();
        for gone in previous.difference(&wanted) {
            let shared = list.iter().any(|e| !mine(e) && e.fields.contains(gone));
            if !shared {
                managed::remove_at(&mut obj, gone);
            }
        }
        merge_into(&mut obj, config, self.schema);
        list.retain(|e| !mine(e));
        list.push(self.entry(wanted));
        managed::set_entries(&mut obj, &list);
        Ok(obj)
    }

    /// A status apply owns only status fields; a main-resource apply owns everything else, and
    /// status too when there is no status subresource.
    fn scoped(&self, set: FieldSet) -> FieldSet {
        set.into_iter()
            .filter(|p| {
                let is_status = p.first().is_some_and(|f| f == "f:status");
                if self.subresource == Some("status") {
                    is_status
                } else {
                    !(is_status && self.status_subresource)
                }
            })
            .collect()
    }

    fn entry(&self, fields: FieldSet) -> Entry {
        Entry {
            manager: self.manager.to_owned(),
            operation: "Apply".into(),
            api_version: self.api_version.to_owned(),
            subresource: self.subresource.map(str::to_owned),
            time: self.now.to_owned(),
            fields,
        }
    }
}

fn conflict_error(conflicts: &[(String, String, String)]) -> ApiError {
    let n = conflicts.len();
    let mut message = format!(
        "Apply failed with {n} conflict{}: ",
        if n == 1 { "" } else { "s" }
    );
    let mut by_manager: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for (m, v, f) in conflicts {
        match by_manager.iter_mut().find(|(bm, bv, _)| bm == m && bv == v) {
            Some(e) => e.2.push(f),
            None => by_manager.push((m, v, vec![f])),
        }
    }
    let parts: Vec<String> = by_manager
        .iter()
        .map(|(m, v, fields)| {
            if fields.len() == 1 {
                format!("conflict with {m:?} using {v}: {}", fields[0])
            } else {
                format!(
                    "conflicts with {m:?} using {v}:\n{}",
                    fields
                        .iter()
                        .map(|f| format!("- {f}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            }
        })
        .collect();
    message.push_str(&parts.join("\n"));
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(m, v, f)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {m:?} using {v}"), "field": f}))
        .collect();
    let mut e = ApiError::new(409, "Conflict", message);
    e.details = Some(json!({"causes": causes}));
    e
}

/// Deep-merges an apply configuration: maps merge, `listType: map` lists merge by key,
/// `listType: set` lists union, other lists and scalars are replaced.
pub(crate) fn merge_into(dst: &mut Value, src: &Value, schema: Option<&Value>) {
    match (dst, src) {
        (Value::Object(d), Value::Object(s)) => {
            for (k, sv) in s {
                if sv.is_null() {
                    continue;
                }
                let cs = if k == "metadata" {
                    None
                } else {
                    child_schema(schema, k)
                };
                match d.get_mut(k) {
                    Some(dv) => merge_into(dv, sv, cs),
                    None => {
                        d.insert(k.clone(), sv.clone());
                    }
                }
            }
        }
        (Value::Array(d), Value::Array(s)) => {
            let list_type = schema
                .and_then(|s| s.get("x-kubernetes-list-type"))
                .and_then(Value::as_str);
            let item_schema = schema.and_then(|s| s.get("items"));
            match list_type {
                Some("map") => {
                    let keys: Vec<String> = schema
                        .and_then(|s| s.get("x-kubernetes-list-map-keys"))
                        .and_then(Value::as_array)
                        .map(|k| {
                            k.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default();
                    for item in s {
                        let same = |i: &&mut Value| keys.iter().all(|k| i.get(k) == item.get(k));
                        match d.iter_mut().find(same) {
                            Some(existing) => merge_into(existing, item, item_schema),
                            None => d.push(item.clone()),
                        }
                    }
                }
                Some("set") => {
                    for item in s {
                        if !d.contains(item) {
                            d.push(item.clone());
                        }
                    }
                }
                _ => *d = s.clone(),
            }
        }
        (d, s) => *d = s.clone(),
    }
}
