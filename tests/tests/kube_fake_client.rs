//! The fake Kubernetes API server driven by a real `kube::Client`: dynamic and typed
//! resources, optimistic concurrency, the status subresource, patches, server-side apply,
//! CRD validation, selectors, paging, finalizers, and kube-runtime watchers and reflectors
//! (including the relist after 410 Gone).

use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt as _, reflector, watcher};
use kube::{Client, Config, Error};
use muster_tests::kube_fake::{FakeApiServer, FakeConfig, yaml_documents};
use serde_json::{Value, json};

const CRD: &str = include_str!("../fixtures/kube/widgets-crd.yaml");

async fn client(server: &FakeApiServer) -> Client {
    let config = Config::new(server.url().parse().expect("server URL"));
    Client::try_from(config).expect("kube client")
}

fn mcps_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("muster.giantswarm.io", "v1alpha1", "MCPServer"),
        "mcpservers",
    )
}

/// A server with the test CRD created through the API, as `kubectl apply` would.
async fn with_crd(config: FakeConfig) -> (FakeApiServer, Client, Api<DynamicObject>) {
    let server = FakeApiServer::start(config).expect("server starts");
    let client = client(&server).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition =
        serde_json::from_value(yaml_documents(CRD).expect("CRD parses").remove(0))
            .expect("CRD decodes");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("CRD created");
    let established = kube::runtime::wait::await_condition(
        crds.clone(),
        "mcpservers.muster.giantswarm.io",
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(10), established)
        .await
        .expect("in time")
        .expect("established");
    let api = Api::namespaced_with(client.clone(), "default", &mcps_resource());
    (server, client, api)
}

fn mcp(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "muster.giantswarm.io/v1alpha1",
        "kind": "MCPServer",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .expect("object")
}

fn api_error(e: Error) -> kube::core::Status {
    match e {
        Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn dynamic_crud_with_conflicts_generation_and_status() {
    let (_server, _client, api) = with_crd(FakeConfig::default()).await;
    let spec = json!({"type": "streamable-http", "url": "https://example.com/mcp"});
    let created = api
        .create(&PostParams::default(), &mcp("a", spec.clone()))
        .await
        .expect("created");
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.data["spec"]["timeout"],
        json!(30),
        "schema default applied"
    );
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());

    let dup = api_error(
        api.create(&PostParams::default(), &mcp("a", spec.clone()))
            .await
            .expect_err("exists"),
    );
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(
        dup.message,
        r#"mcpservers.muster.giantswarm.io "a" already exists"#
    );

    let missing = api_error(api.get("nope").await.expect_err("missing"));
    assert_eq!((missing.code, missing.reason.as_str()), (404, "NotFound"));
    assert_eq!(
        missing.message,
        r#"mcpservers.muster.giantswarm.io "nope" not found"#
    );

    // replace with the current resourceVersion: generation moves on a spec change
    let mut next = created.clone();
    next.data["spec"]["timeout"] = json!(60);
    let replaced = api
        .replace("a", &PostParams::default(), &next)
        .await
        .expect("replaced");
    assert_eq!(replaced.metadata.generation, Some(2));
    assert_ne!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );

    // replace with the stale resourceVersion: 409 Conflict
    let stale = api_error(
        api.replace("a", &PostParams::default(), &next)
            .await
            .expect_err("stale"),
    );
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        stale.message,
        r#"Operation cannot be fulfilled on mcpservers.muster.giantswarm.io "a": the object has been modified; please apply your changes to the latest version and try again"#
    );

    // status through the main resource is ignored; through /status it is written, and the
    // generation stays
    let mut with_status = replaced.clone();
    with_status.data["status"] = json!({"state": "Running"});
    let ignored = api
        .replace("a", &PostParams::default(), &with_status)
        .await
        .expect("replaced");
    assert!(
        ignored.data.get("status").is_none(),
        "status ignored on the main resource"
    );
    assert_eq!(
        ignored.metadata.resource_version, replaced.metadata.resource_version,
        "a no-op write changes nothing"
    );
    let status = api
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"state": "Running", "observedGeneration": 2}})),
        )
        .await
        .expect("status patched");
    assert_eq!(status.data["status"]["state"], json!("Running"));
    assert_eq!(
        status.metadata.generation,
        Some(2),
        "status writes leave the generation"
    );
    let spec_via_status = api
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"timeout": 5}})),
        )
        .await
        .expect("status patch");
    assert_eq!(
        spec_via_status.data["spec"]["timeout"],
        json!(60),
        "spec ignored through /status"
    );

    // merge patch of the spec
    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"args": ["x"]}})),
        )
        .await
        .expect("patched");
    assert_eq!(patched.data["spec"]["args"], json!(["x"]));
    assert_eq!(patched.metadata.generation, Some(3));
    assert_eq!(
        patched.data["status"]["state"],
        json!("Running"),
        "status kept by a spec write"
    );

    // JSON patch
    let jp: json_patch_wire::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": "/spec/timeout", "value": 90},
        {"op": "add", "path": "/metadata/labels", "value": {"team": "a"}}
    ]))
    .expect("json patch");
    let patched = api
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(jp))
        .await
        .expect("json patched");
    assert_eq!(patched.data["spec"]["timeout"], json!(90));

    // dry run: answered, not stored
    let dry = api
        .patch(
            "a",
            &PatchParams {
                dry_run: true,
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"spec": {"timeout": 7}})),
        )
        .await
        .expect("dry run");
    assert_eq!(dry.data["spec"]["timeout"], json!(7));
    assert_eq!(
        api.get("a").await.expect("get").data["spec"]["timeout"],
        json!(90)
    );

    // delete: Status answer, then 404
    let deleted = api
        .delete("a", &DeleteParams::default())
        .await
        .expect("deleted");
    assert!(deleted.is_right(), "deleted at once: a Status");
    assert_eq!(api_error(api.get("a").await.expect_err("gone")).code, 404);
}

