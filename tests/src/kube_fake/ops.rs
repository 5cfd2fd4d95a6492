//! The write operations (create, update, patch, delete) with kube-apiserver's semantics:
//! optimistic concurrency, the status subresource, generation, finalizers, dry runs,
//! managed fields, CRD validation, and the built-ins' own rules.

use std::sync::Arc;

use base64::Engine as _;
use regex::Regex;
use serde_json::{Map, Value, json};

use super::managed;
use super::patch::{self, Apply, PatchType};
use super::registry::{self, Builtin, ResourceType};
use super::schema::{self, Validator};
use super::status::{ApiError, FieldError, go_quote};
use super::store::{State, Store, name_of, namespace_of, rv_of};

/// What a request addresses.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) rt: Arc<ResourceType>,
    pub(crate) version: String,
    /// Empty for cluster-scoped resources and for all-namespace lists.
    pub(crate) namespace: String,
}

/// `fieldValidation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

/// The options of one write.
#[derive(Debug, Clone)]
pub(crate) struct WriteOptions {
    pub(crate) dry_run: bool,
    pub(crate) manager: String,
    /// Whether `fieldManager` was given (server-side apply requires it).
    pub(crate) manager_given: bool,
    pub(crate) validation: FieldValidation,
    pub(crate) force: bool,
}

/// The result of a write.
#[derive(Debug)]
pub(crate) struct Written {
    pub(crate) object: Value,
    pub(crate) created: bool,
    pub(crate) warnings: Vec<String>,
}

/// The result of a delete.
#[derive(Debug)]
pub(crate) enum Deleted {
    /// Gone now; the last state.
    Gone(Value),
    /// Marked for deletion, waiting for its finalizers.
    Pending(Value),
}

/// `DeleteOptions` that matter here.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    pub(crate) dry_run: bool,
    pub(crate) uid: Option<String>,
    pub(crate) resource_version: Option<String>,
    pub(crate) orphan: bool,
}

impl Target {
    /// The object as served in the requested version.
    pub(crate) fn present(&self, obj: Value) -> Value {
        let mut obj = if self.rt.builtin == Some(Builtin::EventsV1Event) {
            super::events::to_events_v1(&obj)
        } else {
            obj
        };
        if let Value::Object(m) = &mut obj {
            m.insert(
                "apiVersion".into(),
                json!(self.rt.api_version(&self.version)),
            );
            m.insert("kind".into(), json!(self.rt.kind));
        }
        obj
    }

    /// The object in its stored form.
    fn stored(&self, obj: Value) -> Value {
        if self.rt.builtin == Some(Builtin::EventsV1Event) {
            super::events::to_core(&obj)
        } else {
            obj
        }
    }

    fn schema(&self) -> Option<&Value> {
        self.rt
            .version(&self.version)
            .and_then(|v| v.schema.as_deref())
    }

    fn invalid(&self, name: &str, errs: &[FieldError]) -> ApiError {
        ApiError::invalid(&self.rt.group, &self.rt.kind, name, errs)
    }
}

fn dns1123_subdomain() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
            .unwrap_or_else(|_| unreachable!("static regex"))
    })
}

fn dns1123_label() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
            .unwrap_or_else(|_| unreachable!("static regex"))
    })
}

fn label_value() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
            .unwrap_or_else(|_| unreachable!("static regex"))
    })
}

/// The name rules: a DNS-1123 label for namespaces, a subdomain otherwise.
fn validate_name(rt: &ResourceType, name: &str, errs: &mut Vec<FieldError>) {
    if rt.builtin == Some(Builtin::Namespace) {
        if name.len() > 63 || !dns1123_label().is_match(name) {
            errs.push(FieldError::invalid(
                "metadata.name",
                json!(name),
                if name.len() > 63 {
                    "must be no more than 63 characters".to_owned()
                } else {
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_owned()
                },
            ));
        }
        return;
    }
    if name.len() > 253 {
        errs.push(FieldError::invalid(
            "metadata.name",
            json!(name),
            "must be no more than 253 characters",
        ));
    } else if !dns1123_subdomain().is_match(name) {
        errs.push(FieldError::invalid(
            "metadata.name",
            json!(name),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ));
    }
}

