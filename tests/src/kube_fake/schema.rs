//! A CRD version's structural `openAPIV3Schema`: pruning of unknown fields, defaulting, and
//! the validation kube-apiserver runs on a custom resource, with its error texts.

use std::collections::HashSet;

use regex::Regex;
use serde_json::{Map, Number, Value, json};

use super::cel_rules::{CompiledRules, Transition};
use super::status::{FieldError, FieldErrorKind, go_number};

/// Fields an object may carry at its root whatever its schema says.
const ROOT_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// Removes the fields the schema does not declare, returning their paths (`.spec.foo`).
pub(crate) fn prune(obj: &mut Value, schema: &Value) -> Vec<String> {
    let mut pruned = Vec::new();
    if let Value::Object(m) = obj {
        let props = schema.get("properties").and_then(Value::as_object);
        let keys: Vec<String> = m.keys().cloned().collect();
        for k in keys {
            if ROOT_FIELDS.contains(&k.as_str()) {
                continue;
            }
            match props.and_then(|p| p.get(&k)) {
                Some(s) => {
                    if let Some(child) = m.get_mut(&k) {
                        prune_value(child, s, &format!(".{k}"), &mut pruned);
                    }
                }
                None if preserves(schema) => {}
                None => {
                    m.remove(&k);
                    pruned.push(format!(".{k}"));
                }
            }
        }
    }
    pruned
}

fn preserves(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
}

fn prune_value(v: &mut Value, schema: &Value, path: &str, pruned: &mut Vec<String>) {
    if schema
        .get("x-kubernetes-embedded-resource")
        .and_then(Value::as_bool)
        == Some(true)
        && let Value::Object(m) = v
    {
        // embedded objects keep apiVersion, kind and metadata
        let props = schema.get("properties").and_then(Value::as_object);
        let keys: Vec<String> = m.keys().cloned().collect();
        for k in keys {
            if ROOT_FIELDS.contains(&k.as_str()) {
                continue;
            }
            prune_child(m, &k, props, schema, path, pruned);
        }
        return;
    }
    match v {
        Value::Object(m) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                prune_child(m, &k, props, schema, path, pruned);
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_value(item, item_schema, &format!("{path}[{i}]"), pruned);
                }
            }
        }
        _ => {}
    }
}

fn prune_child(
    m: &mut Map<String, Value>,
    k: &str,
    props: Option<&Map<String, Value>>,
    schema: &Value,
    path: &str,
    pruned: &mut Vec<String>,
) {
    let child_path = format!("{path}.{k}");
    let child_schema = props
        .and_then(|p| p.get(k))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()));
    match child_schema {
        Some(s) => {
            if let Some(child) = m.get_mut(k) {
                prune_value(child, s, &child_path, pruned);
            }
        }
        None if preserves(schema)
            || schema.get("additionalProperties") == Some(&Value::Bool(true)) => {}
        None => {
            m.remove(k);
            pruned.push(child_path);
        }
    }
}

/// Fills `default`s of absent properties (and of `null`s of non-nullable ones).
pub(crate) fn apply_defaults(v: &mut Value, schema: &Value) {
    match v {
        Value::Object(m) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, s) in props {
                    let nullable = s.get("nullable").and_then(Value::as_bool) == Some(true);
                    let missing = match m.get(k) {
                        None => true,
                        Some(Value::Null) => !nullable,
                        Some(_) => false,
                    };
                    if missing && let Some(d) = s.get("default") {
                        m.insert(k.clone(), d.clone());
                    }
                    if let Some(child) = m.get_mut(k) {
                        apply_defaults(child, s);
                    }
                }
            }
            if let Some(add) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                let declared: HashSet<String> = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                for (k, child) in m.iter_mut() {
                    if !declared.contains(k) {
                        apply_defaults(child, add);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for item in items {
                    apply_defaults(item, s);
                }
            }
        }
        _ => {}
    }
}

/// Validates an object against its schema and the schema's CEL rules.
pub(crate) struct Validator<'a> {
    pub(crate) rules: Option<&'a CompiledRules>,
    pub(crate) errors: Vec<FieldError>,
    /// CEL rules to run once the schema checks passed: value, old value, path, pointer, type.
    pending: Vec<(Value, Option<Value>, String, String, String)>,
}

