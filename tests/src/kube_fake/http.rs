//! The HTTP front: URL routing to resources, query parameters, content types and the
//! response codes of kube-apiserver.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::Shared;
use super::discovery;
use super::ops::{DeleteOptions, Deleted, FieldValidation, Target, WriteOptions, Written};
use super::patch::{self, PatchType};
use super::selectors::{FieldSelector, LabelSelector};
use super::status::{ApiError, success_status};
use super::store::{State, name_of};
use super::table::{self, Include};
use super::watch;

/// The query parameters of a request.
#[derive(Debug, Default)]
pub(crate) struct Query(HashMap<String, String>);

impl Query {
    fn parse(q: Option<&str>) -> Self {
        Self(
            url::form_urlencoded::parse(q.unwrap_or_default().as_bytes())
                .into_owned()
                .collect(),
        )
    }

    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    pub(crate) fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("true" | "1"))
    }
}

fn json_response(code: StatusCode, v: &Value, warnings: &[String]) -> Response {
    let mut b = Response::builder()
        .status(code)
        .header("content-type", "application/json");
    for w in warnings {
        b = b.header("warning", format!("299 - {}", super::status::go_quote(w)));
    }
    b.body(Body::from(v.to_string()))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Routes one request.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().trim_end_matches('/').to_owned();
    let query = Query::parse(uri.query());
    shared.log_request(&method, &uri);
    let accept = headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let result = match segs.as_slice() {
        ["version"] => Ok(json_response(StatusCode::OK, &discovery::version(), &[])),
        ["healthz" | "readyz" | "livez", ..] => Ok((StatusCode::OK, "ok").into_response()),
        ["api"] => Ok(discovery_root(&shared, true, &accept)),
        ["apis"] => Ok(discovery_root(&shared, false, &accept)),
        ["api", "v1"] => found(discovery::resource_list(
            &shared.store.lock().types,
            "",
            "v1",
        )),
        ["apis", group] => found(discovery::group(&shared.store.lock().types, group)),
        ["apis", group, version] => found(discovery::resource_list(
            &shared.store.lock().types,
            group,
            version,
        )),
        ["openapi", "v3"] => Ok(json_response(
            StatusCode::OK,
            &discovery::openapi_v3_index(&shared.store.lock().types),
            &[],
        )),
        ["openapi", "v3", "api", "v1"] => found(discovery::openapi_v3_doc(
            &shared.store.lock().types,
            "",
            "v1",
        )),
        ["openapi", "v3", "apis", group, version] => found(discovery::openapi_v3_doc(
            &shared.store.lock().types,
            group,
            version,
        )),
        ["api", "v1", rest @ ..] => {
            resource(
                &shared, &method, "", "v1", rest, &query, &headers, &accept, &body,
            )
            .await
        }
        ["apis", group, version, rest @ ..] => {
            resource(
                &shared, &method, group, version, rest, &query, &headers, &accept, &body,
            )
            .await
        }
        _ => Err(ApiError::path_not_found()),
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

fn found(v: Option<Value>) -> Result<Response, ApiError> {
    v.map(|v| json_response(StatusCode::OK, &v, &[]))
        .ok_or_else(ApiError::path_not_found)
}

fn discovery_root(shared: &Shared, core: bool, accept: &str) -> Response {
    let st = shared.store.lock();
    if shared.config.aggregated_discovery
        && let Some(media) = discovery::aggregated_wanted(accept)
    {
        let doc = discovery::aggregated(&st.types, core, media);
        return Response::builder()
            .header("content-type", media)
            .body(Body::from(doc.to_string()))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response());
    }
    let doc = if core {
        discovery::core_versions(&shared.server_address())
    } else {
        discovery::group_list(&st.types)
    };
    json_response(StatusCode::OK, &doc, &[])
}

/// A parsed resource path.
struct Route {
    target: Target,
    name: Option<String>,
    subresource: Option<String>,
}

fn route(st: &State, group: &str, version: &str, rest: &[&str]) -> Result<Route, ApiError> {
    if let ["namespaces", ns, plural, tail @ ..] = rest
        && let Some(rt) = st.lookup(group, version, plural).filter(|t| t.namespaced)
    {
        if tail.len() > 2 {
            return Err(ApiError::path_not_found());
        }
        return Ok(Route {
            target: Target {
                rt,
                version: version.to_owned(),
                namespace: (*ns).to_owned(),
            },
            name: tail.first().map(|s| (*s).to_owned()),
            subresource: tail.get(1).map(|s| (*s).to_owned()),
        });
    }
    let [plural, tail @ ..] = rest else {
        return Err(ApiError::path_not_found());
    };
    let rt = st
        .lookup(group, version, plural)
        .ok_or_else(ApiError::path_not_found)?;
    if tail.len() > 2 || (rt.namespaced && !tail.is_empty()) {
        return Err(ApiError::path_not_found());
    }
    Ok(Route {
        target: Target {
            rt,
            version: version.to_owned(),
            namespace: String::new(),
        },
        name: tail.first().map(|s| (*s).to_owned()),
        subresource: tail.get(1).map(|s| (*s).to_owned()),
    })
}

fn write_options(q: &Query, headers: &HeaderMap) -> Result<WriteOptions, ApiError> {
    let dry_run = match q.get("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "CreateOptions",
                "",
                &[super::status::FieldError::new(
                    super::status::FieldErrorKind::NotSupported,
                    "dryRun",
                    Some(json!([other])),
                    "supported values: \"All\"",
                )],
            ));
        }
    };
    let validation = match q.get("fieldValidation") {
        Some("Strict") => FieldValidation::Strict,
        Some("Ignore") => FieldValidation::Ignore,
        _ => FieldValidation::Warn,
    };
    let manager = q.get("fieldManager").map(str::to_owned).unwrap_or_else(|| {
        // kube-apiserver's default: the user agent up to the first '/'
        headers
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .map(|ua| ua.split('/').next().unwrap_or(ua).to_owned())
            .unwrap_or_else(|| "unknown".to_owned())
    });
    let manager_given = q.get("fieldManager").is_some();
    Ok(WriteOptions {
        dry_run,
        manager,
        manager_given,
        validation,
        force: q.flag("force"),
    })
}

