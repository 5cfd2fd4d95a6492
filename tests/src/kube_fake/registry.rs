//! The resource types the server serves: the built-ins and those registered by CRDs.

use std::sync::Arc;

use serde_json::{Value, json};

use super::cel_rules::CompiledRules;
use super::status::{ApiError, FieldError};

/// The built-in resources, whose behaviour differs from a custom resource's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    Namespace,
    Secret,
    ConfigMap,
    Event,
    EventsV1Event,
    Lease,
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
    CustomResourceDefinition,
}

/// An `additionalPrinterColumns` entry.
#[derive(Debug, Clone)]
pub(crate) struct PrinterColumn {
    pub(crate) name: String,
    pub(crate) type_: String,
    pub(crate) format: String,
    pub(crate) description: String,
    pub(crate) priority: i64,
    pub(crate) json_path: String,
}

/// One served version of a resource.
#[derive(Debug, Clone)]
pub(crate) struct Version {
    pub(crate) name: String,
    /// The `openAPIV3Schema` of a CRD version.
    pub(crate) schema: Option<Arc<Value>>,
    /// The compiled `x-kubernetes-validations` rules of the schema.
    pub(crate) rules: Option<Arc<CompiledRules>>,
    pub(crate) status_subresource: bool,
    pub(crate) printer_columns: Vec<PrinterColumn>,
    pub(crate) selectable_fields: Vec<String>,
}

/// A resource type (`mcpservers.muster.giantswarm.io`).
#[derive(Debug, Clone)]
pub(crate) struct ResourceType {
    pub(crate) group: String,
    /// Served versions, the preferred (storage) one first.
    pub(crate) versions: Vec<Version>,
    pub(crate) kind: String,
    pub(crate) list_kind: String,
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) namespaced: bool,
    pub(crate) builtin: Option<Builtin>,
}

impl ResourceType {
    /// `mcpservers.muster.giantswarm.io`, or `secrets` for the core group.
    pub(crate) fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Where its objects are stored: events.k8s.io Events share core Events' storage.
    pub(crate) fn storage_key(&self) -> (String, String) {
        match self.builtin {
            Some(Builtin::EventsV1Event) => (String::new(), "events".to_owned()),
            _ => (self.group.clone(), self.plural.clone()),
        }
    }

    /// `group/version`, or `v1` for the core group.
    pub(crate) fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_owned()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    pub(crate) fn version(&self, name: &str) -> Option<&Version> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// Whether writes bump `metadata.generation` (custom resources, CRDs, admission policies).
    pub(crate) fn has_generation(&self) -> bool {
        matches!(
            self.builtin,
            None | Some(
                Builtin::CustomResourceDefinition
                    | Builtin::ValidatingAdmissionPolicy
                    | Builtin::ValidatingAdmissionPolicyBinding
            )
        )
    }

    /// Whether a PUT without `metadata.resourceVersion` is accepted.
    pub(crate) fn allows_unconditional_update(&self) -> bool {
        self.builtin.is_some()
    }

    /// Whether the `status` subresource exists (`version` for custom resources).
    pub(crate) fn has_status(&self, version: &str) -> bool {
        match self.builtin {
            None => self.version(version).is_some_and(|v| v.status_subresource),
            Some(b) => matches!(
                b,
                Builtin::Namespace
                    | Builtin::CustomResourceDefinition
                    | Builtin::ValidatingAdmissionPolicy
            ),
        }
    }

    /// The field labels a field selector may use beyond `metadata.name`/`metadata.namespace`.
    pub(crate) fn extra_field_labels(&self, version: &str) -> Vec<String> {
        let fixed: &[&str] = match self.builtin {
            Some(Builtin::Secret) => &["type"],
            Some(Builtin::Namespace) => &["status.phase"],
            Some(Builtin::Event) => &[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ],
            Some(Builtin::EventsV1Event) => &[
                "regarding.kind",
                "regarding.namespace",
                "regarding.name",
                "regarding.uid",
                "reason",
                "reportingController",
                "type",
            ],
            _ => &[],
        };
        let mut out: Vec<String> = fixed.iter().map(|s| (*s).to_owned()).collect();
        if let Some(v) = self.version(version) {
            out.extend(
                v.selectable_fields
                    .iter()
                    .map(|p| p.trim_start_matches('.').to_owned()),
            );
        }
        out
    }
}

fn builtin(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    short: &[&str],
    namespaced: bool,
    b: Builtin,
) -> Arc<ResourceType> {
    Arc::new(ResourceType {
        group: group.to_owned(),
        versions: vec![Version {
            name: version.to_owned(),
            schema: None,
            rules: None,
            status_subresource: false,
            printer_columns: Vec::new(),
            selectable_fields: Vec::new(),
        }],
        kind: kind.to_owned(),
        list_kind: format!("{kind}List"),
        plural: plural.to_owned(),
        singular: kind.to_lowercase(),
        short_names: short.iter().map(|s| (*s).to_owned()).collect(),
        categories: Vec::new(),
        namespaced,
        builtin: Some(b),
    })
}