mod json_patch_wire {
    pub(crate) use json_patch::Patch;
}

#[tokio::test]
async fn crd_validation_answers_422_naming_the_field_and_rule() {
    let (_server, _client, api) = with_crd(FakeConfig::default()).await;
    let bad = mcp(
        "bad",
        json!({"type": "streamable-http", "url": "https://example.com", "headers": {"Authorization": "Bearer x"}}),
    );
    let e = api_error(
        api.create(&PostParams::default(), &bad)
            .await
            .expect_err("refused"),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        r#"MCPServer.muster.giantswarm.io "bad" is invalid: spec.headers: Forbidden: credential headers must come from a Secret (headersFrom)"#
    );

    let e = api_error(
        api.create(
            &PostParams::default(),
            &mcp(
                "u",
                json!({"type": "sse", "url": "https://user:pw@example.com/"}),
            ),
        )
        .await
        .expect_err("refused"),
    );
    assert_eq!(
        e.message,
        r#"MCPServer.muster.giantswarm.io "u" is invalid: spec.url: Invalid value: "string": url must not carry user:password"#
    );

    let e = api_error(
        api.create(&PostParams::default(), &mcp("r", json!({"type": "sse"})))
            .await
            .expect_err("refused"),
    );
    assert_eq!(
        e.message,
        r#"MCPServer.muster.giantswarm.io "r" is invalid: spec.url: Invalid value: "object": url is required for a remote server"#
    );

    let e = api_error(
        api.create(
            &PostParams::default(),
            &mcp("t", json!({"type": "ftp", "timeout": 0})),
        )
        .await
        .expect_err("refused"),
    );
    assert_eq!(
        e.message,
        concat!(
            r#"MCPServer.muster.giantswarm.io "t" is invalid: [spec.type: Unsupported value: "ftp": supported values: "stdio", "streamable-http", "sse", "#,
            r#"spec.timeout: Invalid value: 0: spec.timeout in body should be greater than or equal to 1, "#,
            r#"<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"#
        )
    );

    // transition rule: toolPrefix is immutable
    let ok = api
        .create(
            &PostParams::default(),
            &mcp(
                "p",
                json!({"type": "stdio", "command": "x", "toolPrefix": "a"}),
            ),
        )
        .await
        .expect("created");
    let e = api_error(
        api.patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"toolPrefix": "b"}})),
        )
        .await
        .expect_err("immutable"),
    );
    assert_eq!(
        e.message,
        r#"MCPServer.muster.giantswarm.io "p" is invalid: spec.toolPrefix: Invalid value: "string": toolPrefix is immutable"#
    );
    assert_eq!(ok.metadata.name.as_deref(), Some("p"));

    // unknown fields are pruned (kube-rs sends no fieldValidation: the server warns)
    let pruned = api
        .create(
            &PostParams::default(),
            &mcp("x", json!({"type": "stdio", "command": "x", "bogus": 1})),
        )
        .await
        .expect("created");
    assert!(pruned.data["spec"].get("bogus").is_none());
}