fn parse_body(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if ct.starts_with(super::protobuf::MEDIA_TYPE) {
        return super::protobuf::decode(body);
    }
    // kubectl and client-go send JSON; YAML is accepted as kube-apiserver does
    serde_json::from_slice(body)
        .or_else(|_| {
            std::str::from_utf8(body)
                .ok()
                .and_then(|s| serde_norway::from_str(s).ok())
                .ok_or(())
        })
        .map_err(|()| {
            ApiError::bad_request("the body of the request could not be decoded as JSON or YAML")
        })
}

fn written(w: Written) -> Response {
    let code = if w.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    json_response(code, &w.object, &w.warnings)
}

#[allow(clippy::too_many_arguments)]
async fn resource(
    shared: &Arc<Shared>,
    method: &Method,
    group: &str,
    version: &str,
    rest: &[&str],
    q: &Query,
    headers: &HeaderMap,
    accept: &str,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let r = route(&shared.store.lock(), group, version, rest)?;
    let t = &r.target;
    let status = match r.subresource.as_deref() {
        None => false,
        Some("status") if t.rt.has_status(version) => true,
        Some(_) => return Err(ApiError::path_not_found()),
    };
    match (method.clone(), r.name.as_deref()) {
        (Method::GET, None) if q.flag("watch") => {
            watch::serve(shared.clone(), t.clone(), q, accept)
        }
        (Method::GET, None) => list(shared, t, q, accept),
        (Method::GET, Some(name)) => {
            let obj = shared.store.lock().get(&t.rt, &t.namespace, name).cloned();
            let obj =
                t.present(obj.ok_or_else(|| super::status::ApiError::not_found(&t.rt, name))?);
            if table::wants_table(accept) {
                let meta = json!({"resourceVersion": obj.pointer("/metadata/resourceVersion")});
                let tab = table::table(
                    &t.rt,
                    version,
                    &[obj],
                    Include::parse(q.get("includeObject")),
                    meta,
                );
                return Ok(json_response(StatusCode::OK, &tab, &[]));
            }
            Ok(json_response(StatusCode::OK, &obj, &[]))
        }
        (Method::POST, None) => {
            let opts = write_options(q, headers)?;
            Ok(written(shared.store.create(
                t,
                parse_body(headers, body)?,
                &opts,
            )?))
        }
        (Method::PUT, Some(name)) => {
            let opts = write_options(q, headers)?;
            Ok(written(shared.store.update(
                t,
                name,
                parse_body(headers, body)?,
                status,
                true,
                &opts,
                false,
            )?))
        }
        (Method::PATCH, Some(name)) => {
            let ct = headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            let accepted = if t.rt.builtin.is_some() {
                patch::BUILTIN_PATCH_TYPES
            } else {
                patch::CUSTOM_RESOURCE_PATCH_TYPES
            };
            let kind = PatchType::from_content_type(ct)
                .ok_or_else(|| ApiError::unsupported_media_type(ct, accepted))?;
            let opts = write_options(q, headers)?;
            Ok(written(
                shared.store.patch(t, name, kind, body, status, &opts)?,
            ))
        }
        (Method::DELETE, Some(name)) => {
            let opts = delete_options(q, headers, body)?;
            match shared.store.delete(t, name, &opts)? {
                Deleted::Gone(obj) => {
                    let uid = obj
                        .pointer("/metadata/uid")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    Ok(json_response(
                        StatusCode::OK,
                        &success_status(&t.rt, name, &uid),
                        &[],
                    ))
                }
                Deleted::Pending(obj) => Ok(json_response(StatusCode::ACCEPTED, &obj, &[])),
            }
        }
        (Method::DELETE, None) => delete_collection(shared, t, q, headers, body),
        (m, _) => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({m})"
        ))),
    }
}

