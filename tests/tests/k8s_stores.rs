//! muster-k8s's stores, event log and leader election against the fake API server, through a
//! real `kube::Client`: the CRDs muster generates are accepted and enforce their rules, the
//! execution store passes muster-core's conformance checks, the resource store reads from its
//! reflector (also across a 410 Gone relist), writes with optimistic concurrency and writes
//! status through `/status` only while it leads.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{Api, DynamicObject, PostParams};
use kube::{Client, Config};
use muster_core::event::{Event, EventFilter, EventLog as _, EventSink as _, EventType};
use muster_core::resource::mcp_server::{McpServerSpec, McpServerState, McpServerStatus};
use muster_core::resource::{McpServer, Object, ObjectKey};
use muster_core::store::{ResourceStore, StoreError, StoreEvent, conformance};
use muster_k8s::convert::api_resource;
use muster_k8s::leader::LeaseSettings;
use muster_k8s::{KubeEventLog, KubeExecutionStore, KubeStore, LeaderElector, Leadership};
use muster_tests::kube_fake::{FakeApiServer, FakeConfig};
use serde_json::{Value, json};

const NS: &str = "default";

async fn setup() -> (FakeApiServer, Client) {
    let server = FakeApiServer::start(FakeConfig::default()).expect("server starts");
    server
        .apply_crd_yaml(&muster_k8s::crd::crds_yaml().expect("CRDs render"))
        .expect("the fake API server accepts muster's CRDs");
    let config = Config::new(server.url().parse().expect("server URL"));
    let client = Client::try_from(config).expect("kube client");
    (server, client)
}

fn mcps_api(client: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), NS, &api_resource::<McpServer>())
}

fn remote(name: &str, url: &str) -> Object<McpServer> {
    Object::new(name, McpServerSpec::streamable_http(url)).in_namespace(NS)
}

