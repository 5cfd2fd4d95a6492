use std::sync::Arc;
use std::time::Duration;

use muster_core::tool::{Catalog, Revision, ToolError};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Prompt, Resource, Tool};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;

/// A provider with a replaceable catalog whose service answers
/// `<provider>:<tool> <arguments as JSON>`.
#[derive(Debug)]
struct Fixed {
    name: String,
    catalog: watch::Sender<Arc<Catalog>>,
    revision: watch::Sender<Revision>,
}

impl Fixed {
    fn new(name: &str, tools: &[&str]) -> Arc<Self> {
        let catalog = Catalog {
            tools: tools.iter().map(|t| tool(t, json!({}))).collect(),
            ..Catalog::default()
        };
        Arc::new(Self {
            name: name.to_owned(),
            catalog: watch::channel(Arc::new(catalog)).0,
            revision: watch::channel(Revision::default()).0,
        })
    }

    fn with_catalog(name: &str, catalog: Catalog) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_owned(),
            catalog: watch::channel(Arc::new(catalog)).0,
            revision: watch::channel(Revision::default()).0,
        })
    }

    fn replace(&self, catalog: Catalog) {
        self.catalog.send_replace(Arc::new(catalog));
        self.revision.send_modify(|r| *r = r.next());
    }
}

impl ToolProvider for Fixed {
    fn name(&self) -> &str {
        &self.name
    }
    fn catalog(&self) -> Arc<Catalog> {
        self.catalog.borrow().clone()
    }
    fn revisions(&self) -> watch::Receiver<Revision> {
        self.revision.subscribe()
    }
    fn service(&self) -> ToolService {
        let name = self.name.clone();
        ToolService::new(tower::service_fn(move |call: ToolCall| {
            let name = name.clone();
            async move {
                let args = Value::Object(call.arguments_or_empty()?);
                Ok::<_, ToolError>(CallToolResult::success(vec![ContentBlock::text(format!(
                    "{name}:{} {args}",
                    call.name
                ))]))
            }
        }))
    }
}

fn tool(name: &str, props: Value) -> Tool {
    let schema: JsonObject = match json!({"type": "object", "properties": props}) {
        Value::Object(m) => m,
        _ => unreachable!(),
    };
    Tool::new(name.to_owned(), format!("{name} tool"), schema)
}