fn delete_options(q: &Query, headers: &HeaderMap, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    // a protobuf DeleteOptions body is not decoded; its query parameters still count
    let b: Value = if body.is_empty() || ct.starts_with(super::protobuf::MEDIA_TYPE) {
        json!({})
    } else {
        parse_body(headers, body)?
    };
    let dry_run = q.get("dryRun") == Some("All")
        || b.get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| v == "All"));
    let policy = q.get("propagationPolicy").map(str::to_owned).or_else(|| {
        b.get("propagationPolicy")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let orphan = policy.as_deref() == Some("Orphan")
        || b.get("orphanDependents").and_then(Value::as_bool) == Some(true);
    Ok(DeleteOptions {
        dry_run,
        uid: b
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_owned),
        resource_version: b
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_owned),
        orphan,
    })
}

/// The selectors of a list or watch.
pub(crate) struct Filter {
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
}

impl Filter {
    pub(crate) fn parse(t: &Target, q: &Query) -> Result<Self, ApiError> {
        let labels = LabelSelector::parse(q.get("labelSelector").unwrap_or_default())?;
        let allowed = t.rt.extra_field_labels(&t.version);
        let fields = FieldSelector::parse(q.get("fieldSelector").unwrap_or_default(), &allowed)?;
        Ok(Self { labels, fields })
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }
}

/// The continue token: the list's resourceVersion and the last key returned.
fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    use base64::Engine as _;
    let raw =
        json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{ns}/{name}\u{0}")}).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn decode_continue(token: &str) -> Result<(u64, String, String), ApiError> {
    use base64::Engine as _;
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(bad)?
        .trim_end_matches('\u{0}')
        .to_owned();
    let (ns, name) = start.split_once('/').ok_or_else(bad)?;
    Ok((rv, ns.to_owned(), name.to_owned()))
}

