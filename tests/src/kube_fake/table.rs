//! `Accept: application/json;as=Table;g=meta.k8s.io;v=v1`: the server-side printing
//! `kubectl get` shows, from a CRD's `additionalPrinterColumns` (JSONPath) or the built-ins'
//! own columns.

use jsonpath_rust::JsonPath;
use serde_json::{Value, json};

use super::registry::{Builtin, PrinterColumn, ResourceType};

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Whether an `Accept` header asks for a Table.
pub(crate) fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

/// `includeObject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Include {
    None,
    Metadata,
    Object,
}

impl Include {
    pub(crate) fn parse(s: Option<&str>) -> Self {
        match s {
            Some("None") => Self::None,
            Some("Object") => Self::Object,
            _ => Self::Metadata,
        }
    }
}

fn column(
    name: &str,
    type_: &str,
    format: &str,
    description: &str,
    priority: i64,
) -> PrinterColumn {
    PrinterColumn {
        name: name.to_owned(),
        type_: type_.to_owned(),
        format: format.to_owned(),
        description: description.to_owned(),
        priority,
        json_path: String::new(),
    }
}

fn age() -> PrinterColumn {
    PrinterColumn {
        json_path: ".metadata.creationTimestamp".into(),
        ..column("Age", "date", "", AGE_DESCRIPTION, 0)
    }
}

/// The columns after Name.
fn columns(rt: &ResourceType, version: &str) -> Vec<PrinterColumn> {
    let with_path = |c: PrinterColumn, p: &str| PrinterColumn {
        json_path: p.to_owned(),
        ..c
    };
    match rt.builtin {
        None => {
            let cols = rt
                .version(version)
                .map(|v| v.printer_columns.clone())
                .unwrap_or_default();
            if cols.is_empty() { vec![age()] } else { cols }
        }
        Some(Builtin::Secret) => vec![
            with_path(column("Type", "string", "", "", 0), ".type"),
            column("Data", "string", "", "", 0),
            age(),
        ],
        Some(Builtin::ConfigMap) => vec![column("Data", "string", "", "", 0), age()],
        Some(Builtin::Namespace) => vec![
            with_path(column("Status", "string", "", "", 0), ".status.phase"),
            age(),
        ],
        Some(Builtin::Lease) => vec![
            with_path(
                column("Holder", "string", "", "", 0),
                ".spec.holderIdentity",
            ),
            age(),
        ],
        Some(Builtin::CustomResourceDefinition) => vec![with_path(
            column("Created At", "date", "", "", 0),
            ".metadata.creationTimestamp",
        )],
        Some(Builtin::Event | Builtin::EventsV1Event) => vec![
            column("Last Seen", "string", "", "", 0),
            with_path(column("Type", "string", "", "", 0), ".type"),
            with_path(column("Reason", "string", "", "", 0), ".reason"),
            column("Object", "string", "", "", 0),
            column("Message", "string", "", "", 0),
        ],
        Some(Builtin::ValidatingAdmissionPolicy) => vec![
            column("Validations", "integer", "", "", 0),
            column("ParamKind", "string", "", "", 0),
            age(),
        ],
        Some(Builtin::ValidatingAdmissionPolicyBinding) => vec![
            with_path(
                column("PolicyName", "string", "", "", 0),
                ".spec.policyName",
            ),
            column("ParamRef", "string", "", "", 0),
            age(),
        ],
    }
}

/// Kubernetes JSONPath (`.status.state`, `.items[0].x`, `[?(@.type=="Ready")]`) as the
/// RFC 9535 path `jsonpath-rust` evaluates.
fn to_rfc_path(p: &str) -> String {
    let p = p.trim().trim_start_matches('{').trim_end_matches('}');
    let p = p.strip_prefix('$').unwrap_or(p);
    if p.starts_with('.') || p.starts_with('[') {
        format!("${p}")
    } else {
        format!("$.{p}")
    }
}

/// The first value a JSONPath finds: plain `.a.b` paths directly, the rest (indexes,
/// filters, wildcards) through `jsonpath-rust`.
pub(crate) fn find<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let plain = path.trim();
    if plain.starts_with('.')
        && plain[1..].split('.').all(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        })
    {
        return plain[1..].split('.').try_fold(obj, |v, k| v.get(k));
    }
    obj.query(&to_rfc_path(path))
        .ok()
        .and_then(|r| r.into_iter().next())
}

/// `duration.HumanDuration`.
pub(crate) fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

fn age_of(ts: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(ts) {
        Ok(t) => human_duration((chrono::Utc::now() - t.with_timezone(&chrono::Utc)).num_seconds()),
        Err(_) => "<invalid>".into(),
    }
}