#[tokio::test]
async fn server_side_apply_creates_merges_and_reports_conflicts() {
    let (_server, _client, api) = with_crd(FakeConfig::default()).await;
    let config = json!({
        "apiVersion": "muster.giantswarm.io/v1alpha1",
        "kind": "MCPServer",
        "metadata": {"name": "s"},
        "spec": {"type": "streamable-http", "url": "https://a.example/", "env": [{"name": "A", "value": "1"}]},
    });
    let created = api
        .patch("s", &PatchParams::apply("alice"), &Patch::Apply(&config))
        .await
        .expect("created");
    assert_eq!(created.data["spec"]["url"], json!("https://a.example/"));
    let managers: Vec<_> = created
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| m.manager.clone())
        .collect();
    assert_eq!(managers, vec![Some("alice".to_owned())]);

    // bob changes alice's field: conflict, unless forced
    let bob = json!({
        "apiVersion": "muster.giantswarm.io/v1alpha1",
        "kind": "MCPServer",
        "metadata": {"name": "s"},
        "spec": {"url": "https://b.example/", "env": [{"name": "B", "value": "2"}]},
    });
    let e = api_error(
        api.patch("s", &PatchParams::apply("bob"), &Patch::Apply(&bob))
            .await
            .expect_err("conflict"),
    );
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        e.message,
        r#"Apply failed with 1 conflict: conflict with "alice" using muster.giantswarm.io/v1alpha1: .spec.url"#
    );
    let forced = api
        .patch("s", &PatchParams::apply("bob").force(), &Patch::Apply(&bob))
        .await
        .expect("forced");
    assert_eq!(forced.data["spec"]["url"], json!("https://b.example/"));
    // env is a map list keyed by name: both entries are kept
    assert_eq!(
        forced.data["spec"]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );

    // alice drops env from her config: her entry goes, bob's stays
    let alice2 = json!({
        "apiVersion": "muster.giantswarm.io/v1alpha1",
        "kind": "MCPServer",
        "metadata": {"name": "s"},
        "spec": {"type": "streamable-http"},
    });
    let after = api
        .patch("s", &PatchParams::apply("alice"), &Patch::Apply(&alice2))
        .await
        .expect("applied");
    assert_eq!(
        after.data["spec"]["env"],
        json!([{"name": "B", "value": "2"}])
    );

    // status apply through /status
    let st = json!({"apiVersion": "muster.giantswarm.io/v1alpha1", "kind": "MCPServer", "metadata": {"name": "s"},
                    "status": {"state": "Running"}});
    let with_status = api
        .patch_status(
            "s",
            &PatchParams::apply("controller").force(),
            &Patch::Apply(&st),
        )
        .await
        .expect("status");
    assert_eq!(with_status.data["status"]["state"], json!("Running"));
    assert_eq!(with_status.metadata.generation, after.metadata.generation);

    // apply without a field manager is refused
    let raw = api
        .patch("s", &PatchParams::default(), &Patch::Apply(&st))
        .await;
    assert!(raw.is_err());
}

#[tokio::test]
async fn typed_secrets_and_leases() {
    let server = FakeApiServer::start(FakeConfig::default()).expect("server");
    let client = client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let s: Secret = serde_json::from_value(json!({
        "metadata": {"name": "token", "labels": {"app": "muster"}},
        "stringData": {"token": "s3cret\n"},
    }))
    .expect("secret");
    let created = secrets
        .create(&PostParams::default(), &s)
        .await
        .expect("created");
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    let data = created.data.expect("data");
    assert_eq!(data["token"].0, b"s3cret\n");
    assert!(created.string_data.is_none());

    let listed = secrets
        .list(&ListParams::default().labels("app=muster"))
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 1);
    assert!(
        secrets
            .list(&ListParams::default().labels("app!=muster"))
            .await
            .expect("list")
            .items
            .is_empty()
    );
    let by_name = secrets
        .list(&ListParams::default().fields("metadata.name=token"))
        .await
        .expect("list");
    assert_eq!(by_name.items.len(), 1);
    let e = api_error(
        secrets
            .list(&ListParams::default().fields("spec.x=y"))
            .await
            .expect_err("unsupported"),
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "field label not supported: spec.x")
    );

    // strategic merge patch on a built-in
    let patched = secrets
        .patch(
            "token",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .expect("patched");
    assert_eq!(patched.metadata.labels.expect("labels").len(), 2);

    // a namespace that does not exist
    let other: Api<Secret> = Api::namespaced(client.clone(), "nowhere");
    let e = api_error(
        other
            .create(&PostParams::default(), &s)
            .await
            .expect_err("no namespace"),
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (404, r#"namespaces "nowhere" not found"#)
    );

    // leases: create, renew with optimistic concurrency, conflict on a stale copy
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "muster-leader"},
        "spec": {"holderIdentity": "replica-a", "leaseDurationSeconds": 15, "renewTime": "2026-01-01T00:00:00.000000Z"},
    }))
    .expect("lease");
    let l1 = leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("created");
    let mut l2 = l1.clone();
    l2.spec.as_mut().expect("spec").holder_identity = Some("replica-b".into());
    let renewed = leases
        .replace("muster-leader", &PostParams::default(), &l2)
        .await
        .expect("taken over");
    assert_eq!(
        renewed.spec.expect("spec").holder_identity.as_deref(),
        Some("replica-b")
    );
    let e = api_error(
        leases
            .replace("muster-leader", &PostParams::default(), &l2)
            .await
            .expect_err("stale"),
    );
    assert_eq!(e.code, 409);
    assert!(
        l1.metadata.generation.is_none(),
        "leases have no generation"
    );
}