/// Label keys and values, as `ValidateLabels` checks them.
fn validate_labels(meta: &Value, errs: &mut Vec<FieldError>) {
    let Some(labels) = meta.get("labels").and_then(Value::as_object) else {
        return;
    };
    for (k, v) in labels {
        let Some(v) = v.as_str() else {
            errs.push(FieldError::invalid(
                "metadata.labels",
                json!(k),
                "label values must be strings",
            ));
            continue;
        };
        let (prefix, name) = k.rsplit_once('/').map_or(("", k.as_str()), |(p, n)| (p, n));
        let name_ok = !name.is_empty() && name.len() <= 63 && label_value().is_match(name);
        let prefix_ok =
            prefix.is_empty() || (prefix.len() <= 253 && dns1123_subdomain().is_match(prefix));
        if !name_ok || !prefix_ok {
            errs.push(FieldError::invalid(
                "metadata.labels",
                json!(k),
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ));
        }
        if v.len() > 63 {
            errs.push(FieldError::invalid(
                "metadata.labels",
                json!(v),
                "must be no more than 63 characters",
            ));
        } else if !label_value().is_match(v) {
            errs.push(FieldError::invalid(
                "metadata.labels",
                json!(v),
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ));
        }
    }
    if let Some(ann) = meta.get("annotations").and_then(Value::as_object) {
        let total: usize = ann
            .iter()
            .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
            .sum();
        if total > 262_144 {
            errs.push(FieldError::new(
                super::status::FieldErrorKind::TooLong,
                "metadata.annotations",
                None,
                "may not be more than 262144 bytes",
            ));
        }
    }
}

/// Server-owned metadata that writes cannot change.
const SYSTEM_META: &[&str] = &[
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
];

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        _ => unreachable!("metadata was just made an object"),
    }
}

/// Checks `apiVersion`/`kind` of a request body against the URL.
fn check_type_meta(t: &Target, obj: &Value) -> Result<(), ApiError> {
    let want_av = t.rt.api_version(&t.version);
    if let Some(av) = obj.get("apiVersion").and_then(Value::as_str)
        && av != want_av
        && !t
            .rt
            .versions
            .iter()
            .any(|v| t.rt.api_version(&v.name) == av)
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({want_av})"
        )));
    }
    if let Some(k) = obj.get("kind").and_then(Value::as_str)
        && k != t.rt.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            t.rt.kind
        )));
    }
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request is not a JSON object",
        ));
    }
    Ok(())
}

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes
        .iter()
        .take(5)
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