async fn create_raw(api: &Api<DynamicObject>, spec: Value) -> Result<DynamicObject, String> {
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "muster.giantswarm.io/v1alpha1",
        "kind": "MCPServer",
        "metadata": {"name": "raw", "namespace": NS},
        "spec": spec,
    }))
    .expect("object");
    api.create(&PostParams::default(), &obj)
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn execution_store_passes_the_conformance_checks() {
    let (_server, client) = setup().await;
    let store = KubeExecutionStore::new(client.clone(), NS);
    let ids = conformance::execution_store_lifecycle(&store).await;
    // The kept record is a WorkflowExecution named by its id, labelled for kubectl -l.
    let wfe: Api<DynamicObject> = Api::namespaced_with(
        client,
        NS,
        &api_resource::<muster_core::WorkflowExecution>(),
    );
    let obj = wfe.get(ids.kept.as_str()).await.expect("the record object");
    let labels = obj.metadata.labels.unwrap_or_default();
    assert_eq!(labels["muster.giantswarm.io/workflow"], "wf");
    assert_eq!(labels["muster.giantswarm.io/status"], "failed");
    assert_eq!(obj.data["spec"]["workflowName"], "wf");
    assert!(wfe.get_opt(ids.pruned.as_str()).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_finished_execution_is_immutable_and_names_are_taken_once() {
    use muster_core::resource::execution::{ExecutionOutcome, StepStatus};
    use muster_core::store::{ExecutionStore as _, NewExecution};
    let (_server, client) = setup().await;
    let store = KubeExecutionStore::new(client, NS);
    let run = NewExecution::now("wf", json!({}));
    let id = store.begin(run.clone()).await.expect("begin");
    assert!(matches!(
        store.begin(run).await,
        Err(StoreError::AlreadyExists { .. })
    ));
    store
        .finish(
            &id,
            ExecutionOutcome::Completed(json!({"ok": true})),
            chrono::Utc::now(),
        )
        .await
        .expect("finish");
    let err = store
        .record_step(&id, conformance::step("late", StepStatus::Completed))
        .await
        .expect_err("a finished record refuses changes");
    assert!(err.to_string().contains("immutable"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_record_is_truncated_to_the_guard() {
    use muster_core::resource::execution::{MAX_RECORD_BYTES, StepStatus};
    use muster_core::store::{ExecutionStore as _, NewExecution};
    let (_server, client) = setup().await;
    let store = KubeExecutionStore::new(client, NS);
    let id = store
        .begin(NewExecution::now("big", json!({})))
        .await
        .expect("begin");
    let mut step = conformance::step("s", StepStatus::Completed);
    step.result = Some(json!("x".repeat(300 * 1024)));
    store.record_step(&id, step).await.expect("recorded");
    let rec = store.get(&id).await.unwrap().expect("record");
    assert!(rec.truncated);
    assert!(rec.json_size() <= MAX_RECORD_BYTES);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_crds_refuse_what_the_reference_refuses() {
    let (_server, client) = setup().await;
    let api = mcps_api(&client);
    let cases = [
        (
            json!({"type": "streamable-http", "url": "https://x.example/mcp",
                   "headers": {"authorization": "Bearer abc"}}),
            "must not carry a credential",
        ),
        (
            json!({"type": "streamable-http", "url": "https://user:pw@x.example/mcp"}),
            "must not contain a user name or password",
        ),
        (
            json!({"type": "sse", "url": "https://x.example/sse", "env": {"A": "b"}}),
            "env is refused on a remote server",
        ),
        (
            json!({"type": "stdio"}),
            "command is required for stdio type",
        ),
        (json!({"type": "streamable-http"}), "url is required"),
        (
            json!({"type": "streamable-http", "url": "https://x.example", "timeout": 301}),
            "timeout",
        ),
        (
            json!({"type": "streamable-http", "url": "https://x.example", "toolPrefix": "9x"}),
            "toolPrefix",
        ),
        (
            json!({"type": "streamable-http", "url": "https://x.example",
                   "family": {"name": "k8s"}}),
            "instanceArg",
        ),
        (
            json!({"type": "streamable-http", "url": "https://x.example",
                   "auth": {"type": "none", "authorizationServer": {"issuer": "https://gh.example"}}}),
            "authorizationServer requires type: oauth",
        ),
        (json!({"type": "carrier-pigeon"}), "type"),
    ];
    for (spec, expected) in cases {
        let err = create_raw(&api, spec.clone())
            .await
            .expect_err(&format!("{spec} must be refused"));
        assert!(err.contains(expected), "{spec}: {err}");
    }
    // An empty credential header is allowed, and so is a stdio server (muster refuses it).
    create_raw(
        &api,
        json!({"type": "streamable-http", "url": "https://x.example", "headers": {"Authorization": ""}}),
    )
    .await
    .expect("an empty Authorization header is no credential");

    let wf: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NS, &api_resource::<muster_core::Workflow>());
    let workflow = |name: &str, steps: Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "muster.giantswarm.io/v1alpha1", "kind": "Workflow",
            "metadata": {"name": name, "namespace": NS}, "spec": {"steps": steps}
        }))
        .unwrap()
    };
    let bad = [
        (
            json!([{"id": "a", "tool": "t", "parallel": [{"id": "b", "tool": "t"}]}]),
            "exactly one of tool, forEach or parallel",
        ),
        (
            json!([{"id": "a"}]),
            "exactly one of tool, forEach or parallel",
        ),
        (
            json!([{"id": "a", "tool": "t", "condition": {"fromStep": "x"}}]),
            "expect or expectNot",
        ),
        (
            json!([{"id": "a", "tool": "t", "condition": {"template": "{{true}}", "fromStep": "x"}}]),
            "exactly one of template, tool or fromStep",
        ),
        (json!([{"id": "a.b", "tool": "t"}]), "id"),
        (
            json!([{"id": "a", "forEach": {"items": "{{ .input.l }}", "parallelism": 51, "steps": [{"id": "b", "tool": "t"}]}}]),
            "parallelism",
        ),
        (json!([]), "steps"),
    ];
    for (i, (steps, expected)) in bad.into_iter().enumerate() {
        let err = wf
            .create(
                &PostParams::default(),
                &workflow(&format!("bad{i}"), steps.clone()),
            )
            .await
            .expect_err(&format!("{steps} must be refused"));
        assert!(err.to_string().contains(expected), "{steps}: {err}");
    }
    wf.create(
        &PostParams::default(),
        &workflow(
            "good",
            json!([{"id": "loop", "forEach": {"items": "{{ .input.l }}", "steps": [
                {"id": "inner", "forEach": {"items": "{{ .vars.item }}", "as": "x", "steps": [{"id": "c", "tool": "t"}]}}
            ]}}]),
        ),
    )
    .await
    .expect("a nested loop is a valid workflow");
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_store_reads_writes_and_watches_through_the_api() {
    let (server, client) = setup().await;
    let store = KubeStore::<McpServer>::builder(client.clone(), NS).start();
    assert!(store.ready(Duration::from_secs(10)).await);
    let mut events = store.watch();
    match events.next().await {
        Some(Ok(StoreEvent::Resynced(all))) => assert!(all.is_empty()),
        other => panic!("first a resync, got {other:?}"),
    }

    let created = store
        .create(remote("a", "https://a.example/mcp"))
        .await
        .expect("create");
    assert!(matches!(
        store.create(remote("a", "https://a.example/mcp")).await,
        Err(StoreError::AlreadyExists { .. })
    ));
    assert_eq!(
        store.list(None).await.unwrap().len(),
        1,
        "reads see the write"
    );
    // The watch reports the new object (a resync may come first: it is always allowed).
    loop {
        match events.next().await {
            Some(Ok(StoreEvent::Applied(o))) => {
                assert_eq!(o.name(), "a");
                break;
            }
            Some(Ok(StoreEvent::Resynced(all))) if all.iter().any(|o| o.name() == "a") => break,
            Some(Ok(StoreEvent::Resynced(_))) => {}
            other => panic!("an applied event, got {other:?}"),
        }
    }

    // A stale resourceVersion is a conflict; without one the write re-reads and wins.
    let mut stale = created.clone();
    stale.spec = McpServerSpec::streamable_http("https://b.example/mcp");
    store
        .apply(stale.clone())
        .await
        .expect("apply at the current version");
    assert!(matches!(
        store.apply(stale.clone()).await,
        Err(StoreError::Conflict { .. })
    ));
    stale.metadata.resource_version = None;
    stale.spec = McpServerSpec::streamable_http("https://c.example/mcp");
    let applied = store.apply(stale).await.expect("apply without a version");
    assert_eq!(applied.metadata.generation, Some(3));

    // Status through /status, stamped with observedGeneration; the spec is untouched.
    let status = McpServerStatus {
        state: Some(McpServerState::Failed),
        last_error: Some("refused".into()),
        ..McpServerStatus::default()
    };
    let key = ObjectKey::new(NS, "a");
    store
        .set_status(&key, status.clone())
        .await
        .expect("status");
    let raw = mcps_api(&client).get("a").await.unwrap();
    assert_eq!(raw.data["status"]["state"], "Failed");
    assert_eq!(raw.data["status"]["observedGeneration"], 3);
    assert_eq!(
        raw.metadata.generation,
        Some(3),
        "a status write is no spec change"
    );

    // A 410 Gone after compaction: the reflector lists again and sees what changed meanwhile.
    server.compact();
    server.close_watches();
    mcps_api(&client)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "muster.giantswarm.io/v1alpha1", "kind": "MCPServer",
                "metadata": {"name": "b", "namespace": NS},
                "spec": {"type": "sse", "url": "https://b.example/sse"}
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while store.list(None).await.unwrap().len() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the relist brings b"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let gone = store.delete(&key).await.expect("delete");
    assert_eq!(gone.name(), "a");
    assert!(store.get(&key).await.unwrap().is_none());
    assert!(matches!(
        store.delete(&key).await,
        Err(StoreError::NotFound { .. })
    ));
    let names: Vec<String> = store
        .list(None)
        .await
        .unwrap()
        .iter()
        .map(|o| o.name().to_owned())
        .collect();
    assert_eq!(names, ["b"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_leader_writes_status_and_a_new_leader_takes_over() {
    let (_server, client) = setup().await;
    let settings = |id: &str| LeaseSettings {
        lease_duration: Duration::from_secs(3),
        ..LeaseSettings::new(NS, id)
    };
    let (first, first_leads) = LeaderElector::new(client.clone(), settings("a"));
    let (second, second_leads) = LeaderElector::new(client.clone(), settings("b"));
    let first_task = tokio::spawn(first.run());
    wait_for(&first_leads, true).await;
    let second_task = tokio::spawn(second.run());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!second_leads.is_leader(), "one leader at a time");

    let leader = KubeStore::<McpServer>::builder(client.clone(), NS)
        .leadership(first_leads.clone())
        .start();
    let follower = KubeStore::<McpServer>::builder(client.clone(), NS)
        .leadership(second_leads.clone())
        .start();
    leader
        .create(remote("s", "https://s.example/mcp"))
        .await
        .unwrap();
    let key = ObjectKey::new(NS, "s");
    let failed = McpServerStatus {
        state: Some(McpServerState::Failed),
        ..McpServerStatus::default()
    };
    follower.set_status(&key, failed.clone()).await.unwrap();
    let raw = mcps_api(&client).get("s").await.unwrap();
    assert!(
        raw.data.get("status").is_none_or(Value::is_null),
        "the follower wrote nothing"
    );
    let connected = McpServerStatus {
        state: Some(McpServerState::Connected),
        ..McpServerStatus::default()
    };
    leader.set_status(&key, connected).await.unwrap();
    assert_eq!(
        mcps_api(&client).get("s").await.unwrap().data["status"]["state"],
        "Connected"
    );

    // The leader dies: within one lease period (3 s) plus a renewal round the other leads and
    // writes the status it held back.
    first_task.abort();
    let started = tokio::time::Instant::now();
    wait_for(&second_leads, true).await;
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "took {:?}",
        started.elapsed()
    );
    wait_for_state(&client, "Failed", "the new leader writes its status").await;
    second_task.abort();
}

/// Holds back the answer of each `GET` of one object while `armed`, until `release` gives a
/// permit: a status write's read stays in flight as long as a test needs.
#[derive(Clone)]
struct HeldGets<S> {
    inner: S,
    gate: Gate,
}

/// When and for how long [`HeldGets`] holds an answer back.
#[derive(Clone)]
struct Gate {
    path: &'static str,
    armed: Arc<std::sync::atomic::AtomicBool>,
    holding: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Semaphore>,
}

impl<S> tower::Service<axum::http::Request<kube::client::Body>> for HeldGets<S>
where
    S: tower::Service<axum::http::Request<kube::client::Body>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: axum::http::Request<kube::client::Body>) -> Self::Future {
        let gate = &self.gate;
        let held = request.method() == axum::http::Method::GET
            && request.uri().path() == gate.path
            && gate.armed.swap(false, std::sync::atomic::Ordering::AcqRel);
        let answer = self.inner.call(request);
        let (holding, release) = (gate.holding.clone(), gate.release.clone());
        Box::pin(async move {
            if held {
                holding.notify_one();
                let _permit = release.acquire().await;
            }
            answer.await
        })
    }
}

/// A store that follows until `lead` says otherwise, holding MCPServer `s` (created), over a
/// client whose GETs of `s` the [`Gate`] can hold back.
async fn gated_follower() -> (
    FakeApiServer,
    Client,
    Gate,
    tokio::sync::watch::Sender<bool>,
    KubeStore<McpServer>,
) {
    let (server, _) = setup().await;
    let held = Gate {
        path: "/apis/muster.giantswarm.io/v1alpha1/namespaces/default/mcpservers/s",
        armed: Arc::default(),
        holding: Arc::default(),
        release: Arc::new(tokio::sync::Semaphore::new(0)),
    };
    let layer = {
        let gate = held.clone();
        tower::layer::layer_fn(move |inner| HeldGets {
            inner,
            gate: gate.clone(),
        })
    };
    let config = Config::new(server.url().parse().expect("server URL"));
    let client = kube::client::ClientBuilder::try_from(config)
        .expect("client builder")
        .with_layer(&layer)
        .build();
    let (lead, follows) = tokio::sync::watch::channel(false);
    let store = KubeStore::<McpServer>::builder(client.clone(), NS)
        .leadership(Leadership::from_watch(follows))
        .start();
    store
        .create(remote("s", "https://s.example/mcp"))
        .await
        .expect("create");
    (server, client, held, lead, store)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_status_held_back_never_overwrites_a_newer_one() {
    let (_server, client, held, lead, store) = gated_follower().await;
    let key = ObjectKey::new(NS, "s");
    let status = |state| McpServerStatus {
        state: Some(state),
        ..McpServerStatus::default()
    };

    // Following: the status is held back.
    store
        .set_status(&key, status(McpServerState::Connecting))
        .await
        .unwrap();
    // The lead arrives; the flush of the held status reads the object and is held there
    // while a newer status is written.
    held.armed.store(true, std::sync::atomic::Ordering::Release);
    lead.send_replace(true);
    held.holding.notified().await;
    store
        .set_status(&key, status(McpServerState::AuthRequired))
        .await
        .unwrap();
    held.release.add_permits(1);
    tokio::time::sleep(Duration::from_millis(500)).await;
    wait_for_state(&client, "Auth Required", "the newer status stays").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_status_set_while_the_lead_arrives_is_written() {
    let (_server, client, held, lead, store) = gated_follower().await;
    let key = ObjectKey::new(NS, "s");

    // The write reads the object while this replica follows; the lead arrives (and the held
    // statuses are flushed) before the read answers.
    held.armed.store(true, std::sync::atomic::Ordering::Release);
    let failed = McpServerStatus {
        state: Some(McpServerState::Failed),
        ..McpServerStatus::default()
    };
    let write = tokio::spawn({
        let store = store.clone();
        let key = key.clone();
        async move { store.set_status(&key, failed).await }
    });
    held.holding.notified().await;
    lead.send_replace(true);
    tokio::time::sleep(Duration::from_millis(200)).await;
    held.release.add_permits(1);
    write.await.unwrap().unwrap();

    wait_for_state(
        &client,
        "Failed",
        "the status set as the lead arrived is written",
    )
    .await;
}

/// Waits up to 5 s until the stored status of MCPServer `s` has `state`; fails with `what`.
async fn wait_for_state(client: &Client, state: &str, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let now =
            mcps_api(client).get("s").await.expect("the MCPServer").data["status"]["state"].clone();
        if now == state {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: the state is still {now}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_for(leadership: &Leadership, value: bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while leadership.is_leader() != value {
        assert!(
            tokio::time::Instant::now() < deadline,
            "leadership never became {value}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn events_are_core_v1_events_read_back() {
    let (_server, client) = setup().await;
    let log = Arc::new(KubeEventLog::start(client.clone(), NS, "test"));
    log.record(Event::new(
        "MCPServer",
        "git",
        NS,
        "MCPServerStarted",
        EventType::Normal,
        "MCPServer git service started successfully",
    ));
    log.record(Event::new(
        "Workflow",
        "deploy",
        NS,
        "WorkflowValidationFailed",
        EventType::Warning,
        "Workflow deploy validation failed: x",
    ));
    // A query reads the events recorded before it (the writer is waited for).
    let events = log.query(&EventFilter::default()).await.unwrap();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].reason, "MCPServerStarted");
    let warnings = log
        .query(&EventFilter {
            event_type: Some(EventType::Warning),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].involved_object.name, "deploy");
    let raw: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client, NS);
    let list = raw.list(&Default::default()).await.unwrap();
    assert!(
        list.items
            .iter()
            .all(|e| e.involved_object.api_version.as_deref()
                == Some("muster.giantswarm.io/v1alpha1"))
    );
}

/// The next followed event, within a few seconds.
async fn next_followed(live: &mut tokio::sync::broadcast::Receiver<Event>) -> Event {
    tokio::time::timeout(Duration::from_secs(10), live.recv())
        .await
        .expect("a followed event arrives")
        .expect("the feed is open")
}

#[tokio::test(flavor = "multi_thread")]
async fn followers_see_the_new_events_of_every_replica_once() {
    let (server, client) = setup().await;
    let a = Arc::new(KubeEventLog::start(client.clone(), NS, "muster-a"));
    let b = Arc::new(KubeEventLog::start(client.clone(), NS, "muster-b"));
    let event = |name: &str, reason: &str| {
        Event::new(
            "MCPServer",
            name,
            NS,
            reason,
            EventType::Normal,
            format!("{name} {reason}"),
        )
    };
    // History: recorded before anyone follows.
    a.record(event("old", "MCPServerStarted"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while a.query(&EventFilter::default()).await.unwrap().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the old event is written"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut live = a.subscribe().expect("a live feed");
    // Let the watch list the history before anything new comes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Another replica's event, and one of another component (not muster's).
    let raw: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), NS);
    let kubelet: k8s_openapi::api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "pod.1", "namespace": NS},
        "involvedObject": {"kind": "Pod", "name": "pod", "namespace": NS},
        "reason": "Pulled", "message": "pulled", "type": "Normal",
        "source": {"component": "kubelet"},
        "lastTimestamp": "2026-01-01T00:00:00Z",
    }))
    .unwrap();
    raw.create(&PostParams::default(), &kubelet).await.unwrap();
    b.record(event("git", "MCPServerStarted"));
    let got = next_followed(&mut live).await;
    assert_eq!(
        (got.involved_object.name.as_str(), got.reason.as_str()),
        ("git", "MCPServerStarted")
    );

    // A cut watch whose resourceVersion is gone (410) relists: nothing is replayed, and what
    // came meanwhile arrives once.
    server.compact();
    server.close_watches();
    a.record(event("git", "MCPServerStopped"));
    let got = next_followed(&mut live).await;
    assert_eq!(got.reason, "MCPServerStopped");
    b.record(event("deploy", "MCPServerStarted"));
    let got = next_followed(&mut live).await;
    assert_eq!(got.involved_object.name, "deploy");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        live.try_recv().is_err(),
        "no event arrives twice and the history is not replayed"
    );
}