/// The text kubectl's JSONPath printer gives a value.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `cellForJSONValue` of the CRD table convertor.
fn cell(c: &PrinterColumn, v: Option<&Value>) -> Value {
    let Some(v) = v else { return Value::Null };
    match c.type_.as_str() {
        "string" => json!(text_of(v)),
        "integer" => v
            .as_i64()
            .or_else(|| v.as_f64().map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        "number" => v.as_f64().map_or(Value::Null, |f| json!(f)),
        "boolean" => v.as_bool().map_or(Value::Null, |b| json!(b)),
        "date" => v.as_str().map_or(Value::Null, |s| json!(age_of(s))),
        _ => Value::Null,
    }
}

fn builtin_cell(rt: &ResourceType, c: &PrinterColumn, obj: &Value) -> Value {
    let count = |k: &str| {
        obj.get(k)
            .and_then(Value::as_object)
            .map_or(0, serde_json::Map::len)
    };
    match (rt.builtin, c.name.as_str()) {
        (Some(Builtin::Secret), "Data") => json!(count("data")),
        (Some(Builtin::ConfigMap), "Data") => json!(count("data") + count("binaryData")),
        (Some(Builtin::Event | Builtin::EventsV1Event), "Last Seen") => {
            let ts = ["lastTimestamp", "eventTime", "deprecatedLastTimestamp"]
                .iter()
                .find_map(|k| obj.get(*k).and_then(Value::as_str))
                .or_else(|| {
                    obj.pointer("/metadata/creationTimestamp")
                        .and_then(Value::as_str)
                });
            json!(ts.map_or_else(|| "<unknown>".to_owned(), age_of))
        }
        (Some(Builtin::Event | Builtin::EventsV1Event), "Object") => {
            let r = obj.get("involvedObject").or_else(|| obj.get("regarding"));
            let kind = r
                .and_then(|r| r.get("kind"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_lowercase();
            let name = r
                .and_then(|r| r.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            json!(format!("{kind}/{name}"))
        }
        (Some(Builtin::Event), "Message") => {
            json!(obj.get("message").map(text_of).unwrap_or_default())
        }
        (Some(Builtin::EventsV1Event), "Message") => {
            json!(obj.get("note").map(text_of).unwrap_or_default())
        }
        (Some(Builtin::ValidatingAdmissionPolicy), "Validations") => {
            json!(
                obj.pointer("/spec/validations")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len)
            )
        }
        (Some(Builtin::ValidatingAdmissionPolicy), "ParamKind") => {
            let pk = obj.pointer("/spec/paramKind");
            json!(pk.map_or_else(
                || "<unset>".to_owned(),
                |p| format!(
                    "{}/{}",
                    p.get("apiVersion").map(text_of).unwrap_or_default(),
                    p.get("kind").map(text_of).unwrap_or_default()
                )
            ))
        }
        (Some(Builtin::ValidatingAdmissionPolicyBinding), "ParamRef") => {
            json!(
                obj.pointer("/spec/paramRef/name")
                    .map_or_else(|| "<unset>".to_owned(), text_of)
            )
        }
        (Some(Builtin::CustomResourceDefinition), _) => {
            json!(
                obj.pointer("/metadata/creationTimestamp")
                    .map(text_of)
                    .unwrap_or_default()
            )
        }
        _ if c.type_ == "date" => cell(c, find(obj, &c.json_path)),
        _ => cell(c, find(obj, &c.json_path)),
    }
}

fn row(rt: &ResourceType, cols: &[PrinterColumn], obj: &Value, include: Include) -> Value {
    let mut cells = vec![json!(
        obj.pointer("/metadata/name")
            .map(text_of)
            .unwrap_or_default()
    )];
    for c in cols {
        cells.push(if rt.builtin.is_some() {
            builtin_cell(rt, c, obj)
        } else {
            cell(c, find(obj, &c.json_path))
        });
    }
    let mut r = json!({"cells": cells});
    match include {
        Include::None => {}
        Include::Metadata => {
            r["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
            });
        }
        Include::Object => r["object"] = obj.clone(),
    }
    r
}

/// A Table of objects.
pub(crate) fn table(
    rt: &ResourceType,
    version: &str,
    objects: &[Value],
    include: Include,
    metadata: Value,
) -> Value {
    let cols = columns(rt, version);
    let mut defs = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0}),
    ];
    defs.extend(cols.iter().map(|c| {
        json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority})
    }));
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": defs,
        "rows": objects.iter().map(|o| row(rt, &cols, o, include)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        let cases = [
            (-5, "<invalid>"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (185, "3m5s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (9 * 3600, "9h"),
            (50 * 3600, "2d2h"),
            (400 * 86400, "400d"),
            (3 * 365 * 86400, "3y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(secs), want, "{secs}");
        }
    }

    #[test]
    fn json_paths_find_plain_fields_and_filters() {
        let obj = json!({"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}, "type": "x"});
        assert_eq!(find(&obj, ".type"), Some(&json!("x")));
        assert_eq!(
            find(&obj, r#".status.conditions[?(@.type=="Ready")].status"#),
            Some(&json!("True"))
        );
        assert_eq!(find(&obj, ".status.missing"), None);
    }
}