fn names(registry: &Registry) -> Vec<String> {
    registry
        .snapshot()
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

async fn call(registry: &Registry, name: &str, args: Value) -> Result<String, ToolError> {
    let args = match args {
        Value::Object(m) => Some(m),
        Value::Null => None,
        _ => panic!("arguments must be an object"),
    };
    let result = registry
        .service()
        .oneshot(ToolCall::new(name, args))
        .await?;
    Ok(result.content[0]
        .as_text()
        .map(|t| t.text.clone())
        .unwrap_or_default())
}

fn family(name: &str) -> BackendNaming {
    BackendNaming::default().with_family(name, "cluster")
}

#[tokio::test]
async fn exposes_backends_by_server_then_cores_in_order() {
    let registry = Registry::new();
    registry.set_core(Fixed::new("core", &["core_service_list", "core_events"]));
    registry.upsert_backend(
        "zeta",
        BackendNaming::default(),
        Fixed::new("zeta", &["b", "a"]),
    );
    registry.upsert_backend(
        "alpha",
        BackendNaming::default(),
        Fixed::new("alpha", &["c"]),
    );
    registry.set_core(Fixed::new("workflows", &["workflow_deploy"]));
    assert_eq!(
        names(&registry),
        [
            "x_alpha_c",
            "x_zeta_b",
            "x_zeta_a",
            "core_service_list",
            "core_events",
            "workflow_deploy"
        ]
    );
    assert_eq!(registry.snapshot().core_tool_count(), 3);
    assert_eq!(registry.backends(), ["alpha", "zeta"]);

    // Replacing a core provider keeps its place.
    registry.set_core(Fixed::new("core", &["core_config_get"]));
    assert_eq!(
        names(&registry)[3..],
        ["core_config_get".to_owned(), "workflow_deploy".to_owned()]
    );
}

#[tokio::test]
async fn routes_by_exposed_name_to_the_upstream_name() {
    let registry = Registry::new();
    registry.upsert_backend(
        "git",
        BackendNaming::default(),
        Fixed::new("git", &["status"]),
    );
    registry.set_core(Fixed::new("core", &["core_service_list"]));
    assert_eq!(
        call(&registry, "x_git_status", json!({"path": "."}))
            .await
            .unwrap(),
        r#"git:status {"path":"."}"#
    );
    assert_eq!(
        call(&registry, "core_service_list", Value::Null)
            .await
            .unwrap(),
        "core:core_service_list {}"
    );
    let err = call(&registry, "status", Value::Null).await.unwrap_err();
    assert!(matches!(err, ToolError::UnknownTool { .. }));
    assert_eq!(err.to_string(), "tool not found: status");
}

#[tokio::test]
async fn family_calls_pick_the_member_and_strip_the_instance_arg() {
    let registry = Registry::new();
    let props = json!({"namespace": {"type": "string"}});
    for server in ["k8s-b", "k8s-a"] {
        let catalog = Catalog {
            tools: vec![tool("list_pods", props.clone())],
            ..Catalog::default()
        };
        registry.upsert_backend(
            server,
            family("kubernetes"),
            Fixed::with_catalog(server, catalog),
        );
    }
    assert_eq!(names(&registry), ["x_kubernetes_list_pods"]);
    let snapshot = registry.snapshot();
    let exposed = snapshot.tool("x_kubernetes_list_pods").unwrap();
    assert_eq!(exposed.family_members(), Some(vec!["k8s-a", "k8s-b"]));
    assert_eq!(
        exposed.origin(),
        &ToolOrigin::Family {
            family: "kubernetes".into()
        }
    );

    let table = [
        (
            json!({"cluster": "k8s-b", "namespace": "default"}),
            Ok(r#"k8s-b:list_pods {"namespace":"default"}"#),
        ),
        (
            json!({"namespace": "default"}),
            Err(
                r#"tool x_kubernetes_list_pods is provided by a family on servers k8s-a, k8s-b; the "cluster" parameter is required"#,
            ),
        ),
        (
            json!({"cluster": 7}),
            Err(
                r#"tool x_kubernetes_list_pods is provided by a family on servers k8s-a, k8s-b; the "cluster" parameter is required"#,
            ),
        ),
        (
            json!({"cluster": "k8s-typo"}),
            Err(
                r#"tool x_kubernetes_list_pods is not available on server "k8s-typo" (available: k8s-a, k8s-b)"#,
            ),
        ),
    ];
    for (args, expected) in table {
        let got = call(&registry, "x_kubernetes_list_pods", args.clone())
            .await
            .map_err(|e| e.to_string());
        assert_eq!(
            got.as_deref(),
            expected.map_err(str::to_owned).as_deref(),
            "{args}"
        );
    }
    let err = call(&registry, "x_kubernetes_list_pods", Value::Null)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("\"cluster\" parameter is required")
    );

    // Arguments that arrived as text are read for the instance argument; text that makes
    // no object muster can hold is refused as invalid arguments.
    let text_call = |text: String| {
        let text = serde_json::value::RawValue::from_string(text).unwrap();
        let arguments = muster_core::tool::ToolArguments::from_text(text);
        ToolCall::in_context("x_kubernetes_list_pods", arguments, Default::default())
    };
    let routed = registry
        .service()
        .oneshot(text_call(
            r#"{"namespace":"kube-system","cluster":"k8s-a"}"#.into(),
        ))
        .await
        .unwrap();
    assert_eq!(
        routed.content[0].as_text().map(|t| t.text.as_str()),
        Some(r#"k8s-a:list_pods {"namespace":"kube-system"}"#)
    );
    let deep = format!(
        r#"{{"cluster":"k8s-a","x":{}1{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let err = registry
        .service()
        .oneshot(text_call(deep))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");

    // Deregistering a member narrows the routing set.
    assert!(registry.remove_backend("k8s-a"));
    let err = call(
        &registry,
        "x_kubernetes_list_pods",
        json!({"cluster": "k8s-a"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"tool x_kubernetes_list_pods is not available on server "k8s-a" (available: k8s-b)"#
    );
    assert!(registry.remove_backend("k8s-b"));
    assert!(!registry.remove_backend("k8s-b"));
    assert!(names(&registry).is_empty());
}

#[tokio::test]
async fn prompts_and_resources_are_prefixed_and_wrong_kinds_are_named() {
    let registry = Registry::new();
    let catalog = Catalog {
        prompts: vec![Prompt::new("greet", Some("Say hi"), None)],
        resources: vec![
            Resource::new("file:///etc/hosts", "hosts"),
            Resource::new("notes", "notes"),
        ],
        ..Catalog::default()
    };
    registry.upsert_backend(
        "fs",
        BackendNaming::default(),
        Fixed::with_catalog("fs", catalog),
    );
    let snapshot = registry.snapshot();
    let prompts: Vec<&str> = snapshot.prompts().iter().map(ExposedPrompt::name).collect();
    assert_eq!(prompts, ["x_fs_greet"]);
    let uris: Vec<&str> = snapshot
        .resources()
        .iter()
        .map(ExposedResource::uri)
        .collect();
    assert_eq!(uris, ["file:///etc/hosts", "x_fs_notes"]);

    let err = call(&registry, "x_fs_greet", Value::Null)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "name x_fs_greet is a prompt, not a tool");
    // The provider's default get_prompt reports the upstream name as unknown.
    let err = snapshot
        .prompt("x_fs_greet")
        .unwrap()
        .get(None)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "tool not found: greet");
}

#[tokio::test]
async fn provider_revisions_rebuild_the_snapshot() {
    let registry = Registry::new();
    let provider = Fixed::new("git", &["status"]);
    registry.upsert_backend("git", BackendNaming::default(), provider.clone());
    let mut changes = registry.changes();
    changes.mark_unchanged();
    let before = registry.snapshot().generation();

    provider.replace(Catalog {
        tools: vec![tool("status", json!({})), tool("log", json!({}))],
        ..Catalog::default()
    });
    tokio::time::timeout(Duration::from_secs(5), changes.changed())
        .await
        .expect("snapshot rebuilt")
        .expect("registry alive");
    assert_eq!(names(&registry), ["x_git_status", "x_git_log"]);
    assert!(registry.snapshot().generation() > before);
    assert!(registry.is_available("x_git_log", &CallContext::anonymous()));
    assert!(!registry.is_available("x_git_diff", &CallContext::anonymous()));
}

#[tokio::test]
async fn a_tool_is_callable_as_soon_as_its_provider_published_it() {
    // The test task does not yield between the change and the call, so on this
    // current-thread runtime the background rebuild cannot have run: the call itself must
    // catch the snapshot up.
    let registry = Registry::new();
    let provider = Fixed::new("git", &["status"]);
    registry.upsert_backend("git", BackendNaming::default(), provider.clone());
    let before = registry.snapshot().generation();
    provider.replace(Catalog {
        tools: vec![tool("status", json!({})), tool("log", json!({}))],
        ..Catalog::default()
    });
    assert_eq!(
        call(&registry, "x_git_log", json!({})).await.unwrap(),
        "git:log {}"
    );
    assert!(registry.snapshot().generation() > before);

    // A name no provider has does not rebuild anything.
    let generation = registry.snapshot().generation();
    let unknown = call(&registry, "x_git_diff", json!({})).await;
    assert!(
        matches!(unknown, Err(ToolError::UnknownTool { .. })),
        "{unknown:?}"
    );
    assert_eq!(registry.snapshot().generation(), generation);
}

#[tokio::test]
async fn a_call_that_read_the_snapshot_before_a_background_rebuild_finds_the_tool() {
    // The window of the race: the call read the snapshot, then the background rebuild ran
    // (marking the provider's revision seen) before the call checked for a catch-up.
    let registry = Registry::new();
    let provider = Fixed::new("git", &["status"]);
    registry.upsert_backend("git", BackendNaming::default(), provider.clone());
    let call = ToolCall::new("x_git_log", None);
    let read_before = registry.snapshot_for(&call.context.session);
    provider.replace(Catalog {
        tools: vec![tool("status", json!({})), tool("log", json!({}))],
        ..Catalog::default()
    });
    registry.inner.catch_up();
    let routed = registry.caught_up(read_before, &call);
    assert!(routed.tool("x_git_log").is_some());
}

#[tokio::test]
async fn a_replaced_provider_is_no_longer_watched() {
    let registry = Registry::new();
    let old = Fixed::new("git", &["status"]);
    registry.upsert_backend("git", BackendNaming::default(), old.clone());
    registry.upsert_backend("git", BackendNaming::default(), Fixed::new("git", &["log"]));
    let generation = registry.snapshot().generation();
    old.replace(Catalog::default());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(registry.snapshot().generation(), generation);
    assert_eq!(names(&registry), ["x_git_log"]);
}

#[tokio::test]
async fn dropping_the_registry_stops_its_tasks() {
    let registry = Registry::new();
    let provider = Fixed::new("git", &["status"]);
    registry.upsert_backend("git", BackendNaming::default(), provider.clone());
    let mut changes = registry.changes();
    drop(registry);
    // The generation sender lives in the registry: its receivers see it close.
    assert!(changes.changed().await.is_err());
    // The watcher task released its revision receiver.
    tokio::time::timeout(Duration::from_secs(5), async {
        while provider.revision.receiver_count() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("watcher stopped");
}

#[test]
fn works_without_a_runtime() {
    let registry = Registry::builder()
        .naming(NamingOptions::default().with_muster_prefix("m"))
        .build();
    registry.upsert_backend(
        "git",
        BackendNaming::default(),
        Fixed::new("git", &["status"]),
    );
    assert_eq!(names(&registry), ["m_git_status"]);
}

#[test]
fn labels_come_from_meta() {
    let registry = Registry::new();
    let mut t = tool("workflow_deploy", json!({}));
    let mut meta = rmcp::model::MetaObject::default();
    meta.insert(LABELS_META_KEY.into(), json!({"team": "obs", "tier": 1}));
    t.meta = Some(meta);
    let catalog = Catalog {
        tools: vec![t],
        ..Catalog::default()
    };
    registry.set_core(Fixed::with_catalog("workflows", catalog));
    let snapshot = registry.snapshot();
    let labels = snapshot.tool("workflow_deploy").unwrap().labels();
    assert_eq!(labels.get("team").map(String::as_str), Some("obs"));
    assert_eq!(labels.get("tier").map(String::as_str), Some("1"));
}

#[tokio::test]
async fn tools_of_a_stopped_server_answer_server_not_found() {
    let registry = Registry::new();
    registry.upsert_backend(
        "git",
        BackendNaming::default(),
        Fixed::new("git", &["status"]),
    );
    registry.upsert_backend("fs", BackendNaming::default(), Fixed::new("fs", &["read"]));
    assert!(registry.remove_backend("git"));
    // A later, unrelated change keeps the memory.
    registry.upsert_backend("fs", BackendNaming::default(), Fixed::new("fs", &["write"]));
    let table = [
        ("x_git_status", "server not found: git"),
        ("x_fs_read", "server not found: fs"),
        ("x_git_never", "tool not found: x_git_never"),
    ];
    for (name, expected) in table {
        let err = call(&registry, name, Value::Null).await.unwrap_err();
        assert_eq!(err.to_string(), expected);
    }
    assert!(!registry.is_available("x_git_status", &CallContext::anonymous()));

    // Back again: callable, and no longer remembered as gone.
    registry.upsert_backend(
        "git",
        BackendNaming::default(),
        Fixed::new("git", &["status"]),
    );
    assert!(call(&registry, "x_git_status", Value::Null).await.is_ok());
    assert_eq!(registry.snapshot().retired_server("x_git_status"), None);
}

#[tokio::test]
async fn unchanged_content_is_not_republished() {
    let registry = Registry::new();
    let provider = Fixed::new("git", &["status"]);
    registry.upsert_backend("git", BackendNaming::default(), provider.clone());
    let generation = registry.snapshot().generation();
    registry.refresh();
    registry.upsert_backend("git", BackendNaming::default(), provider.clone());
    assert_eq!(registry.snapshot().generation(), generation);
    // Another instance with the same tools must be routed to: that is a change.
    registry.upsert_backend(
        "git",
        BackendNaming::default(),
        Fixed::new("git", &["status"]),
    );
    assert_eq!(registry.snapshot().generation(), generation + 1);
}

#[tokio::test]
async fn session_servers_are_seen_and_called_by_their_session_only() {
    let registry = Registry::new();
    registry.upsert_backend(
        "shared",
        BackendNaming::default(),
        Fixed::new("shared", &["t"]),
    );
    // The protected server is registered without tools until a session signs in.
    registry.upsert_backend(
        "locked",
        BackendNaming::default(),
        Fixed::new("locked", &[]),
    );
    let (alice, bob) = (SessionId::new("alice"), SessionId::new("bob"));
    assert!(Arc::ptr_eq(
        &registry.snapshot_for(&alice),
        &registry.snapshot()
    ));

    let own = Fixed::new("locked", &["secret"]);
    registry.upsert_session_backend(&alice, "locked", BackendNaming::default(), own.clone());
    let seen = |s: &SessionId| -> Vec<String> {
        registry
            .snapshot_for(s)
            .tools()
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    };
    assert_eq!(seen(&alice), ["x_locked_secret", "x_shared_t"]);
    assert_eq!(seen(&bob), ["x_shared_t"]);
    assert_eq!(registry.session_backends(&alice), ["locked"]);
    // Cached until something changes; a new catalog of the session's server shows at once.
    assert!(Arc::ptr_eq(
        &registry.snapshot_for(&alice),
        &registry.snapshot_for(&alice)
    ));
    own.replace(Catalog {
        tools: vec![tool("secret", json!({})), tool("more", json!({}))],
        ..Catalog::default()
    });
    assert_eq!(
        seen(&alice),
        ["x_locked_secret", "x_locked_more", "x_shared_t"]
    );

    let as_session = |session: &SessionId| {
        let call = ToolCall::new("x_locked_secret", None).with_context(CallContext {
            session: session.clone(),
            ..CallContext::default()
        });
        registry.service().oneshot(call)
    };
    let ok = as_session(&alice).await.unwrap();
    assert_eq!(ok.content[0].as_text().unwrap().text, "locked:secret {}");
    assert!(as_session(&bob).await.is_err());
    assert!(registry.is_available(
        "x_locked_secret",
        &CallContext {
            session: alice.clone(),
            ..CallContext::default()
        }
    ));
    assert!(!registry.is_available("x_locked_secret", &CallContext::default()));

    assert!(registry.remove_session_backend(&alice, "locked"));
    assert_eq!(seen(&alice), ["x_shared_t"]);
    assert!(Arc::ptr_eq(
        &registry.snapshot_for(&alice),
        &registry.snapshot()
    ));
}
