//! Discovery: `/api`, `/apis`, `/api/v1`, `/apis/<group>[/<version>]`, the aggregated
//! discovery documents kubectl 1.32 asks for first, `/version`, and a minimal OpenAPI.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::registry::ResourceType;

/// The media type of aggregated discovery (`apidiscovery.k8s.io/v2`).
pub(crate) const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// The beta media type, still accepted by older clients.
pub(crate) const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Which aggregated discovery version an `Accept` header asks for, if any.
pub(crate) fn aggregated_wanted(accept: &str) -> Option<&'static str> {
    for part in accept.split(',') {
        let p: String = part.chars().filter(|c| !c.is_whitespace()).collect();
        if p.contains("as=APIGroupDiscoveryList") && p.contains("g=apidiscovery.k8s.io") {
            if p.contains("v=v2beta1") {
                return Some(AGGREGATED_V2BETA1);
            }
            if p.contains("v=v2") {
                return Some(AGGREGATED_V2);
            }
        }
    }
    None
}

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The group names and their versions, the core group left out, in registration order.
fn groups(types: &[Arc<ResourceType>]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for t in types.iter().filter(|t| !t.group.is_empty()) {
        let entry = match out.iter_mut().position(|(g, _)| *g == t.group) {
            Some(i) => &mut out[i],
            None => {
                out.push((t.group.clone(), Vec::new()));
                let last = out.len() - 1;
                &mut out[last]
            }
        };
        for v in &t.versions {
            if !entry.1.contains(&v.name) {
                entry.1.push(v.name.clone());
            }
        }
    }
    for (_, versions) in &mut out {
        versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
    }
    out
}

/// Kubernetes version ordering: GA > beta > alpha, higher numbers first.
fn version_priority(v: &str) -> (u8, u32, u32) {
    let rest = v.strip_prefix('v').unwrap_or(v);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    if tail.is_empty() {
        return (3, major, 0);
    }
    let (level, n) = if let Some(b) = tail.strip_prefix("beta") {
        (2, b)
    } else if let Some(a) = tail.strip_prefix("alpha") {
        (1, a)
    } else {
        (0, "0")
    };
    (level, major, n.parse().unwrap_or(0))
}

