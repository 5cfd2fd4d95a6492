//! events.k8s.io/v1 Events and core/v1 Events are one resource stored once, as in
//! kube-apiserver: each version shows its own field names (`regarding` for `involvedObject`,
//! `note` for `message`, `reportingController` for `source.component`...).

use serde_json::{Map, Value, json};

/// (events.k8s.io/v1 field, core/v1 field) pairs that only change name.
const RENAMED: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// The same in both versions.
const SHARED: &[&str] = &[
    "metadata",
    "related",
    "reason",
    "type",
    "action",
    "reportingInstance",
    "eventTime",
    "series",
];

fn convert(obj: &Value, to_core: bool, api_version: &str) -> Value {
    let Some(m) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(api_version));
    out.insert("kind".into(), json!("Event"));
    for k in SHARED {
        if let Some(v) = m.get(*k) {
            out.insert((*k).to_owned(), v.clone());
        }
    }
    for (events, core) in RENAMED {
        let (from, to) = if to_core {
            (events, core)
        } else {
            (core, events)
        };
        if let Some(v) = m.get(*from) {
            out.insert((*to).to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

/// Whether an object is in the core/v1 form.
pub(crate) fn is_core(obj: &Value) -> bool {
    obj.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// events.k8s.io/v1 → core/v1 (the stored form).
pub(crate) fn to_core(obj: &Value) -> Value {
    if is_core(obj) {
        obj.clone()
    } else {
        convert(obj, true, "v1")
    }
}

/// core/v1 → events.k8s.io/v1.
pub(crate) fn to_events_v1(obj: &Value) -> Value {
    if is_core(obj) {
        convert(obj, false, "events.k8s.io/v1")
    } else {
        obj.clone()
    }
}