#[tokio::test]
async fn lists_page_with_limit_and_continue() {
    let server = FakeApiServer::start(FakeConfig::default()).expect("server");
    let client = client(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..7 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("cm-{i}")}})).expect("cm");
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("created");
    }
    let first = cms
        .list(&ListParams::default().limit(3))
        .await
        .expect("page 1");
    assert_eq!(first.items.len(), 3);
    assert_eq!(first.metadata.remaining_item_count, Some(4));
    let token = first.metadata.continue_.clone().expect("continue");
    let second = cms
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .expect("page 2");
    let third = cms
        .list(
            &ListParams::default()
                .limit(3)
                .continue_token(second.metadata.continue_.as_deref().expect("more")),
        )
        .await
        .expect("page 3");
    assert_eq!(third.items.len(), 1);
    assert!(
        third
            .metadata
            .continue_
            .as_deref()
            .is_none_or(str::is_empty)
    );
    let names: Vec<_> = [first, second, third]
        .into_iter()
        .flat_map(|p| p.items)
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, (0..7).map(|i| format!("cm-{i}")).collect::<Vec<_>>());
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let (_server, _client, api) = with_crd(FakeConfig::default()).await;
    let mut obj = mcp("f", json!({"type": "stdio", "command": "x"}));
    obj.metadata.finalizers = Some(vec!["muster.giantswarm.io/cleanup".into()]);
    api.create(&PostParams::default(), &obj)
        .await
        .expect("created");
    let pending = api
        .delete("f", &DeleteParams::default())
        .await
        .expect("delete accepted");
    let marked = pending.left().expect("still there");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.generation, Some(2));
    let e = api_error(
        api.patch(
            "f",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["muster.giantswarm.io/cleanup", "new"]}}),
            ),
        )
        .await
        .expect_err("no new finalizers"),
    );
    assert_eq!(e.code, 422);
    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("finalizer removed");
    assert_eq!(api_error(api.get("f").await.expect_err("gone")).code, 404);
}

