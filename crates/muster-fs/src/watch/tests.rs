use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_core::stream::BoxStream;
use futures_util::StreamExt;
use muster_core::resource::mcp_server::{McpServerSpec, McpServerState, McpServerStatus};
use muster_core::{McpServer, Object, ObjectKey, ResourceStore, StoreError, StoreEvent};
use tempfile::TempDir;

use crate::FsStore;

type Events = BoxStream<'static, Result<StoreEvent<McpServer>, StoreError>>;

/// How long a test waits for an expected event.
const PATIENCE: Duration = Duration::from_secs(10);

/// A file without `metadata.name`, so it can be renamed.
fn definition(url: &str) -> String {
    format!(
        "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nspec:\n  type: streamable-http\n  url: {url}\n"
    )
}

const BROKEN: &str =
    "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nspec:\n  type: [\n";

struct Fixture {
    dir: TempDir,
    store: FsStore<McpServer>,
}

impl Fixture {
    fn new(debounce_ms: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = FsStore::builder(dir.path())
            .debounce(Duration::from_millis(debounce_ms))
            .resync_interval(Duration::ZERO)
            .build();
        Self { dir, store }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join("mcpservers").join(file)
    }

    fn write(&self, file: &str, text: &str) {
        let path = self.path(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

async fn next(events: &mut Events) -> StoreEvent<McpServer> {
    tokio::time::timeout(PATIENCE, events.next())
        .await
        .expect("no event in time")
        .expect("the stream ended")
        .expect("an error event")
}

async fn quiet(events: &mut Events, wait: Duration) {
    if let Ok(event) = tokio::time::timeout(wait, events.next()).await {
        panic!("unexpected event: {event:?}");
    }
}

async fn resynced(events: &mut Events) -> Vec<String> {
    match next(events).await {
        StoreEvent::Resynced(objects) => objects.iter().map(|o| o.name().to_owned()).collect(),
        other => panic!("expected Resynced, got {other:?}"),
    }
}

fn applied(event: &StoreEvent<McpServer>) -> Option<&Object<McpServer>> {
    match event {
        StoreEvent::Applied(obj) => Some(obj),
        _ => None,
    }
}

fn url(obj: &Object<McpServer>) -> &str {
    &obj.spec.transport.remote().unwrap().url
}

fn invalid_source(event: &StoreEvent<McpServer>) -> Option<&str> {
    match event {
        StoreEvent::Invalid { source, .. } => Some(source),
        _ => None,
    }
}

#[tokio::test]
async fn starts_with_resynced_then_reports_broken_files() {
    let fx = Fixture::new(50);
    fx.write("b.yaml", &definition("http://b/mcp"));
    fx.write("a.yaml", &definition("http://a/mcp"));
    fx.write("broken.yaml", BROKEN);
    fx.write("notes.txt", "not a definition");
    let mut events = fx.store.watch();
    assert_eq!(resynced(&mut events).await, ["a", "b"]);
    match next(&mut events).await {
        StoreEvent::Invalid { key, source, error } => {
            assert_eq!(key, Some(ObjectKey::named("broken")));
            assert_eq!(Path::new(&source), fx.path("broken.yaml"));
            assert!(error.contains("(line 5, column 1)"), "{error}");
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
    quiet(&mut events, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn creates_the_directory_and_sees_writes_of_other_processes() {
    let fx = Fixture::new(50);
    let mut events = fx.store.watch();
    assert!(resynced(&mut events).await.is_empty());
    assert!(fx.path("").is_dir(), "the watch creates the directory");

    fx.write("ext.yaml", &definition("http://one/mcp"));
    let event = next(&mut events).await;
    assert_eq!(url(applied(&event).expect("Applied")), "http://one/mcp");

    fx.write("ext.yaml", &definition("http://two/mcp"));
    let event = next(&mut events).await;
    assert_eq!(url(applied(&event).expect("Applied")), "http://two/mcp");

    std::fs::remove_file(fx.path("ext.yaml")).unwrap();
    match next(&mut events).await {
        StoreEvent::Deleted(obj) => assert_eq!(url(&obj), "http://two/mcp"),
        other => panic!("expected Deleted, got {other:?}"),
    }
    quiet(&mut events, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn a_rename_is_a_delete_and_an_apply() {
    let fx = Fixture::new(50);
    fx.write("old.yaml", &definition("http://x/mcp"));
    let mut events = fx.store.watch();
    assert_eq!(resynced(&mut events).await, ["old"]);
    std::fs::rename(fx.path("old.yaml"), fx.path("new.yml")).unwrap();
    let mut seen = [next(&mut events).await, next(&mut events).await];
    seen.sort_by_key(|e| matches!(e, StoreEvent::Applied(_)));
    match &seen[..] {
        [StoreEvent::Deleted(old), StoreEvent::Applied(new)] => {
            assert_eq!((old.name(), new.name()), ("old", "new"));
            assert_eq!(url(new), "http://x/mcp");
        }
        other => panic!("expected Deleted and Applied, got {other:?}"),
    }
    quiet(&mut events, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn a_broken_file_is_invalid_while_others_apply() {
    let fx = Fixture::new(50);
    let mut events = fx.store.watch();
    assert!(resynced(&mut events).await.is_empty());
    fx.write("good.yaml", &definition("http://good/mcp"));
    fx.write("bad.yaml", BROKEN);
    let mut seen = [next(&mut events).await, next(&mut events).await];
    seen.sort_by_key(|e| applied(e).is_none());
    assert_eq!(applied(&seen[0]).map(Object::name), Some("good"));
    let source = invalid_source(&seen[1]).expect("Invalid");
    assert_eq!(Path::new(source), fx.path("bad.yaml"));

    // Fixing the file applies it.
    fx.write("bad.yaml", &definition("http://fixed/mcp"));
    let event = next(&mut events).await;
    assert_eq!(applied(&event).map(Object::name), Some("bad"));

    // Breaking a valid file reports it and removes its object.
    fx.write("good.yaml", BROKEN);
    let event = next(&mut events).await;
    assert_eq!(
        invalid_source(&event).map(PathBuf::from),
        Some(fx.path("good.yaml"))
    );
    match next(&mut events).await {
        StoreEvent::Deleted(obj) => assert_eq!(obj.name(), "good"),
        other => panic!("expected Deleted, got {other:?}"),
    }
    assert_eq!(fx.store.list(None).await.unwrap().len(), 1);
    quiet(&mut events, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn changes_within_the_debounce_time_are_merged() {
    let fx = Fixture::new(1000);
    let mut events = fx.store.watch();
    assert!(resynced(&mut events).await.is_empty());

    // Created, then written: one Applied of the last content.
    fx.write("merged.yaml", &definition("http://first/mcp"));
    std::thread::sleep(Duration::from_millis(20));
    fx.write("merged.yaml", &definition("http://second/mcp"));
    let event = next(&mut events).await;
    assert_eq!(url(applied(&event).expect("Applied")), "http://second/mcp");

    // Created, then deleted: nothing.
    fx.write("brief.yaml", &definition("http://brief/mcp"));
    std::thread::sleep(Duration::from_millis(20));
    std::fs::remove_file(fx.path("brief.yaml")).unwrap();
    quiet(&mut events, Duration::from_millis(1500)).await;

    // Changed, then deleted: one Deleted.
    fx.write("merged.yaml", &definition("http://third/mcp"));
    std::thread::sleep(Duration::from_millis(20));
    std::fs::remove_file(fx.path("merged.yaml")).unwrap();
    match next(&mut events).await {
        StoreEvent::Deleted(obj) => assert_eq!(url(&obj), "http://second/mcp"),
        other => panic!("expected Deleted, got {other:?}"),
    }
    quiet(&mut events, Duration::from_millis(1500)).await;
}

#[tokio::test]
async fn store_writes_are_reported_once_and_status_writes_not_at_all() {
    let fx = Fixture::new(50);
    let mut events = fx.store.watch();
    assert!(resynced(&mut events).await.is_empty());

    let obj = Object::new("mine", McpServerSpec::streamable_http("http://a/mcp"));
    let created = fx.store.create(obj.clone()).await.unwrap();
    let event = next(&mut events).await;
    assert_eq!(applied(&event), Some(&created));

    // Unchanged content: no event.
    fx.store.apply(obj.clone()).await.unwrap();
    let path = fx.path("mine.yaml");
    std::fs::write(&path, std::fs::read(&path).unwrap()).unwrap();
    let status = McpServerStatus {
        state: Some(McpServerState::Connected),
        ..McpServerStatus::default()
    };
    fx.store
        .set_status(&created.key(), status.clone())
        .await
        .unwrap();
    quiet(&mut events, Duration::from_millis(400)).await;

    // A spec change is reported, with the status written before.
    let changed = Object::new("mine", McpServerSpec::streamable_http("http://b/mcp"));
    fx.store.apply(changed).await.unwrap();
    let event = next(&mut events).await;
    let obj = applied(&event).expect("Applied");
    assert_eq!(url(obj), "http://b/mcp");
    assert_eq!(obj.status, Some(status));
    assert_eq!(obj.metadata.generation, Some(2));

    fx.store.delete(&created.key()).await.unwrap();
    assert!(matches!(next(&mut events).await, StoreEvent::Deleted(_)));
}

#[tokio::test]
async fn the_periodic_resync_sees_changes_without_notifications() {
    let dir = tempfile::tempdir().unwrap();
    let store: FsStore<McpServer> = FsStore::builder(dir.path())
        .file_events(false)
        .resync_interval(Duration::from_millis(100))
        .build();
    let mut events = store.watch();
    assert!(resynced(&mut events).await.is_empty());
    std::fs::write(
        dir.path().join("mcpservers/polled.yaml"),
        definition("http://polled/mcp"),
    )
    .unwrap();
    let event = next(&mut events).await;
    assert_eq!(applied(&event).map(Object::name), Some("polled"));
    std::fs::remove_file(dir.path().join("mcpservers/polled.yaml")).unwrap();
    assert!(matches!(next(&mut events).await, StoreEvent::Deleted(_)));
    // Resyncs that find nothing new report nothing.
    quiet(&mut events, Duration::from_millis(350)).await;
}

#[tokio::test]
async fn watches_are_independent() {
    let fx = Fixture::new(50);
    let mut first = fx.store.watch();
    let mut second = fx.store.clone().watch();
    assert!(resynced(&mut first).await.is_empty());
    assert!(resynced(&mut second).await.is_empty());
    fx.write("x.yaml", &definition("http://x/mcp"));
    assert!(applied(&next(&mut first).await).is_some());
    drop(first);
    assert!(applied(&next(&mut second).await).is_some());
}