/// `GET /api`.
pub(crate) fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({
        "name": name,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

/// `GET /apis`.
pub(crate) fn group_list(types: &[Arc<ResourceType>]) -> Value {
    let groups: Vec<Value> = groups(types)
        .iter()
        .map(|(g, vs)| group_entry(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/<group>`.
pub(crate) fn group(types: &[Arc<ResourceType>], name: &str) -> Option<Value> {
    groups(types)
        .iter()
        .find(|(g, _)| g == name)
        .map(|(g, vs)| {
            let mut e = group_entry(g, vs);
            e["kind"] = json!("APIGroup");
            e["apiVersion"] = json!("v1");
            e
        })
}

fn storage_hash(t: &ResourceType) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (
        t.group.as_str(),
        t.plural.as_str(),
        t.versions.first().map(|v| v.name.as_str()),
    )
        .hash(&mut h);
    let bytes = h.finish().to_be_bytes();
    base64_std(&bytes)
}

fn base64_std(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The types a group-version serves; `None` when it serves none.
fn served_in<'a>(
    types: &'a [Arc<ResourceType>],
    group: &str,
    version: &str,
) -> Option<Vec<&'a Arc<ResourceType>>> {
    let of: Vec<&Arc<ResourceType>> = types
        .iter()
        .filter(|t| t.group == group && t.version(version).is_some())
        .collect();
    (!of.is_empty()).then_some(of)
}

/// `GET /api/v1` or `/apis/<group>/<version>`.
pub(crate) fn resource_list(
    types: &[Arc<ResourceType>],
    group: &str,
    version: &str,
) -> Option<Value> {
    let of = served_in(types, group, version)?;
    let mut resources = Vec::new();
    for t in of {
        let mut r = json!({
            "name": t.plural,
            "singularName": t.singular,
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": VERBS,
            "storageVersionHash": storage_hash(t),
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        resources.push(r);
        if t.has_status(version) {
            resources.push(json!({
                "name": format!("{}/status", t.plural),
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

fn discovery_resource(t: &ResourceType, version: &str) -> Value {
    let kind = json!({"group": t.group, "version": version, "kind": t.kind});
    let mut r = json!({
        "resource": t.plural,
        "responseKind": kind,
        "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": t.singular,
        "verbs": VERBS,
    });
    if !t.short_names.is_empty() {
        r["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        r["categories"] = json!(t.categories);
    }
    if t.has_status(version) {
        r["subresources"] = json!([{"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}]);
    }
    r
}

/// Aggregated discovery: `/api` (core only) or `/apis` (every other group).
pub(crate) fn aggregated(types: &[Arc<ResourceType>], core: bool, media: &str) -> Value {
    let api_version = if media == AGGREGATED_V2BETA1 {
        "apidiscovery.k8s.io/v2beta1"
    } else {
        "apidiscovery.k8s.io/v2"
    };
    let mut items = Vec::new();
    let names: Vec<(String, Vec<String>)> = if core {
        vec![(String::new(), vec!["v1".to_owned()])]
    } else {
        groups(types)
    };
    for (g, versions) in names {
        let mut vs = Vec::new();
        for v in versions {
            let resources: Vec<Value> = types
                .iter()
                .filter(|t| t.group == g && t.version(&v).is_some())
                .map(|t| discovery_resource(t, &v))
                .collect();
            vs.push(json!({"version": v, "resources": resources, "freshness": "Current"}));
        }
        let mut meta = json!({"creationTimestamp": null});
        if !g.is_empty() {
            meta["name"] = json!(g);
        }
        items.push(json!({"metadata": meta, "versions": vs}));
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items})
}

/// `GET /version`.
pub(crate) fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "emulationMajor": "1",
        "emulationMinor": "32",
        "gitVersion": "v1.32.0-muster-fake",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `GET /openapi/v3`: the index of group-version documents.
pub(crate) fn openapi_v3_index(types: &[Arc<ResourceType>]) -> Value {
    let mut paths = BTreeMap::new();
    paths.insert(
        "api/v1".to_owned(),
        json!({"serverRelativeURL": "/openapi/v3/api/v1"}),
    );
    for (g, versions) in groups(types) {
        for v in versions {
            let p = format!("apis/{g}/{v}");
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}")}),
            );
        }
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/<api|apis/group>/<version>`: the schemas of the group-version, with the
/// `x-kubernetes-group-version-kind` extension clients look types up by, and the item paths
/// whose PATCH operation lists the `fieldValidation` parameter, so kubectl validates on the
/// server (`fieldValidation=Strict`) instead of downloading OpenAPI v2.
pub(crate) fn openapi_v3_doc(
    types: &[Arc<ResourceType>],
    group: &str,
    version: &str,
) -> Option<Value> {
    let of = served_in(types, group, version)?;
    let mut schemas = serde_json::Map::new();
    let mut paths = serde_json::Map::new();
    for t in of {
        let rev_group: Vec<&str> = if t.group.is_empty() {
            vec!["io", "k8s", "api", "core"]
        } else {
            t.group.split('.').rev().collect()
        };
        let name = format!("{}.{version}.{}", rev_group.join("."), t.kind);
        let mut schema = t
            .version(version)
            .and_then(|v| v.schema.as_deref().cloned())
            .unwrap_or_else(
                || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            );
        let gvk = json!({"group": t.group, "version": version, "kind": t.kind});
        schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        schemas.insert(name.clone(), schema);
        let prefix = if t.group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{}/{version}", t.group)
        };
        let item = if t.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
        } else {
            format!("{prefix}/{}/{{name}}", t.plural)
        };
        let query = |n: &str| json!({"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
        let body_ref = json!({"schema": {"$ref": format!("#/components/schemas/{name}")}});
        let mut content = serde_json::Map::new();
        for media in [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ] {
            content.insert(media.to_owned(), json!({"schema": {"type": "object"}}));
        }
        paths.insert(
            item,
            json!({
                "get": {"x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk,
                        "responses": {"200": {"content": {"application/json": body_ref}}}},
                "put": {"x-kubernetes-action": "put", "x-kubernetes-group-version-kind": gvk,
                        "parameters": [query("dryRun"), query("fieldManager"), query("fieldValidation")],
                        "requestBody": {"content": {"application/json": body_ref}},
                        "responses": {"200": {"content": {"application/json": body_ref}}}},
                "patch": {"x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": gvk,
                          "parameters": [query("dryRun"), query("fieldManager"), query("fieldValidation"), query("force")],
                          "requestBody": {"content": content},
                          "responses": {"200": {"content": {"application/json": body_ref}}}},
                "delete": {"x-kubernetes-action": "delete", "x-kubernetes-group-version-kind": gvk,
                           "responses": {"200": {"content": {"application/json": {"schema": {"type": "object"}}}}}},
            }),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}