/// The per-type rules of built-ins, run on every write.
fn prepare_builtin(t: &Target, obj: &mut Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    match t.rt.builtin {
        Some(Builtin::Secret) => {
            if let Some(Value::Object(sd)) =
                obj.as_object_mut().and_then(|m| m.remove("stringData"))
            {
                let data = obj
                    .as_object_mut()
                    .map(|m| m.entry("data").or_insert_with(|| json!({})))
                    .and_then(Value::as_object_mut);
                if let Some(data) = data {
                    for (k, v) in sd {
                        let s = v.as_str().unwrap_or_default();
                        data.insert(
                            k,
                            json!(base64::engine::general_purpose::STANDARD.encode(s)),
                        );
                    }
                }
            }
            if obj.get("type").is_none_or(|t| t.is_null() || t == "") {
                obj["type"] = json!("Opaque");
            }
            if let Some(data) = obj.get("data").and_then(Value::as_object) {
                for (k, v) in data {
                    if !v.as_str().is_some_and(schema::is_base64) {
                        errs.push(FieldError::invalid(
                            format!("data[{k}]"),
                            json!("<value omitted>"),
                            "illegal base64 data",
                        ));
                    }
                }
            }
            immutable_data(obj, old, &["data", "type"], errs);
        }
        Some(Builtin::ConfigMap) => immutable_data(obj, old, &["data", "binaryData"], errs),
        Some(Builtin::Namespace) => {
            if obj.pointer("/spec/finalizers").is_none() {
                obj["spec"] = json!({"finalizers": ["kubernetes"]});
            }
            if old.is_none() {
                obj["status"] = json!({"phase": "Active"});
            }
            let name = name_of(obj).to_owned();
            let labels = meta_mut(obj).entry("labels").or_insert_with(|| json!({}));
            if let Value::Object(l) = labels {
                l.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
        Some(Builtin::Lease) => {
            if let Some(d) = obj
                .pointer("/spec/leaseDurationSeconds")
                .and_then(Value::as_i64)
                && d <= 0
            {
                errs.push(FieldError::invalid(
                    "spec.leaseDurationSeconds",
                    json!(d),
                    "must be greater than 0",
                ));
            }
        }
        Some(Builtin::CustomResourceDefinition)
            if old.is_none() || obj.get("spec") != old.and_then(|o| o.get("spec")) =>
        {
            crd_status(obj);
        }
        _ => {}
    }
}

fn immutable_data(obj: &Value, old: Option<&Value>, fields: &[&str], errs: &mut Vec<FieldError>) {
    let Some(old) = old else { return };
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    for f in fields {
        if obj.get(*f) != old.get(*f) {
            errs.push(FieldError::forbidden(
                *f,
                "field is immutable when `immutable` is set",
            ));
        }
    }
    if obj.get("immutable") != old.get("immutable") {
        errs.push(FieldError::forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
}

/// The status kube-apiserver gives an accepted CRD.
fn crd_status(crd: &mut Value) {
    let now = super::now();
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let mut accepted = names.clone();
    if accepted.get("singular").is_none()
        && let Some(k) = names.get("kind").and_then(Value::as_str)
    {
        accepted["singular"] = json!(k.to_lowercase());
    }
    if accepted.get("listKind").is_none()
        && let Some(k) = names.get("kind").and_then(Value::as_str)
    {
        accepted["listKind"] = json!(format!("{k}List"));
    }
    let stored: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|v| {
            v.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    crd["status"] = json!({
        "acceptedNames": accepted,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "storedVersions": stored,
    });
}

/// Everything but `metadata` (and `status` when it has its own subresource): what bumps the
/// generation when it changes.
fn generation_content(obj: &Value, without_status: bool) -> Value {
    let mut c = obj.clone();
    if let Value::Object(m) = &mut c {
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if without_status {
            m.remove("status");
        }
    }
    c
}

/// Equal but for `managedFields` timestamps and `resourceVersion`: a no-op write.
fn same_object(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
            if let Some(Value::Array(mf)) = m.get_mut("managedFields") {
                for e in mf.iter_mut() {
                    if let Some(e) = e.as_object_mut() {
                        e.remove("time");
                    }
                }
            }
        }
        if let Some(m) = v.as_object_mut() {
            m.remove("apiVersion");
        }
        v
    };
    strip(a) == strip(b)
}

struct Checked {
    warnings: Vec<String>,
}

impl Store {
    /// Custom-resource pruning, defaulting and validation; the built-ins' own checks.
    fn check(
        &self,
        t: &Target,
        obj: &mut Value,
        old: Option<&Value>,
        opts: &WriteOptions,
    ) -> Result<Checked, ApiError> {
        let name = name_of(obj).to_owned();
        let mut errs = Vec::new();
        let mut warnings = Vec::new();
        prepare_builtin(t, obj, old, &mut errs);
        if let Some(meta) = obj.get("metadata") {
            validate_labels(meta, &mut errs);
        }
        if let Some(schema) = t.schema() {
            let pruned = schema::prune(obj, schema);
            if !pruned.is_empty() {
                match opts.validation {
                    FieldValidation::Strict => {
                        let list: Vec<String> = pruned
                            .iter()
                            .map(|p| {
                                format!("unknown field {}", go_quote(p.trim_start_matches('.')))
                            })
                            .collect();
                        return Err(ApiError::bad_request(format!(
                            "{} in version {} cannot be handled as a {}: strict decoding error: {}",
                            t.rt.kind,
                            go_quote(&t.version),
                            t.rt.kind,
                            list.join(", ")
                        )));
                    }
                    FieldValidation::Warn => {
                        warnings.extend(pruned.iter().map(|p| {
                            format!("unknown field {}", go_quote(p.trim_start_matches('.')))
                        }));
                    }
                    FieldValidation::Ignore => {}
                }
            }
            schema::apply_defaults(obj, schema);
            let rules = t.rt.version(&t.version).and_then(|v| v.rules.clone());
            let mut v = Validator::new(rules.as_deref());
            v.validate_root(obj, old, schema);
            errs.extend(v.errors);
        }
        if t.rt.builtin == Some(Builtin::CustomResourceDefinition) {
            match registry::from_crd(obj) {
                Ok(rt) => {
                    let st = self.lock();
                    if let Some(other) = st.types.iter().find(|o| {
                        o.group == rt.group && o.plural == rt.plural && o.builtin.is_some()
                    }) {
                        errs.push(FieldError::invalid(
                            "spec.names.plural",
                            json!(other.plural),
                            "the resource name is reserved by a built-in resource",
                        ));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        if !errs.is_empty() {
            return Err(t.invalid(&name, &errs));
        }
        Ok(Checked { warnings })
    }

    /// POST: creates an object.
    pub(crate) fn create(
        &self,
        t: &Target,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        self.create_with(t, obj, opts, false)
    }

    /// Creates an object; `applied` keeps the managed fields server-side apply computed.
    fn create_with(
        &self,
        t: &Target,
        mut obj: Value,
        opts: &WriteOptions,
        applied: bool,
    ) -> Result<Written, ApiError> {
        check_type_meta(t, &obj)?;
        obj = t.present(obj);
        let now = super::now();
        {
            let meta = meta_mut(&mut obj);
            for k in SYSTEM_META {
                meta.remove(*k);
            }
            meta.remove("resourceVersion");
            if !applied {
                meta.remove("managedFields");
            }
            let name_missing = meta
                .get("name")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            if name_missing
                && let Some(g) = meta
                    .get("generateName")
                    .and_then(Value::as_str)
                    .filter(|g| !g.is_empty())
            {
                let generated = format!("{g}{}", random_suffix());
                meta.insert("name".into(), json!(generated));
            }
        }
        let name = name_of(&obj).to_owned();
        let mut errs = Vec::new();
        if name.is_empty() {
            errs.push(FieldError::required(
                "metadata.name",
                "name or generateName is required",
            ));
        } else {
            validate_name(&t.rt, &name, &mut errs);
        }
        if t.rt.namespaced {
            let body_ns = namespace_of(&obj).to_owned();
            if !body_ns.is_empty() && body_ns != t.namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            meta_mut(&mut obj).insert("namespace".into(), json!(t.namespace));
        } else {
            meta_mut(&mut obj).remove("namespace");
        }
        if !errs.is_empty() {
            return Err(t.invalid(&name, &errs));
        }
        if t.rt.builtin.is_none()
            && t.rt.has_status(&t.version)
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        let checked = self.check(t, &mut obj, None, opts)?;
        {
            let meta = meta_mut(&mut obj);
            meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            meta.insert("creationTimestamp".into(), json!(now));
            if t.rt.has_generation() {
                meta.insert("generation".into(), json!(1));
            }
        }
        let api_version = t.rt.api_version(&t.version);
        if obj.pointer("/metadata/managedFields").is_none() {
            managed::record_update(
                None,
                &mut obj,
                &opts.manager,
                &api_version,
                None,
                t.schema(),
                &now,
            );
        }
        self.commit_create(t, obj, opts, checked.warnings)
    }

    fn commit_create(
        &self,
        t: &Target,
        obj: Value,
        opts: &WriteOptions,
        warnings: Vec<String>,
    ) -> Result<Written, ApiError> {
        let name = name_of(&obj).to_owned();
        let mut st = self.lock();
        if t.rt.namespaced {
            match st.namespace(&t.namespace) {
                None => {
                    let ns_rt = st.builtin(Builtin::Namespace);
                    return Err(ApiError::not_found(&ns_rt, &t.namespace));
                }
                Some(ns) if ns.pointer("/metadata/deletionTimestamp").is_some() => {
                    return Err(ApiError::new(
                        403,
                        "Forbidden",
                        format!(
                            "{} {} is forbidden: unable to create new content in namespace {} because it is being terminated",
                            t.rt.qualified_resource(),
                            go_quote(&name),
                            t.namespace
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        if st.get(&t.rt, &t.namespace, &name).is_some() {
            return Err(ApiError::already_exists(&t.rt, &name));
        }
        if opts.dry_run {
            return Ok(Written {
                object: t.present(obj),
                created: true,
                warnings,
            });
        }
        let stored = st.put(self.sender(), &t.rt, None, t.stored(obj));
        if t.rt.builtin == Some(Builtin::CustomResourceDefinition) {
            register_crd(&mut st, &stored);
        }
        Ok(Written {
            object: t.present(stored),
            created: true,
            warnings,
        })
    }

    /// PUT (and the second half of PATCH): replaces an object, or only its status.
    pub(crate) fn update(
        &self,
        t: &Target,
        name: &str,
        mut obj: Value,
        status: bool,
        put: bool,
        opts: &WriteOptions,
        apply_done: bool,
    ) -> Result<Written, ApiError> {
        check_type_meta(t, &obj)?;
        obj = t.present(obj);
        let body_name = name_of(&obj).to_owned();
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if t.rt.namespaced {
            let body_ns = namespace_of(&obj).to_owned();
            if !body_ns.is_empty() && body_ns != t.namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
        let old = {
            let st = self.lock();
            st.get(&t.rt, &t.namespace, name).cloned()
        };
        let Some(old) = old else {
            return Err(ApiError::not_found(&t.rt, name));
        };
        let old = t.present(old);
        let requested_rv = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let current_rv = old
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str);
        match requested_rv.as_deref().filter(|rv| !rv.is_empty()) {
            Some(rv) if Some(rv) != current_rv => return Err(ApiError::stale(&t.rt, name)),
            Some(_) => {}
            None if put && !t.rt.allows_unconditional_update() => {
                return Err(t.invalid(
                    name,
                    &[FieldError::invalid_shown(
                        "metadata.resourceVersion",
                        "0x0",
                        "must be specified for an update",
                    )],
                ));
            }
            None => {}
        }
        let has_status = t.rt.has_status(&t.version);
        let mut new = if status {
            // only status changes: everything else stays as it was
            let mut n = old.clone();
            let managed = obj.pointer("/metadata/managedFields").cloned();
            match obj.get("status") {
                Some(s) => n["status"] = s.clone(),
                None => {
                    if let Some(m) = n.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            if let (true, Some(mf)) = (apply_done, managed) {
                n["metadata"]["managedFields"] = mf;
            }
            n
        } else {
            let mut n = obj;
            if has_status {
                match old.get("status") {
                    Some(s) => n["status"] = s.clone(),
                    None => {
                        if let Some(m) = n.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            n
        };
        {
            let old_meta = old
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let meta = meta_mut(&mut new);
            for k in SYSTEM_META {
                match old_meta.get(*k) {
                    Some(v) => meta.insert((*k).to_owned(), v.clone()),
                    None => meta.remove(*k),
                };
            }
            meta.insert("name".into(), json!(name));
            if t.rt.namespaced {
                meta.insert("namespace".into(), json!(t.namespace));
            } else {
                meta.remove("namespace");
            }
            meta.insert(
                "resourceVersion".into(),
                old_meta
                    .get("resourceVersion")
                    .cloned()
                    .unwrap_or(Value::Null),
            );
            if !apply_done && !status {
                meta.remove("managedFields");
                if let Some(mf) = old_meta.get("managedFields") {
                    meta.insert("managedFields".into(), mf.clone());
                }
            }
        }
        if old.pointer("/metadata/deletionTimestamp").is_some() {
            let finalizers = |o: &Value| -> Vec<String> {
                o.pointer("/metadata/finalizers")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let before = finalizers(&old);
            let added: Vec<String> = finalizers(&new)
                .into_iter()
                .filter(|f| !before.contains(f))
                .collect();
            if !added.is_empty() {
                let shown: Vec<String> = added.iter().map(|f| go_quote(f)).collect();
                return Err(t.invalid(
                    name,
                    &[FieldError::forbidden(
                        "metadata.finalizers",
                        format!(
                            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                            shown.join(", ")
                        ),
                    )],
                ));
            }
        }
        let checked = self.check(t, &mut new, Some(&old), opts)?;
        if t.rt.has_generation()
            && !status
            && generation_content(&new, has_status) != generation_content(&old, has_status)
        {
            let g = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            new["metadata"]["generation"] = json!(g + 1);
        }
        let now = super::now();
        if !apply_done {
            let api_version = t.rt.api_version(&t.version);
            let sub = status.then_some("status");
            managed::record_update(
                Some(&old),
                &mut new,
                &opts.manager,
                &api_version,
                sub,
                t.schema(),
                &now,
            );
        }
        if same_object(&new, &old) {
            return Ok(Written {
                object: old,
                created: false,
                warnings: checked.warnings,
            });
        }
        if opts.dry_run {
            return Ok(Written {
                object: new,
                created: false,
                warnings: checked.warnings,
            });
        }
        let mut st = self.lock();
        let current_rv = st.get(&t.rt, &t.namespace, name).and_then(rv_of);
        if current_rv != rv_of(&old) {
            // someone wrote in between: the same conflict a client would get
            return Err(ApiError::stale(&t.rt, name));
        }
        let finalizers_left = new
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if new.pointer("/metadata/deletionTimestamp").is_some() && !finalizers_left {
            let stored = st.put(
                self.sender(),
                &t.rt,
                Some(&t.stored(old.clone())),
                t.stored(new),
            );
            let gone =
                finish_delete(self, &mut st, &t.rt, &t.namespace, name, false).unwrap_or(stored);
            return Ok(Written {
                object: t.present(gone),
                created: false,
                warnings: checked.warnings,
            });
        }
        let stored = st.put(
            self.sender(),
            &t.rt,
            Some(&t.stored(old.clone())),
            t.stored(new),
        );
        if t.rt.builtin == Some(Builtin::CustomResourceDefinition) {
            register_crd(&mut st, &stored);
        }
        Ok(Written {
            object: t.present(stored),
            created: false,
            warnings: checked.warnings,
        })
    }

    /// PATCH of every type.
    ///
    /// A patch that sets no `metadata.resourceVersion` is retried when another write lands
    /// between its read and its write, as kube-apiserver's guaranteed update does (which
    /// retries until it lands; here at most [`PATCH_RETRIES`] times, enough for any number
    /// of writers a test runs on a loaded machine); one that sets it gets the 409 Conflict.
    pub(crate) fn patch(
        &self,
        t: &Target,
        name: &str,
        kind: PatchType,
        body: &[u8],
        status: bool,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let mut attempts = 0;
        loop {
            match self.patch_once(t, name, kind, body, status, opts) {
                Err(e)
                    if e.reason == "Conflict"
                        && e.details
                            .as_ref()
                            .is_some_and(|d| d.get("causes").is_none())
                        && attempts < PATCH_RETRIES
                        && !patch_sets_rv(kind, body) =>
                {
                    attempts += 1;
                }
                other => return other,
            }
        }
    }

    fn patch_once(
        &self,
        t: &Target,
        name: &str,
        kind: PatchType,
        body: &[u8],
        status: bool,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        if kind == PatchType::Strategic && t.rt.builtin.is_none() {
            return Err(ApiError::unsupported_media_type(
                "application/strategic-merge-patch+json",
                patch::CUSTOM_RESOURCE_PATCH_TYPES,
            ));
        }
        let existing = {
            let st = self.lock();
            st.get(&t.rt, &t.namespace, name).cloned()
        };
        if kind == PatchType::Apply {
            if !opts.manager_given || opts.manager.is_empty() {
                return Err(ApiError::invalid(
                    "meta.k8s.io",
                    "PatchOptions",
                    "",
                    &[FieldError::required(
                        "fieldManager",
                        "is required for apply patch",
                    )],
                ));
            }
            let mut config = patch::parse_apply(body)?;
            check_type_meta(t, &config)?;
            if config.get("apiVersion").is_none() || config.get("kind").is_none() {
                return Err(ApiError::bad_request(
                    "error decoding YAML: Object 'Kind' is missing in the apply configuration",
                ));
            }
            let body_name = name_of(&config).to_owned();
            if body_name.is_empty() {
                meta_mut(&mut config).insert("name".into(), json!(name));
            } else if body_name != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                )));
            }
            let now = super::now();
            let api_version = t.rt.api_version(&t.version);
            let apply = Apply {
                manager: &opts.manager,
                force: opts.force,
                api_version: &api_version,
                subresource: status.then_some("status"),
                schema: t.schema(),
                now: &now,
                status_subresource: t.rt.has_status(&t.version),
            };
            return match existing {
                None if status => Err(ApiError::not_found(&t.rt, name)),
                None => {
                    let obj = apply.run(None, &config)?;
                    self.create_with(t, obj, opts, true)
                }
                Some(existing) => {
                    let existing = t.present(existing);
                    let merged = apply.run(Some(&existing), &config)?;
                    self.update(t, name, merged, status, false, opts, true)
                }
            };
        }
        let Some(existing) = existing else {
            return Err(ApiError::not_found(&t.rt, name));
        };
        let patched = patch::apply_patch(kind, &t.present(existing), body)?;
        self.update(t, name, patched, status, false, opts, false)
    }

    /// DELETE of one object.
    pub(crate) fn delete(
        &self,
        t: &Target,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let mut st = self.lock();
        let Some(obj) = st.get(&t.rt, &t.namespace, name).cloned() else {
            return Err(ApiError::not_found(&t.rt, name));
        };
        for (field, pointer, want) in [
            ("UID", "/metadata/uid", &opts.uid),
            (
                "ResourceVersion",
                "/metadata/resourceVersion",
                &opts.resource_version,
            ),
        ] {
            let actual = obj
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let Some(want) = want
                && want != actual
            {
                return Err(ApiError::conflict(
                    &t.rt,
                    name,
                    &format!(
                        "Precondition failed: {field} in precondition: {want}, {field} in object meta: {actual}"
                    ),
                ));
            }
        }
        let has_finalizers = obj
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        let is_namespace = t.rt.builtin == Some(Builtin::Namespace);
        if obj.pointer("/metadata/deletionTimestamp").is_some() && !is_namespace {
            return Ok(Deleted::Pending(t.present(obj)));
        }
        if has_finalizers {
            if opts.dry_run {
                return Ok(Deleted::Pending(t.present(obj)));
            }
            let mut marked = obj.clone();
            marked["metadata"]["deletionTimestamp"] = json!(super::now());
            marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            if let Some(g) = obj.pointer("/metadata/generation").and_then(Value::as_i64) {
                marked["metadata"]["generation"] = json!(g + 1);
            }
            let stored = st.put(self.sender(), &t.rt, Some(&obj), marked);
            return Ok(Deleted::Pending(t.present(stored)));
        }
        if opts.dry_run {
            return Ok(Deleted::Gone(t.present(obj)));
        }
        let gone = finish_delete(self, &mut st, &t.rt, &t.namespace, name, opts.orphan)
            .ok_or_else(|| ApiError::not_found(&t.rt, name))?;
        Ok(Deleted::Gone(t.present(gone)))
    }
}

/// Whether a patch body carries a `metadata.resourceVersion` precondition.
fn patch_sets_rv(kind: PatchType, body: &[u8]) -> bool {
    match kind {
        PatchType::Json => {
            std::str::from_utf8(body).is_ok_and(|b| b.contains("/metadata/resourceVersion"))
        }
        PatchType::Apply => patch::parse_apply(body).ok().is_some_and(|v| {
            v.pointer("/metadata/resourceVersion")
                .is_some_and(|r| r.as_str().is_some_and(|s| !s.is_empty()))
        }),
        PatchType::Merge | PatchType::Strategic => {
            serde_json::from_slice::<Value>(body).ok().is_some_and(|v| {
                v.pointer("/metadata/resourceVersion")
                    .is_some_and(|r| r.as_str().is_some_and(|s| !s.is_empty()))
            })
        }
    }
}

/// Removes an object for good, and what hangs on it: a CRD's custom resources, a namespace's
/// contents, and dependents whose owners are all gone (background cascading deletion), or
/// only their owner references (`orphan`).
fn finish_delete(
    store: &Store,
    st: &mut State,
    rt: &Arc<ResourceType>,
    ns: &str,
    name: &str,
    orphan: bool,
) -> Option<Value> {
    let gone = st.remove(store.sender(), rt, ns, name)?;
    match rt.builtin {
        Some(Builtin::CustomResourceDefinition) => {
            let group = gone
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let plural = gone
                .pointer("/spec/names/plural")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if let Some(crt) = st
                .types
                .iter()
                .find(|t| t.group == group && t.plural == plural && t.builtin.is_none())
                .cloned()
            {
                st.drop_all(store.sender(), &crt);
                st.types
                    .retain(|t| !(t.group == group && t.plural == plural && t.builtin.is_none()));
            }
        }
        Some(Builtin::Namespace) => {
            for (crt, n) in st.namespaced_contents(name) {
                finish_delete(store, st, &crt, name, &n, false);
            }
        }
        _ => {}
    }
    let uid = gone
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    for (drt, dns, dname) in st.dependents_of(&uid) {
        let Some(dep) = st.get(&drt, &dns, &dname).cloned() else {
            continue;
        };
        let refs: Vec<Value> = dep
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let remaining: Vec<Value> = refs
            .iter()
            .filter(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()))
            .cloned()
            .collect();
        let alive = remaining.iter().any(|r| {
            r.get("uid")
                .and_then(Value::as_str)
                .is_some_and(|u| st.uid_exists(u))
        });
        if orphan || alive {
            let mut d = dep.clone();
            d["metadata"]["ownerReferences"] = Value::Array(remaining);
            st.put(store.sender(), &drt, Some(&dep), d);
        } else if dep
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
        {
            let mut d = dep.clone();
            if d.pointer("/metadata/deletionTimestamp").is_none() {
                d["metadata"]["deletionTimestamp"] = json!(super::now());
                d["metadata"]["deletionGracePeriodSeconds"] = json!(0);
                st.put(store.sender(), &drt, Some(&dep), d);
            }
        } else {
            finish_delete(store, st, &drt, &dns, &dname, false);
        }
    }
    Some(gone)
}

/// Serves (or re-serves) the resource type a stored CRD defines.
fn register_crd(st: &mut State, crd: &Value) {
    let Ok(rt) = registry::from_crd(crd) else {
        return;
    };
    let rt = Arc::new(rt);
    if let Some(slot) = st
        .types
        .iter_mut()
        .find(|t| t.group == rt.group && t.plural == rt.plural && t.builtin.is_none())
    {
        *slot = rt;
    } else {
        st.types.push(rt);
    }
}

/// Applies CRD documents at start-up (the binary's `--crd` files).
pub(crate) fn bootstrap_crd(store: &Store, crd: Value) -> Result<(), ApiError> {
    let rt = store.lock().builtin(Builtin::CustomResourceDefinition);
    let t = Target {
        rt,
        version: "v1".into(),
        namespace: String::new(),
    };
    let opts = WriteOptions {
        dry_run: false,
        manager: "fake-apiserver".into(),
        manager_given: true,
        validation: FieldValidation::Strict,
        force: false,
    };
    store.create(&t, crd, &opts).map(|_| ())
}

/// How often a patch without `metadata.resourceVersion` is tried again after another write
/// landed between its read and its write.
const PATCH_RETRIES: usize = 1000;