/// The resource types of a server that has no CRDs yet.
pub(crate) fn builtins() -> Vec<Arc<ResourceType>> {
    vec![
        builtin(
            "",
            "v1",
            "Namespace",
            "namespaces",
            &["ns"],
            false,
            Builtin::Namespace,
        ),
        builtin("", "v1", "Secret", "secrets", &[], true, Builtin::Secret),
        builtin(
            "",
            "v1",
            "ConfigMap",
            "configmaps",
            &["cm"],
            true,
            Builtin::ConfigMap,
        ),
        builtin("", "v1", "Event", "events", &["ev"], true, Builtin::Event),
        builtin(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            &["ev"],
            true,
            Builtin::EventsV1Event,
        ),
        builtin(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            &[],
            true,
            Builtin::Lease,
        ),
        builtin(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            &[],
            false,
            Builtin::ValidatingAdmissionPolicy,
        ),
        builtin(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            &[],
            false,
            Builtin::ValidatingAdmissionPolicyBinding,
        ),
        builtin(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            &["crd", "crds"],
            false,
            Builtin::CustomResourceDefinition,
        ),
    ]
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
}

/// Checks a CRD the way the apiextensions validation does (the subset that matters here) and
/// turns it into a resource type.
pub(crate) fn from_crd(crd: &Value) -> Result<ResourceType, ApiError> {
    let name = str_at(crd, &["metadata", "name"]).unwrap_or_default();
    let invalid = |errs: Vec<FieldError>| {
        ApiError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            name,
            &errs,
        )
    };
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let mut errs = Vec::new();
    let group = str_at(&spec, &["group"]).unwrap_or_default().to_owned();
    let plural = str_at(&spec, &["names", "plural"])
        .unwrap_or_default()
        .to_owned();
    let kind = str_at(&spec, &["names", "kind"])
        .unwrap_or_default()
        .to_owned();
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    }
    if plural.is_empty() {
        errs.push(FieldError::required("spec.names.plural", ""));
    }
    if kind.is_empty() {
        errs.push(FieldError::required("spec.names.kind", ""));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let scope = str_at(&spec, &["scope"]).unwrap_or_default();
    if scope != "Namespaced" && scope != "Cluster" {
        errs.push(FieldError::new(
            super::status::FieldErrorKind::NotSupported,
            "spec.scope",
            Some(json!(scope)),
            "supported values: \"Cluster\", \"Namespaced\"",
        ));
    }
    let raw_versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if raw_versions.is_empty() {
        errs.push(FieldError::invalid(
            "spec.versions",
            json!([]),
            "must have exactly one version marked as storage version",
        ));
    }
    let storage_count = raw_versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if !raw_versions.is_empty() && storage_count != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            Value::Array(raw_versions.clone()),
            "must have exactly one version marked as storage version",
        ));
    }
    let mut versions = Vec::new();
    for (i, v) in raw_versions.iter().enumerate() {
        let vname = str_at(v, &["name"]).unwrap_or_default().to_owned();
        if vname.is_empty() {
            errs.push(FieldError::required(format!("spec.versions[{i}].name"), ""));
        }
        let schema = v.pointer("/schema/openAPIV3Schema").cloned();
        let rules = match &schema {
            Some(s) => match CompiledRules::compile(
                s,
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
            ) {
                Ok(r) => Some(Arc::new(r)),
                Err(mut e) => {
                    errs.append(&mut e);
                    None
                }
            },
            None => None,
        };
        let printer_columns = v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .map(|c| PrinterColumn {
                        name: str_at(c, &["name"]).unwrap_or_default().to_owned(),
                        type_: str_at(c, &["type"]).unwrap_or("string").to_owned(),
                        format: str_at(c, &["format"]).unwrap_or_default().to_owned(),
                        description: str_at(c, &["description"]).unwrap_or_default().to_owned(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: str_at(c, &["jsonPath"]).unwrap_or_default().to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let selectable_fields = v
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(|f| str_at(f, &["jsonPath"]).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let served = v.get("served").and_then(Value::as_bool).unwrap_or(false);
        let version = Version {
            name: vname,
            schema: schema.map(Arc::new),
            rules,
            status_subresource: v.pointer("/subresources/status").is_some(),
            printer_columns,
            selectable_fields,
        };
        if !served {
            continue;
        }
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            versions.insert(0, version);
        } else {
            versions.push(version);
        }
    }
    if !errs.is_empty() {
        return Err(invalid(errs));
    }
    let names = spec.get("names").cloned().unwrap_or(Value::Null);
    let list_of = |key: &str| -> Vec<String> {
        names
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(ResourceType {
        group,
        versions,
        list_kind: str_at(&names, &["listKind"])
            .map_or_else(|| format!("{kind}List"), str::to_owned),
        singular: str_at(&names, &["singular"]).map_or_else(|| kind.to_lowercase(), str::to_owned),
        kind,
        plural,
        short_names: list_of("shortNames"),
        categories: list_of("categories"),
        namespaced: scope == "Namespaced",
        builtin: None,
    })
}