fn list(shared: &Shared, t: &Target, q: &Query, accept: &str) -> Result<Response, ApiError> {
    let filter = Filter::parse(t, q)?;
    let limit: usize = q
        .get("limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    let st = shared.store.lock();
    if let Some(rv) = q
        .get("resourceVersion")
        .filter(|r| !r.is_empty() && *r != "0")
    {
        let n: u64 = rv.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "resourceVersion: Invalid value: {rv:?}: must be a number"
            ))
        })?;
        if n > st.rv {
            let mut e = ApiError::new(
                504,
                "Timeout",
                format!("Too large resource version: {n}, current: {}", st.rv),
            );
            e.details = Some(
                json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}),
            );
            return Err(e);
        }
        if q.get("resourceVersionMatch") == Some("Exact") && n != st.rv {
            return Err(ApiError::expired(format!(
                "The resourceVersion for the provided list is too old: an exact list at {n} is not kept (current {})",
                st.rv
            )));
        }
    }
    let (list_rv, after) = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => {
            let (rv, ns, name) = decode_continue(c)?;
            if rv < st.compacted {
                return Err(ApiError::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                ));
            }
            (rv, Some((ns, name)))
        }
        None => (st.rv, None),
    };
    let ns = (!t.namespace.is_empty()).then_some(t.namespace.as_str());
    let mut items = Vec::new();
    let mut more = None;
    for obj in st.list(&t.rt, ns) {
        let key = (
            super::store::namespace_of(obj).to_owned(),
            name_of(obj).to_owned(),
        );
        if let Some(after) = &after
            && key <= *after
        {
            continue;
        }
        let obj = t.present(obj.clone());
        if !filter.matches(&obj) {
            continue;
        }
        if items.len() == limit {
            more = Some(encode_continue(
                list_rv,
                &items_key(&items).0,
                &items_key(&items).1,
            ));
            break;
        }
        items.push(obj);
    }
    let remaining = more.as_ref().map(|_| {
        st.list(&t.rt, ns)
            .into_iter()
            .filter(|o| filter.matches(&t.present((*o).clone())))
            .filter(|o| {
                let k = (
                    super::store::namespace_of(o).to_owned(),
                    name_of(o).to_owned(),
                );
                k > items_key(&items)
            })
            .count()
    });
    drop(st);
    let mut meta = json!({"resourceVersion": list_rv.to_string()});
    if let Some(c) = &more {
        meta["continue"] = json!(c);
        if let Some(r) = remaining
            && q.get("labelSelector").is_none_or(str::is_empty)
            && q.get("fieldSelector").is_none_or(str::is_empty)
        {
            meta["remainingItemCount"] = json!(r);
        }
    }
    if table::wants_table(accept) {
        let tab = table::table(
            &t.rt,
            &t.version,
            &items,
            Include::parse(q.get("includeObject")),
            meta,
        );
        return Ok(json_response(StatusCode::OK, &tab, &[]));
    }
    if t.rt.builtin.is_some() {
        // typed lists carry no apiVersion/kind on their items
        for i in &mut items {
            if let Some(m) = i.as_object_mut() {
                m.remove("apiVersion");
                m.remove("kind");
            }
        }
    }
    let doc = json!({
        "apiVersion": t.rt.api_version(&t.version),
        "kind": t.rt.list_kind,
        "metadata": meta,
        "items": items,
    });
    Ok(json_response(StatusCode::OK, &doc, &[]))
}

fn items_key(items: &[Value]) -> (String, String) {
    items
        .last()
        .map(|o| {
            (
                super::store::namespace_of(o).to_owned(),
                name_of(o).to_owned(),
            )
        })
        .unwrap_or_default()
}

fn delete_collection(
    shared: &Shared,
    t: &Target,
    q: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let filter = Filter::parse(t, q)?;
    let opts = delete_options(q, headers, body)?;
    let names: Vec<(String, String)> = {
        let st = shared.store.lock();
        let ns = (!t.namespace.is_empty()).then_some(t.namespace.as_str());
        st.list(&t.rt, ns)
            .into_iter()
            .filter(|o| filter.matches(o))
            .map(|o| {
                (
                    super::store::namespace_of(o).to_owned(),
                    name_of(o).to_owned(),
                )
            })
            .collect()
    };
    let mut items = Vec::new();
    for (ns, name) in names {
        let target = Target {
            namespace: ns,
            ..t.clone()
        };
        match shared.store.delete(&target, &name, &opts) {
            Ok(Deleted::Gone(o) | Deleted::Pending(o)) => items.push(o),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let rv = shared.store.lock().rv;
    let doc = json!({
        "apiVersion": t.rt.api_version(&t.version),
        "kind": t.rt.list_kind,
        "metadata": {"resourceVersion": rv.to_string()},
        "items": items,
    });
    Ok(json_response(StatusCode::OK, &doc, &[]))
}