#[tokio::test]
async fn raw_watch_replays_bookmarks_and_reports_410() {
    let config = FakeConfig {
        bookmark_interval: Duration::from_millis(200),
        ..FakeConfig::default()
    };
    let server = FakeApiServer::start(config).expect("server");
    let client = client(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let start = cms
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    for i in 0..3 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("w-{i}")}})).expect("cm");
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("created");
    }
    cms.delete("w-1", &DeleteParams::default())
        .await
        .expect("deleted");

    let mut stream = cms
        .watch(&WatchParams::default().timeout(3), &start)
        .await
        .expect("watch")
        .boxed();
    let mut seen = Vec::new();
    let mut bookmark = false;
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
        .await
        .expect("in time")
        .expect("event")
    {
        match ev {
            WatchEvent::Added(c) => {
                seen.push(format!("ADDED {}", c.metadata.name.unwrap_or_default()))
            }
            WatchEvent::Deleted(c) => {
                seen.push(format!("DELETED {}", c.metadata.name.unwrap_or_default()))
            }
            WatchEvent::Modified(c) => {
                seen.push(format!("MODIFIED {}", c.metadata.name.unwrap_or_default()))
            }
            WatchEvent::Bookmark(_) => {
                bookmark = true;
                break;
            }
            WatchEvent::Error(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(seen, ["ADDED w-0", "ADDED w-1", "ADDED w-2", "DELETED w-1"]);
    assert!(bookmark, "a BOOKMARK arrives on an idle watch");

    server.compact();
    let mut gone = cms
        .watch(&WatchParams::default(), &start)
        .await
        .expect("watch")
        .boxed();
    match gone.try_next().await.expect("event") {
        Some(WatchEvent::Error(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
            assert!(
                e.message.starts_with("too old resource version:"),
                "{}",
                e.message
            );
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

#[tokio::test]
async fn reflector_follows_changes_and_relists_after_410() {
    // a small history, and no bookmarks to move the watcher's resourceVersion along
    let config = FakeConfig {
        history_window: 5,
        bookmark_interval: Duration::from_secs(3600),
        ..FakeConfig::default()
    };
    let (server, client, api) = with_crd(config).await;
    api.create(
        &PostParams::default(),
        &mcp("one", json!({"type": "stdio", "command": "a"})),
    )
    .await
    .expect("created");

    let writer = reflector::store::Writer::<DynamicObject>::new(mcps_resource());
    let reader = writer.as_reader();
    let stream = reflector(
        writer,
        watcher::watcher(api.clone(), watcher::Config::default()),
    )
    .default_backoff()
    .boxed();
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel::<String>();
    let task = tokio::spawn(async move {
        let mut stream = stream;
        while let Some(ev) = stream.next().await {
            let line = match ev {
                Ok(watcher::Event::Init) => "Init".to_owned(),
                Ok(watcher::Event::InitApply(o)) => {
                    format!("InitApply {}", o.metadata.name.unwrap_or_default())
                }
                Ok(watcher::Event::InitDone) => "InitDone".to_owned(),
                Ok(watcher::Event::Apply(o)) => {
                    format!("Apply {}", o.metadata.name.unwrap_or_default())
                }
                Ok(watcher::Event::Delete(o)) => {
                    format!("Delete {}", o.metadata.name.unwrap_or_default())
                }
                Err(e) => format!("Error {e}"),
            };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("in time")
            .expect("event")
    };
    assert_eq!(next().await, "Init");
    assert_eq!(next().await, "InitApply one");
    assert_eq!(next().await, "InitDone");

    api.create(
        &PostParams::default(),
        &mcp("two", json!({"type": "stdio", "command": "b"})),
    )
    .await
    .expect("created");
    assert_eq!(next().await, "Apply two");
    api.patch(
        "one",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"command": "c"}})),
    )
    .await
    .expect("patched");
    assert_eq!(next().await, "Apply one");
    api.delete("two", &DeleteParams::default())
        .await
        .expect("deleted");
    assert_eq!(next().await, "Delete two");
    assert_eq!(reader.state().len(), 1);

    // other resources move the history past the watcher's resourceVersion; the watch is cut
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..10 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("n-{i}")}})).expect("cm");
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("created");
    }
    api.create(
        &PostParams::default(),
        &mcp("three", json!({"type": "stdio", "command": "d"})),
    )
    .await
    .ok();
    // "three" reaches the open watch first
    assert_eq!(next().await, "Apply three");
    for i in 10..20 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("n-{i}")}})).expect("cm");
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("created");
    }
    server.close_watches();
    // re-watch from the old resourceVersion: 410 Gone, then the watcher lists again
    let mut relisted = Vec::new();
    loop {
        let ev = next().await;
        let done = ev == "InitDone";
        relisted.push(ev);
        if done {
            break;
        }
    }
    assert!(relisted.contains(&"Init".to_owned()), "{relisted:?}");
    assert!(
        relisted.contains(&"InitApply one".to_owned())
            && relisted.contains(&"InitApply three".to_owned()),
        "{relisted:?}"
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.contains("watch=true") && r.contains("/mcpservers")),
        "watched through the API"
    );
    assert_eq!(reader.state().len(), 2);
    task.abort();
}

#[tokio::test]
async fn kube_discovery_legacy_and_aggregated_find_crd_resources() {
    let (_server, client, _api) = with_crd(FakeConfig::default()).await;
    let gvk = GroupVersionKind::gvk("muster.giantswarm.io", "v1alpha1", "MCPServer");
    for aggregated in [false, true] {
        let d = kube::discovery::Discovery::new(client.clone());
        let d = if aggregated {
            d.run_aggregated().await
        } else {
            d.run().await
        }
        .expect("discovery runs");
        let (ar, caps) = d.resolve_gvk(&gvk).expect("MCPServer discovered");
        assert_eq!(ar.plural, "mcpservers", "aggregated: {aggregated}");
        assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
        assert!(
            caps.subresources
                .iter()
                .any(|(s, _)| s.plural == "mcpservers/status" || s.plural == "status"),
            "{:?}",
            caps.subresources
        );
        assert!(d.has_group("coordination.k8s.io") && d.has_group("events.k8s.io"));
    }
    let (ar, _) = kube::discovery::pinned_kind(&client, &gvk)
        .await
        .expect("pinned");
    assert_eq!(ar.kind, "MCPServer");
}
