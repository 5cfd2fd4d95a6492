use std::path::Path;
use std::time::SystemTime;

use muster_core::resource::mcp_server::{McpServerSpec, McpServerState, McpServerStatus};
use muster_core::resource::workflow::{WorkflowSpec, WorkflowStatus};
use muster_core::{McpServer, Object, ObjectKey, ResourceStore, StoreError, Workflow};
use serde_json::json;
use tempfile::TempDir;

use super::*;
use crate::ConfigDir;

fn server(name: &str, url: &str) -> Object<McpServer> {
    Object::new(name, McpServerSpec::streamable_http(url))
}

fn workflow_spec(tool: &str) -> WorkflowSpec {
    serde_json::from_value(json!({ "steps": [{ "id": "a", "tool": tool }] })).unwrap()
}

fn running() -> McpServerStatus {
    McpServerStatus {
        state: Some(McpServerState::Running),
        ..McpServerStatus::default()
    }
}

fn servers(dir: &TempDir) -> FsStore<McpServer> {
    FsStore::new(dir.path())
}

fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn mtime(path: impl AsRef<Path>) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

#[tokio::test]
async fn crud_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = servers(&dir);
    let created = store
        .create(server("tools", "http://localhost:9000/mcp"))
        .await
        .unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.metadata.creation_timestamp.is_some());

    let path = dir.path().join("mcpservers/tools.yaml");
    let text = read(&path);
    assert!(
        text.starts_with(
            "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: tools\n  namespace: default\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("spec:\n  type: streamable-http\n  url: http://localhost:9000/mcp\n"),
        "{text}"
    );
    assert!(
        !text.contains("null") && !text.contains("resourceVersion") && !text.contains("status"),
        "{text}"
    );

    let key = ObjectKey::named("tools");
    assert_eq!(store.get(&key).await.unwrap(), Some(created.clone()));
    assert_eq!(
        store.list(None).await.unwrap(),
        std::slice::from_ref(&created)
    );
    assert_eq!(store.list(Some("default")).await.unwrap().len(), 1);
    assert!(store.list(Some("other")).await.unwrap().is_empty());
    assert!(
        ConfigDir::new(dir.path()).load().unwrap().is_valid(),
        "the loader reads what the store writes"
    );

    store.set_status(&key, running()).await.unwrap();
    let mut changed = server("tools", "http://localhost:9001/mcp");
    changed.metadata.labels.insert("team".into(), "a".into());
    let applied = store.apply(changed).await.unwrap();
    assert_eq!(applied.metadata.generation, Some(2));
    assert_eq!(applied.status, Some(running()), "apply keeps the status");
    assert_eq!(
        applied.metadata.creation_timestamp,
        created.metadata.creation_timestamp
    );
    assert_eq!(store.get(&key).await.unwrap(), Some(applied.clone()));

    let same_again = store
        .apply(server("tools", "http://localhost:9001/mcp"))
        .await
        .unwrap();
    assert_eq!(
        same_again.metadata.generation,
        Some(2),
        "labels are not the spec"
    );

    let deleted = store.delete(&key).await.unwrap();
    assert_eq!(deleted.spec, applied.spec);
    assert!(!path.exists());
    assert_eq!(store.get(&key).await.unwrap(), None);
    assert!(matches!(
        store.delete(&key).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.set_status(&key, running()).await,
        Err(StoreError::NotFound { .. })
    ));
}

#[tokio::test]
async fn create_fails_when_either_file_exists() {
    let dir = tempfile::tempdir().unwrap();
    let store = servers(&dir);
    store.create(server("a", "http://a/mcp")).await.unwrap();
    let err = store.create(server("a", "http://b/mcp")).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::AlreadyExists {
                kind: "MCPServer",
                ..
            }
        ),
        "{err}"
    );
    assert!(read(dir.path().join("mcpservers/a.yaml")).contains("http://a/mcp"));

    std::fs::write(dir.path().join("mcpservers/b.yml"), "not even yaml: [").unwrap();
    let err = store.create(server("b", "http://b/mcp")).await.unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists { .. }), "{err}");
    assert!(!dir.path().join("mcpservers/b.yaml").exists());
}

