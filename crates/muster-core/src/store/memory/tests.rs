use futures_util::StreamExt;

use super::*;
use crate::resource::Workflow;
use crate::resource::workflow::{Step, WorkflowSpec, WorkflowStatus};

fn wf(name: &str, tool: &str) -> Object<Workflow> {
    Object::new(
        name,
        WorkflowSpec {
            steps: vec![Step::tool("s1", tool)],
            ..WorkflowSpec::default()
        },
    )
}

#[tokio::test]
async fn crud_versions_and_generations() {
    let store = MemoryStore::<Workflow>::new();
    let a = store.create(wf("a", "t1")).await.unwrap();
    assert_eq!(a.metadata.generation, Some(1));
    assert!(matches!(
        store.create(wf("a", "t1")).await,
        Err(StoreError::AlreadyExists { .. })
    ));

    let same = store.apply(wf("a", "t1")).await.unwrap();
    assert_eq!(
        same.metadata.generation,
        Some(1),
        "unchanged spec keeps the generation"
    );
    let changed = store.apply(wf("a", "t2")).await.unwrap();
    assert_eq!(changed.metadata.generation, Some(2));

    let status = WorkflowStatus {
        valid: true,
        step_count: 1,
        ..WorkflowStatus::default()
    };
    store
        .set_status(&changed.key(), status.clone())
        .await
        .unwrap();
    let reapplied = store.apply(wf("a", "t3")).await.unwrap();
    assert_eq!(
        reapplied.status,
        Some(status),
        "apply keeps the stored status"
    );

    let mut stale = wf("a", "t4");
    stale.metadata.resource_version = changed.metadata.resource_version.clone();
    assert!(matches!(
        store.apply(stale).await,
        Err(StoreError::Conflict { .. })
    ));

    store
        .create(wf("b", "t1").in_namespace("other"))
        .await
        .unwrap();
    assert_eq!(store.list(None).await.unwrap().len(), 2);
    assert_eq!(store.list(Some("other")).await.unwrap().len(), 1);

    store.delete(&ObjectKey::named("a")).await.unwrap();
    assert!(store.get(&ObjectKey::named("a")).await.unwrap().is_none());
    assert!(matches!(
        store.delete(&ObjectKey::named("a")).await,
        Err(StoreError::NotFound { .. })
    ));
}

#[tokio::test]
async fn watch_starts_with_a_resync_and_sees_every_change() {
    let store = MemoryStore::with_objects([wf("a", "t1")]);
    let mut events = store.watch();
    match events.next().await.unwrap().unwrap() {
        StoreEvent::Resynced(all) => assert_eq!(all.len(), 1),
        other => panic!("expected a resync, got {other:?}"),
    }
    store.create(wf("b", "t1")).await.unwrap();
    store.delete(&ObjectKey::named("a")).await.unwrap();
    assert!(
        matches!(events.next().await.unwrap().unwrap(), StoreEvent::Applied(o) if o.name() == "b")
    );
    assert!(
        matches!(events.next().await.unwrap().unwrap(), StoreEvent::Deleted(o) if o.name() == "a")
    );
}

#[tokio::test]
async fn a_lagging_watcher_is_resynced() {
    let store = MemoryStore::<Workflow>::new();
    let mut events = store.watch();
    let _ = events.next().await;
    for i in 0..(WATCH_BUFFER + 10) {
        store.apply(wf("a", &format!("t{i}"))).await.unwrap();
    }
    match events.next().await.unwrap().unwrap() {
        StoreEvent::Resynced(all) => {
            assert_eq!(all[0].spec.steps[0].tool.as_deref(), Some("t1033"))
        }
        other => panic!("expected a resync, got {other:?}"),
    }
}

#[tokio::test]
async fn concurrent_writers_lose_nothing() {
    let store = MemoryStore::<Workflow>::new();
    let mut tasks = Vec::new();
    for i in 0..32 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store.create(wf(&format!("w{i}"), "t")).await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(store.list(None).await.unwrap().len(), 32);
}