/// Creates namespace `name` through the API.
async fn namespace(client: &Client, name: &str) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    api.create(&PostParams::default(), &ns)
        .await
        .expect("the namespace is created");
}

/// The keys a store lists.
async fn keys(store: &KubeStore<McpServer>, namespace: Option<&str>) -> Vec<String> {
    store
        .list(namespace)
        .await
        .expect("list")
        .iter()
        .map(|o| o.key().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_serves_the_namespaces_it_is_given_and_writes_each_in_its_own() {
    use muster_k8s::store::Namespaces;
    let (_server, client) = setup().await;
    for ns in ["team-a", "team-b"] {
        namespace(&client, ns).await;
    }
    let in_ns = |ns: &str, name: &str| {
        Object::new(
            name,
            McpServerSpec::streamable_http("http://127.0.0.1:1/mcp"),
        )
        .in_namespace(ns)
    };
    let own = KubeStore::<McpServer>::builder(client.clone(), NS).start();
    let listed = KubeStore::<McpServer>::builder(client.clone(), NS)
        .namespaces(Namespaces::Listed(vec!["team-a".into()]))
        .start();
    let every = KubeStore::<McpServer>::builder(client.clone(), NS)
        .namespaces(Namespaces::All)
        .start();
    for store in [&own, &listed, &every] {
        assert!(store.ready(Duration::from_secs(10)).await);
    }

    // Writes go to the object's namespace, when the store serves it.
    listed
        .create(in_ns(NS, "home"))
        .await
        .expect("own namespace");
    listed
        .create(in_ns("team-a", "a"))
        .await
        .expect("a listed namespace");
    let refused = listed
        .create(in_ns("team-b", "b"))
        .await
        .expect_err("not served");
    assert!(matches!(refused, StoreError::NotFound { .. }), "{refused}");
    every
        .create(in_ns("team-b", "b"))
        .await
        .expect("every namespace");

    let settle = |store: KubeStore<McpServer>, want: usize| async move {
        for _ in 0..100 {
            if store.list(None).await.unwrap().len() == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    settle(own.clone(), 1).await;
    settle(every.clone(), 3).await;
    assert_eq!(keys(&own, None).await, ["default/home"]);
    assert_eq!(keys(&listed, None).await, ["default/home", "team-a/a"]);
    assert_eq!(keys(&listed, Some("team-a")).await, ["team-a/a"]);
    assert!(keys(&listed, Some("team-b")).await.is_empty());
    assert_eq!(
        keys(&every, None).await,
        ["default/home", "team-a/a", "team-b/b"]
    );

    // Status goes through the object's own namespace; get and delete find it there.
    let key = ObjectKey::new("team-a", "a");
    let status = McpServerStatus {
        state: Some(McpServerState::Connected),
        ..McpServerStatus::default()
    };
    let written = listed.set_status(&key, status).await.expect("status");
    assert_eq!(written.metadata.namespace.as_deref(), Some("team-a"));
    let raw: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "team-a", &api_resource::<McpServer>());
    assert_eq!(
        raw.get("a").await.unwrap().data["status"]["state"],
        "Connected"
    );
    assert!(
        own.get(&key).await.unwrap().is_none(),
        "not served by the own-namespace store"
    );
    listed.delete(&key).await.expect("deleted in team-a");
    assert!(raw.get_opt("a").await.unwrap().is_none());

    // A watch of every namespace sees the other namespaces' changes.
    let mut changes = every.watch();
    let _first = changes.next().await;
    every
        .create(in_ns("team-a", "later"))
        .await
        .expect("create");
    let seen = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(event)) = changes.next().await {
            if let StoreEvent::Applied(obj) = event
                && obj.key() == ObjectKey::new("team-a", "later")
            {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(seen, Ok(true));
}