#[tokio::test]
async fn apply_checks_the_resource_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = servers(&dir);
    let first = store.apply(server("a", "http://a/mcp")).await.unwrap();
    let stale = first.metadata.resource_version.clone();

    let mut update = server("a", "http://b/mcp");
    update.metadata.resource_version.clone_from(&stale);
    let second = store.apply(update).await.unwrap();
    assert_ne!(second.metadata.resource_version, stale);

    let mut late = server("a", "http://c/mcp");
    late.metadata.resource_version.clone_from(&stale);
    match store.apply(late).await {
        Err(StoreError::Conflict {
            expected, found, ..
        }) => {
            assert_eq!(Some(expected), stale);
            assert_eq!(Some(found), second.metadata.resource_version);
        }
        other => panic!("expected a conflict, got {other:?}"),
    }

    // A change by another process changes the version too.
    let path = dir.path().join("mcpservers/a.yaml");
    let edited = read(&path).replace("http://b/mcp", "http://d/mcp");
    std::fs::write(&path, edited).unwrap();
    let mut late = server("a", "http://e/mcp");
    late.metadata.resource_version = second.metadata.resource_version;
    assert!(matches!(
        store.apply(late).await,
        Err(StoreError::Conflict { .. })
    ));
}

#[tokio::test]
async fn status_is_written_back_only_when_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    let store = servers(&dir);
    let path = dir.path().join("mcpservers/hand.yaml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let hand_written = "# written by hand\napiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\n\
        metadata:\n  name: hand\nspec:\n  type: stdio\n  command: npx # the runner\n";
    std::fs::write(&path, hand_written).unwrap();
    let key = ObjectKey::named("hand");

    let with_status = store.set_status(&key, running()).await.unwrap();
    assert_eq!(with_status.status, Some(running()));
    let text = read(&path);
    assert_eq!(
        text,
        format!("{hand_written}status:\n  state: Running\n"),
        "only the status block is added"
    );
    assert_eq!(store.get(&key).await.unwrap(), Some(with_status.clone()));

    let before = mtime(&path);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let unchanged = store.set_status(&key, running()).await.unwrap();
    assert_eq!(unchanged, with_status);
    assert_eq!(mtime(&path), before, "an equal status is not written");
    assert_eq!(read(&path), text);

    let failed = McpServerStatus {
        state: Some(McpServerState::Failed),
        last_error: Some("boom".into()),
        ..McpServerStatus::default()
    };
    store.set_status(&key, failed.clone()).await.unwrap();
    let text = read(&path);
    assert!(text.starts_with(hand_written), "{text}");
    assert!(
        text.ends_with("status:\n  state: Failed\n  lastError: boom\n"),
        "{text}"
    );
    assert_eq!(store.get(&key).await.unwrap().unwrap().status, Some(failed));
}

#[tokio::test]
async fn status_of_an_unusual_file_is_written_by_rendering_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = servers(&dir);
    let path = dir.path().join("mcpservers/flow.yaml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        "{apiVersion: muster.giantswarm.io/v1alpha1, kind: MCPServer, spec: {type: stdio, command: npx}}\n",
    )
    .unwrap();
    let key = ObjectKey::named("flow");
    let stored = store.set_status(&key, running()).await.unwrap();
    assert_eq!(store.get(&key).await.unwrap(), Some(stored));
    assert!(read(&path).starts_with("apiVersion: "));
}

#[tokio::test]
async fn broken_files_fail_get_and_are_skipped_by_list() {
    let dir = tempfile::tempdir().unwrap();
    let store = servers(&dir);
    store.create(server("good", "http://a/mcp")).await.unwrap();
    std::fs::write(
        dir.path().join("mcpservers/bad.yaml"),
        "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nspec:\n  type: stdio\n  timeout: x\n",
    )
    .unwrap();
    let names: Vec<_> = store
        .list(None)
        .await
        .unwrap()
        .iter()
        .map(|o| o.name().to_owned())
        .collect();
    assert_eq!(names, ["good"]);
    match store.get(&ObjectKey::named("bad")).await {
        Err(StoreError::Codec { message }) => {
            let path = dir.path().join("mcpservers/bad.yaml");
            assert!(
                message.starts_with(&format!("{}:5:", path.display())),
                "{message}"
            );
            assert!(message.contains("spec.timeout: invalid type"), "{message}");
        }
        other => panic!("expected a codec error, got {other:?}"),
    }
    assert!(matches!(
        store.delete(&ObjectKey::named("bad")).await,
        Err(StoreError::Codec { .. })
    ));
    assert!(dir.path().join("mcpservers/bad.yaml").exists());
    // Apply replaces a broken definition.
    store
        .apply(server("bad", "http://fixed/mcp"))
        .await
        .unwrap();
    assert_eq!(store.list(None).await.unwrap().len(), 2);
}