/// The value at one point of the walk: the path printed in errors and the schema pointer the
/// compiled rules are keyed by.
struct At<'p> {
    path: &'p str,
    pointer: &'p str,
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn num(n: &Number) -> f64 {
    n.as_f64().unwrap_or(0.0)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl<'a> Validator<'a> {
    pub(crate) fn new(rules: Option<&'a CompiledRules>) -> Self {
        Self {
            rules,
            errors: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Runs the CEL rules collected by the walk, unless a schema error blocks them (as
    /// kube-apiserver does for type, required, enum, length and count violations).
    fn finish(&mut self) {
        let blocking = self.errors.iter().any(|e| {
            matches!(
                e.kind,
                FieldErrorKind::NotSupported
                    | FieldErrorKind::Required
                    | FieldErrorKind::TooLong
                    | FieldErrorKind::TooMany
                    | FieldErrorKind::TypeInvalid
            )
        });
        let pending = std::mem::take(&mut self.pending);
        if blocking {
            if !pending.is_empty() {
                self.errors.push(FieldError::invalid(
                    "<nil>",
                    json!("null"),
                    "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                ));
            }
            return;
        }
        let Some(rules) = self.rules else { return };
        for (v, old, path, pointer, type_name) in pending {
            for rule in rules.at(&pointer) {
                let old_for_rule = match rule.transition {
                    Transition::None => None,
                    Transition::Required => match &old {
                        Some(o) => Some(o),
                        None => continue,
                    },
                };
                if let Some(e) = rule.check(&v, old_for_rule, &path, &type_name) {
                    self.errors.push(e);
                }
            }
        }
    }

    /// Validates the whole object (`old` for transition rules on update).
    pub(crate) fn validate_root(&mut self, obj: &Value, old: Option<&Value>, schema: &Value) {
        let Value::Object(m) = obj else { return };
        // the root schema's own rules see the object, of its metadata only name and
        // generateName, as in kube-apiserver
        let rule_view = |o: &Value| {
            let mut v = o.clone();
            if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.retain(|k, _| k == "name" || k == "generateName");
            }
            v
        };
        let old_view = old.map(rule_view);
        self.run_rules(
            &rule_view(obj),
            old_view.as_ref(),
            schema,
            &At {
                path: "",
                pointer: "",
            },
        );
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for r in required.iter().filter_map(Value::as_str) {
                if !ROOT_FIELDS.contains(&r) && !m.contains_key(r) {
                    self.errors.push(FieldError::required(r, ""));
                }
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, v) in m {
            if ROOT_FIELDS.contains(&k.as_str()) {
                if k == "metadata" {
                    self.validate_metadata(v, props.and_then(|p| p.get("metadata")));
                }
                continue;
            }
            if let Some(s) = props.and_then(|p| p.get(k)) {
                let pointer = format!("/properties/{k}");
                let old_child = old.and_then(|o| o.get(k));
                self.validate(
                    v,
                    old_child,
                    s,
                    &At {
                        path: k,
                        pointer: &pointer,
                    },
                );
            }
        }
        self.finish();
    }

    /// The root `metadata` schema may only constrain `name` and `generateName`.
    fn validate_metadata(&mut self, meta: &Value, schema: Option<&Value>) {
        let Some(schema) = schema else { return };
        let props = schema.get("properties").and_then(Value::as_object);
        for key in ["name", "generateName"] {
            if let (Some(s), Some(v)) = (props.and_then(|p| p.get(key)), meta.get(key)) {
                let path = format!("metadata.{key}");
                let pointer = format!("/properties/metadata/properties/{key}");
                self.validate(
                    v,
                    None,
                    s,
                    &At {
                        path: &path,
                        pointer: &pointer,
                    },
                );
            }
        }
    }

    fn invalid(&mut self, at: &At<'_>, value: Value, detail: String) {
        self.errors
            .push(FieldError::invalid(at.path, value, detail));
    }

    fn validate(&mut self, v: &Value, old: Option<&Value>, schema: &Value, at: &At<'_>) {
        if v.is_null() {
            if schema.get("nullable").and_then(Value::as_bool) == Some(true) {
                return;
            }
            if let Some(t) = schema.get("type").and_then(Value::as_str) {
                self.errors.push(FieldError::new(
                    FieldErrorKind::TypeInvalid,
                    at.path,
                    Some(json!("null")),
                    format!("{} in body must be of type {t}: \"null\"", at.path),
                ));
            }
            return;
        }
        if !self.check_type(v, schema, at) {
            return;
        }
        self.check_enum(v, schema, at);
        match v {
            Value::String(s) => self.check_string(s, schema, at),
            Value::Number(n) => self.check_number(n, schema, at),
            Value::Array(items) => self.check_array(items, old, schema, at),
            Value::Object(m) => self.check_object(m, old, schema, at),
            _ => {}
        }
        self.check_combinators(v, old, schema, at);
        self.run_rules(v, old, schema, at);
    }

    fn check_type(&mut self, v: &Value, schema: &Value, at: &At<'_>) -> bool {
        let actual = type_of(v);
        if schema
            .get("x-kubernetes-int-or-string")
            .and_then(Value::as_bool)
            == Some(true)
        {
            if actual == "integer" || actual == "string" {
                return true;
            }
            self.errors.push(FieldError::new(
                FieldErrorKind::TypeInvalid,
                at.path,
                Some(json!(actual)),
                format!(
                    "{} in body must be of type integer,string: {:?}",
                    at.path, actual
                ),
            ));
            return false;
        }
        let Some(want) = schema.get("type").and_then(Value::as_str) else {
            return true;
        };
        let ok = want == actual
            || (want == "number" && actual == "integer")
            || (want == "integer"
                && matches!(v, Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0)));
        if !ok {
            self.errors.push(FieldError::new(
                FieldErrorKind::TypeInvalid,
                at.path,
                Some(json!(actual)),
                format!("{} in body must be of type {want}: {:?}", at.path, actual),
            ));
        }
        ok
    }

    fn check_enum(&mut self, v: &Value, schema: &Value, at: &At<'_>) {
        let Some(allowed) = schema.get("enum").and_then(Value::as_array) else {
            return;
        };
        if allowed.contains(v) {
            return;
        }
        let quoted: Vec<String> = allowed
            .iter()
            .map(|a| match a {
                Value::String(s) => super::status::go_quote(s),
                other => super::status::go_quote(&other.to_string()),
            })
            .collect();
        self.errors.push(FieldError::new(
            FieldErrorKind::NotSupported,
            at.path,
            Some(v.clone()),
            format!("supported values: {}", quoted.join(", ")),
        ));
    }

    fn check_string(&mut self, s: &str, schema: &Value, at: &At<'_>) {
        let len = s.chars().count() as u64;
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && len > max
        {
            let unit = if max == 1 { "byte" } else { "bytes" };
            self.errors.push(FieldError::new(
                FieldErrorKind::TooLong,
                at.path,
                Some(json!(s)),
                format!("may not be more than {max} {unit}"),
            ));
        }
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && len < min
        {
            self.invalid(
                at,
                json!(s),
                format!("{} in body should be at least {min} chars long", at.path),
            );
        }
        if let Some(p) = schema.get("pattern").and_then(Value::as_str) {
            match Regex::new(p) {
                Ok(re) if re.is_match(s) => {}
                Ok(_) => self.invalid(
                    at,
                    json!(s),
                    format!("{} in body should match '{p}'", at.path),
                ),
                Err(e) => {
                    self.invalid(at, json!(s), format!("pattern '{p}' does not compile: {e}"))
                }
            }
        }
        if let Some(f) = schema.get("format").and_then(Value::as_str)
            && !format_ok(f, s)
        {
            self.errors.push(FieldError::new(
                FieldErrorKind::TypeInvalid,
                at.path,
                Some(json!(s)),
                format!(
                    "{} in body must be of type {f}: {}",
                    at.path,
                    super::status::go_quote(s)
                ),
            ));
        }
    }

    fn check_number(&mut self, n: &Number, schema: &Value, at: &At<'_>) {
        let x = num(n);
        let exclusive = |key: &str| schema.get(key).and_then(Value::as_bool) == Some(true);
        if let Some(min) = schema.get("minimum").and_then(Value::as_number) {
            let m = num(min);
            if exclusive("exclusiveMinimum") && x <= m {
                self.invalid(
                    at,
                    Value::Number(n.clone()),
                    format!(
                        "{} in body should be greater than {}",
                        at.path,
                        go_number(min)
                    ),
                );
            } else if x < m {
                self.invalid(
                    at,
                    Value::Number(n.clone()),
                    format!(
                        "{} in body should be greater than or equal to {}",
                        at.path,
                        go_number(min)
                    ),
                );
            }
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_number) {
            let m = num(max);
            if exclusive("exclusiveMaximum") && x >= m {
                self.invalid(
                    at,
                    Value::Number(n.clone()),
                    format!("{} in body should be less than {}", at.path, go_number(max)),
                );
            } else if x > m {
                self.invalid(
                    at,
                    Value::Number(n.clone()),
                    format!(
                        "{} in body should be less than or equal to {}",
                        at.path,
                        go_number(max)
                    ),
                );
            }
        }
        if let Some(mo) = schema.get("multipleOf").and_then(Value::as_number) {
            let d = num(mo);
            if d != 0.0 && (x / d).fract() != 0.0 {
                self.invalid(
                    at,
                    Value::Number(n.clone()),
                    format!(
                        "{} in body should be a multiple of {}",
                        at.path,
                        go_number(mo)
                    ),
                );
            }
        }
    }

    fn check_array(&mut self, items: &[Value], old: Option<&Value>, schema: &Value, at: &At<'_>) {
        let len = items.len() as u64;
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && len > max
        {
            let unit = if max == 1 { "item" } else { "items" };
            self.errors.push(FieldError::new(
                FieldErrorKind::TooMany,
                at.path,
                Some(json!(len)),
                format!("must have at most {max} {unit}"),
            ));
        }
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && len < min
        {
            self.invalid(
                at,
                json!(len),
                format!("{} in body should have at least {min} items", at.path),
            );
        }
        let list_type = schema.get("x-kubernetes-list-type").and_then(Value::as_str);
        let unique = schema.get("uniqueItems").and_then(Value::as_bool) == Some(true)
            || list_type == Some("set");
        if unique {
            for (i, item) in items.iter().enumerate() {
                if items[..i].contains(item) {
                    self.errors.push(FieldError::new(
                        FieldErrorKind::Duplicate,
                        format!("{}[{i}]", at.path),
                        Some(item.clone()),
                        "",
                    ));
                }
            }
        }
        let keys: Vec<&str> = schema
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|k| k.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if list_type == Some("map") {
            for (i, item) in items.iter().enumerate() {
                let key_of =
                    |x: &Value| keys.iter().map(|k| x.get(*k).cloned()).collect::<Vec<_>>();
                if items[..i].iter().any(|o| key_of(o) == key_of(item)) {
                    let shown: Map<String, Value> = keys
                        .iter()
                        .filter_map(|k| item.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                        .collect();
                    self.errors.push(FieldError::new(
                        FieldErrorKind::Duplicate,
                        format!("{}[{i}]", at.path),
                        Some(Value::Object(shown)),
                        "",
                    ));
                }
            }
        }
        let Some(item_schema) = schema.get("items") else {
            return;
        };
        let pointer = format!("{}/items", at.pointer);
        let old_items = old.and_then(Value::as_array);
        for (i, item) in items.iter().enumerate() {
            // transition rules correlate list items only in map lists, by key
            let old_item = match (list_type, old_items) {
                (Some("map"), Some(olds)) => olds
                    .iter()
                    .find(|o| keys.iter().all(|k| o.get(*k) == item.get(*k))),
                _ => None,
            };
            let path = format!("{}[{i}]", at.path);
            self.validate(
                item,
                old_item,
                item_schema,
                &At {
                    path: &path,
                    pointer: &pointer,
                },
            );
        }
    }

    fn check_object(
        &mut self,
        m: &Map<String, Value>,
        old: Option<&Value>,
        schema: &Value,
        at: &At<'_>,
    ) {
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for r in required.iter().filter_map(Value::as_str) {
                if !m.contains_key(r) {
                    self.errors.push(FieldError::required(join(at.path, r), ""));
                }
            }
        }
        let n = m.len() as u64;
        if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
            && n > max
        {
            let unit = if max == 1 { "item" } else { "items" };
            self.errors.push(FieldError::new(
                FieldErrorKind::TooMany,
                at.path,
                Some(json!(n)),
                format!("must have at most {max} {unit}"),
            ));
        }
        if let Some(min) = schema.get("minProperties").and_then(Value::as_u64)
            && n < min
        {
            self.invalid(
                at,
                json!(n),
                format!("{} in body should have at least {min} properties", at.path),
            );
        }
        let props = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties").filter(|a| a.is_object());
        for (k, v) in m {
            let old_child = old.and_then(|o| o.get(k));
            if let Some(s) = props.and_then(|p| p.get(k)) {
                let path = join(at.path, k);
                let pointer = format!("{}/properties/{k}", at.pointer);
                self.validate(
                    v,
                    old_child,
                    s,
                    &At {
                        path: &path,
                        pointer: &pointer,
                    },
                );
            } else if let Some(s) = additional {
                let path = format!("{}[{k}]", at.path);
                let pointer = format!("{}/additionalProperties", at.pointer);
                self.validate(
                    v,
                    old_child,
                    s,
                    &At {
                        path: &path,
                        pointer: &pointer,
                    },
                );
            }
        }
    }

    fn check_combinators(&mut self, v: &Value, old: Option<&Value>, schema: &Value, at: &At<'_>) {
        let passes = |s: &Value, this: &Self| {
            let mut probe = Validator::new(this.rules);
            probe.validate(
                v,
                old,
                s,
                &At {
                    path: at.path,
                    pointer: "/-",
                },
            );
            probe.errors.is_empty()
        };
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            for (i, s) in all.iter().enumerate() {
                let pointer = format!("{}/allOf/{i}", at.pointer);
                self.validate(
                    v,
                    old,
                    s,
                    &At {
                        path: at.path,
                        pointer: &pointer,
                    },
                );
            }
        }
        if let Some(any) = schema.get("anyOf").and_then(Value::as_array)
            && !any.iter().any(|s| passes(s, self))
        {
            self.invalid(
                at,
                v.clone(),
                format!(
                    "{} in body must validate at least one schema (anyOf)",
                    at.path
                ),
            );
        }
        if let Some(one) = schema.get("oneOf").and_then(Value::as_array)
            && one.iter().filter(|s| passes(s, self)).count() != 1
        {
            self.invalid(
                at,
                v.clone(),
                format!(
                    "{} in body must validate one and only one schema (oneOf)",
                    at.path
                ),
            );
        }
        if let Some(not) = schema.get("not")
            && passes(not, self)
        {
            self.invalid(
                at,
                v.clone(),
                format!("{} in body must not validate the schema (not)", at.path),
            );
        }
    }

    fn run_rules(&mut self, v: &Value, old: Option<&Value>, schema: &Value, at: &At<'_>) {
        let Some(rules) = self.rules else { return };
        if rules.at(at.pointer).is_empty() {
            return;
        }
        let type_name = schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("object")
            .to_owned();
        self.pending.push((
            v.clone(),
            old.cloned(),
            at.path.to_owned(),
            at.pointer.to_owned(),
            type_name,
        ));
    }
}

fn format_ok(format: &str, s: &str) -> bool {
    match format {
        "date-time" => chrono::DateTime::parse_from_rfc3339(s).is_ok(),
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
        "uuid" => uuid::Uuid::parse_str(s).is_ok(),
        "byte" => is_base64(s),
        _ => true,
    }
}

/// Whether `s` is standard base64 (what Go's `[]byte` JSON decoding accepts).
pub(crate) fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(4) {
        return false;
    }
    let pad = b.iter().rev().take_while(|c| **c == b'=').count();
    pad <= 2
        && b[..b.len() - pad]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
}
