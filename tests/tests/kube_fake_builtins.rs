//! The fake API server's built-ins and process form: Events in both API groups, admission
//! policies, deletecollection, concurrent patches, streaming lists, and the
//! `fake-apiserver` binary driven by kubectl.

use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent};
use k8s_openapi::api::events::v1::Event as EventsV1;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, Config};
use muster_tests::kube_fake::{FakeApiServer, FakeConfig, kubectl_binary};
use serde_json::json;

fn client(server: &FakeApiServer) -> Client {
    Client::try_from(Config::new(server.url().parse().expect("url"))).expect("client")
}

#[tokio::test]
async fn events_are_one_resource_in_two_api_groups() {
    let server = FakeApiServer::start(FakeConfig::default()).expect("server");
    let client = client(&server);
    let modern: Api<EventsV1> = Api::namespaced(client.clone(), "default");
    let ev: EventsV1 = serde_json::from_value(json!({
        "metadata": {"name": "github.1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "muster",
        "reportingInstance": "muster-0",
        "action": "Reconcile",
        "reason": "MCPServerStarted",
        "type": "Normal",
        "note": "MCP server github started",
        "regarding": {"kind": "MCPServer", "name": "github", "namespace": "default", "apiVersion": "muster.giantswarm.io/v1alpha1"},
    }))
    .expect("event");
    modern
        .create(&PostParams::default(), &ev)
        .await
        .expect("created");

    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let seen = core
        .list(&ListParams::default().fields("involvedObject.name=github,reason=MCPServerStarted"))
        .await
        .expect("list");
    assert_eq!(seen.items.len(), 1);
    let e = &seen.items[0];
    assert_eq!(e.message.as_deref(), Some("MCP server github started"));
    assert_eq!(e.involved_object.kind.as_deref(), Some("MCPServer"));
    assert_eq!(e.reporting_component.as_deref(), Some("muster"));

    let back = modern
        .list(&ListParams::default().fields("regarding.name=github"))
        .await
        .expect("list");
    assert_eq!(
        back.items[0].note.as_deref(),
        Some("MCP server github started")
    );
    assert!(
        modern
            .list(&ListParams::default().fields("regarding.name=other"))
            .await
            .expect("list")
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn admission_policies_are_stored_and_served() {
    let server = FakeApiServer::start(FakeConfig::default()).expect("server");
    let client = client(&server);
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    let p: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": {"name": "muster-secrets"},
        "spec": {"failurePolicy": "Fail", "validations": [{"expression": "false"}],
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["secrets"]}]}},
    }))
    .expect("policy");
    let created = policies
        .create(&PostParams::default(), &p)
        .await
        .expect("created");
    assert_eq!(created.metadata.generation, Some(1));
    let b: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
        "metadata": {"name": "muster-secrets"},
        "spec": {"policyName": "muster-secrets", "validationActions": ["Deny"]},
    }))
    .expect("binding");
    bindings
        .create(&PostParams::default(), &b)
        .await
        .expect("created");
    let read = bindings.get("muster-secrets").await.expect("read");
    assert_eq!(read.spec.validation_actions, vec!["Deny".to_owned()]);
    assert_eq!(
        policies
            .get("muster-secrets")
            .await
            .expect("read")
            .spec
            .expect("spec")
            .failure_policy
            .as_deref(),
        Some("Fail")
    );
}

#[tokio::test]
async fn delete_collection_and_concurrent_patches() {
    let server = FakeApiServer::start(FakeConfig::default()).expect("server");
    let client = client(&server);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for (name, team) in [("a", "x"), ("b", "x"), ("c", "y")] {
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": name, "labels": {"team": team}}, "data": {}}),
        )
        .expect("cm");
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("created");
    }
    let deleted = cms
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("team=x"),
        )
        .await
        .expect("deleted");
    let names: Vec<_> = deleted
        .left()
        .expect("a list")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(
        cms.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        1
    );

    // many writers patching one object: merge patches without a resourceVersion all land
    let mut tasks = Vec::new();
    for w in 0..4 {
        let cms = cms.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..15 {
                let body = json!({"data": {format!("w{w}-{i}"): "1"}});
                cms.patch("c", &PatchParams::default(), &Patch::Merge(body))
                    .await
                    .expect("patch lands");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let c = cms.get("c").await.expect("get");
    assert_eq!(c.data.expect("data").len(), 60);
}

#[tokio::test]
async fn streaming_list_watcher_gets_initial_events_then_changes() {
    let server = FakeApiServer::start(FakeConfig::default()).expect("server");
    let client = client(&server);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "first"}})).expect("cm");
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("created");
    let mut stream =
        watcher::watcher(cms.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut next = async || match tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("in time")
        .expect("event")
    {
        Ok(watcher::Event::Init) => "Init".to_owned(),
        Ok(watcher::Event::InitApply(o)) => {
            format!("InitApply {}", o.metadata.name.unwrap_or_default())
        }
        Ok(watcher::Event::InitDone) => "InitDone".to_owned(),
        Ok(watcher::Event::Apply(o)) => format!("Apply {}", o.metadata.name.unwrap_or_default()),
        Ok(watcher::Event::Delete(o)) => format!("Delete {}", o.metadata.name.unwrap_or_default()),
        Err(e) => format!("Error {e}"),
    };
    assert_eq!(next().await, "Init");
    assert_eq!(next().await, "InitApply first");
    assert_eq!(next().await, "InitDone");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "second"}})).expect("cm");
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("created");
    assert_eq!(next().await, "Apply second");
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.contains("sendInitialEvents=true")),
        "a streaming list was asked for"
    );
}

#[test]
fn the_binary_serves_kubectl_with_crds_given_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_fake-apiserver"));
    let kubeconfig = dir.path().join("kubeconfig");
    let url_file = dir.path().join("url");
    let crd = muster_tests::fixture("kube/widgets-crd.yaml");
    let mut child = std::process::Command::new(bin)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--crd")
        .arg(&crd)
        .arg("--url-file")
        .arg(&url_file)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawned");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !url_file.exists() && tokio::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = std::fs::read_to_string(&url_file).expect("url written");
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let kubectl = |args: &[&str]| {
        std::process::Command::new(kubectl_binary().expect("kubectl"))
            .args(args)
            .env("KUBECONFIG", &kubeconfig)
            .env("KUBECACHEDIR", dir.path().join("cache"))
            .output()
            .expect("kubectl runs")
    };
    let out = kubectl(&[
        "get",
        "crd",
        "mcpservers.muster.giantswarm.io",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "True",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kubectl(&["get", "mcps", "-A"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    );
    let status = child.wait().expect("exits");
    assert!(status.success(), "SIGTERM ends it cleanly: {status:?}");
}