#[tokio::test]
async fn writes_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    let store: FsStore<Workflow> = FsStore::new(dir.path());
    let err = store
        .create(Object::new("empty", WorkflowSpec::default()))
        .await
        .unwrap_err();
    match err {
        StoreError::Invalid(errors) => assert!(errors.contains("spec.steps", ""), "{errors}"),
        other => panic!("expected invalid, got {other:?}"),
    }
    for bad_name in ["", "../x", ".hidden", "a/b", "ok-name\n", "a b", "tab\t"] {
        let err = store
            .apply(Object::new(bad_name, workflow_spec("x_t")))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::Invalid(e) if e.contains("metadata.name", "without whitespace")),
            "{bad_name}: {err}"
        );
    }
    assert!(!dir.path().join("x.yaml").exists());
    store
        .create(Object::new(
            "special-chars-workflow_123",
            workflow_spec("x_t"),
        ))
        .await
        .unwrap();
    store
        .delete(&ObjectKey::named("special-chars-workflow_123"))
        .await
        .unwrap();
    let key = ObjectKey::named("../x");
    assert_eq!(store.get(&key).await.unwrap(), None);

    let created = store
        .create(Object::new("deploy", workflow_spec("x_t")))
        .await
        .unwrap();
    let status = WorkflowStatus {
        valid: true,
        step_count: 1,
        ..WorkflowStatus::default()
    };
    store
        .set_status(&created.key(), status.clone())
        .await
        .unwrap();
    let got = store.get(&created.key()).await.unwrap().unwrap();
    assert_eq!(got.spec, workflow_spec("x_t"));
    assert_eq!(got.status, Some(status));
}

#[tokio::test]
async fn namespace_comes_from_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.yaml"), "namespace: team\n").unwrap();
    let store = servers(&dir);
    assert_eq!(store.namespace(), "team");
    let created = store.create(server("a", "http://a/mcp")).await.unwrap();
    assert_eq!(created.key(), ObjectKey::new("team", "a"));
    assert_eq!(store.get(&ObjectKey::named("a")).await.unwrap(), None);
    assert!(store.get(&created.key()).await.unwrap().is_some());

    // One file per name: the name is taken whatever the namespace.
    let elsewhere = server("a", "http://b/mcp").in_namespace("other");
    assert!(matches!(
        store.apply(elsewhere).await,
        Err(StoreError::AlreadyExists { .. })
    ));
    let forced: FsStore<McpServer> = FsStore::builder(dir.path()).namespace("x").build();
    assert_eq!(forced.namespace(), "x");
}

#[tokio::test]
async fn yml_files_are_read_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = servers(&dir);
    std::fs::create_dir_all(dir.path().join("mcpservers")).unwrap();
    let yml = dir.path().join("mcpservers/short.yml");
    std::fs::write(
        &yml,
        "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nspec:\n  type: stdio\n  command: npx\n",
    )
    .unwrap();
    let key = ObjectKey::named("short");
    assert!(store.get(&key).await.unwrap().is_some());
    store.set_status(&key, running()).await.unwrap();
    store.apply(server("short", "http://a/mcp")).await.unwrap();
    assert!(read(&yml).contains("http://a/mcp"));
    assert!(!dir.path().join("mcpservers/short.yaml").exists());
    store.delete(&key).await.unwrap();
    assert!(!yml.exists());
}

#[tokio::test]
async fn a_full_disk_fails_a_write_clearly_and_keeps_the_definition() {
    let dir = tempfile::tempdir().unwrap();
    let store = servers(&dir);
    let created = store
        .create(server("tools", "http://localhost:9000/mcp"))
        .await
        .unwrap();
    let path = dir.path().join("mcpservers/tools.yaml");
    let before = read(&path);
    crate::atomic::full_disk::fill(dir.path());
    let mut changed = created.clone();
    changed.spec = McpServerSpec::streamable_http("http://localhost:9001/mcp");
    let update = store.apply(changed).await.unwrap_err();
    let create = store
        .create(server("other", "http://localhost:9002/mcp"))
        .await
        .unwrap_err();
    crate::atomic::full_disk::free(dir.path());
    for err in [&update, &create] {
        let text = err.to_string();
        assert!(text.contains("No space left on device"), "{text}");
    }
    assert_eq!(read(&path), before, "the definition is untouched");
    assert!(!dir.path().join("mcpservers/other.yaml").exists());
    let names: Vec<_> = std::fs::read_dir(dir.path().join("mcpservers"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["tools.yaml"], "no temporary file is left behind");
    assert_eq!(
        store.get(&ObjectKey::named("tools")).await.unwrap(),
        Some(created)
    );
}
