use std::path::Path;

use chrono::TimeDelta;
use muster_core::resource::execution::{ExecutionStatus, StepStatus, TRUNCATION_MARKER};
use serde_json::{Value, json};

use super::file::{EntryKind, classify, is_valid_id};
use super::*;

mod crash;

use muster_core::store::conformance::step;

async fn open(dir: &Path) -> (FsExecutionStore, OpenReport) {
    FsExecutionStore::open(dir).await.unwrap()
}

/// Names of the files in `dir`, sorted.
fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn passes_the_conformance_checks_and_deletes_pruned_files() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path()).await;
    let ids = muster_core::store::conformance::execution_store_lifecycle(&store).await;
    assert!(store.record_path(&ids.kept).exists());
    assert!(
        !store.record_path(&ids.pruned).exists(),
        "the file is deleted"
    );
}

#[tokio::test]
async fn reopening_reads_everything_back() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path()).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let mut run = NewExecution::now(format!("wf{}", i % 2), json!({ "i": i }));
        run.started_at = Utc::now() - TimeDelta::minutes(i);
        let id = store.begin(run).await.unwrap();
        store
            .record_step(&id, step("a", StepStatus::Completed))
            .await
            .unwrap();
        store
            .finish(
                &id,
                ExecutionOutcome::Completed(json!({ "n": i })),
                Utc::now(),
            )
            .await
            .unwrap();
        ids.push(id);
    }
    let everything = ExecutionFilter {
        limit: 100,
        ..ExecutionFilter::default()
    };
    let before = store.list(&everything).await.unwrap();
    let mut records = Vec::new();
    for id in &ids {
        records.push(store.get(id).await.unwrap().unwrap());
    }
    drop(store);

    let (reopened, report) = open(dir.path()).await;
    assert_eq!(report.loaded, 5);
    assert!(report.recovered.is_empty() && report.skipped.is_empty());
    assert_eq!(reopened.list(&everything).await.unwrap(), before);
    for (id, record) in ids.iter().zip(&records) {
        assert_eq!(reopened.get(id).await.unwrap().as_ref(), Some(record));
    }
    assert_eq!(before.items[0].id, ids[0], "newest first");
}

#[tokio::test]
async fn open_recovers_runs_left_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path()).await;
    let mut run = NewExecution::now("wf", json!({}));
    run.started_at = Utc::now() - TimeDelta::seconds(5);
    let started_at = run.started_at;
    let id = store.begin(run).await.unwrap();
    store
        .record_step(&id, step("a", StepStatus::Inprogress))
        .await
        .unwrap();
    let done = store
        .begin(NewExecution::now("wf", json!({})))
        .await
        .unwrap();
    store
        .finish(&done, ExecutionOutcome::Completed(json!(1)), Utc::now())
        .await
        .unwrap();
    drop(store);

    let opened_at = Utc::now();
    let (store, report) = open(dir.path()).await;
    assert_eq!(report.recovered, std::slice::from_ref(&id));
    assert_eq!(report.loaded, 2);
    let rec = store.get(&id).await.unwrap().unwrap();
    assert_eq!(rec.status, ExecutionStatus::Failed);
    assert_eq!(rec.error.as_deref(), Some(INTERRUPTED_ERROR));
    let completed_at = rec.completed_at.unwrap();
    assert!(completed_at >= opened_at);
    assert_eq!(
        rec.duration_ms,
        (completed_at - started_at).num_milliseconds()
    );
    assert_eq!(rec.steps.len(), 1, "the steps are kept");
    let summary = &store
        .list(&ExecutionFilter {
            status: Some(ExecutionStatus::Failed),
            ..ExecutionFilter::default()
        })
        .await
        .unwrap()
        .items[0];
    assert_eq!(summary.error.as_deref(), Some(INTERRUPTED_ERROR));
    assert_eq!(
        store.get(&done).await.unwrap().unwrap().status,
        ExecutionStatus::Completed
    );
    drop(store);

    let (store, report) = open(dir.path()).await;
    assert!(report.recovered.is_empty(), "the recovery was written");
    assert_eq!(
        store.get(&id).await.unwrap().unwrap().error.as_deref(),
        Some(INTERRUPTED_ERROR)
    );
}

#[tokio::test]
async fn temp_and_foreign_files_are_ignored_and_temp_files_removed() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path()).await;
    let id = store
        .begin(NewExecution::now("wf", json!({})))
        .await
        .unwrap();
    drop(store);
    let leftover = format!(".{id}.yaml.tmp-1234");
    std::fs::write(dir.path().join(&leftover), "{\"execution_id\": \"half").unwrap();
    std::fs::write(dir.path().join(".notes"), "x").unwrap();
    std::fs::write(dir.path().join("README.txt"), "x").unwrap();
    std::fs::write(dir.path().join("broken.yaml"), "{ not json").unwrap();
    std::fs::create_dir(dir.path().join("sub.yaml")).unwrap();

    let (store, report) = open(dir.path()).await;
    assert_eq!(report.removed_temp_files, 1);
    assert_eq!(report.loaded, 1);
    assert_eq!(report.recovered, std::slice::from_ref(&id));
    assert_eq!(report.skipped.len(), 1);
    assert!(
        report.skipped[0].to_string().contains("broken.yaml"),
        "{}",
        report.skipped[0]
    );
    let mut expected = vec![
        ".notes".to_owned(),
        "README.txt".to_owned(),
        format!("{id}.yaml"),
        "broken.yaml".to_owned(),
        "sub.yaml".to_owned(),
    ];
    expected.sort();
    assert_eq!(
        file_names(dir.path()),
        expected,
        "only the temporary file is gone"
    );
    let page = store.list(&ExecutionFilter::default()).await.unwrap();
    assert_eq!(page.total, 1);
    let broken = ExecutionId::from_string("broken");
    assert_eq!(store.get(&broken).await.unwrap(), None);
    assert!(
        matches!(
            store
                .begin(NewExecution {
                    id: broken,
                    ..NewExecution::now("wf", json!({}))
                })
                .await,
            Err(StoreError::AlreadyExists { .. })
        ),
        "an unreadable record is not overwritten"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_steps_are_all_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path()).await;
    let id = store
        .begin(NewExecution::now("wf", json!({})))
        .await
        .unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            let id = id.clone();
            tokio::spawn(async move {
                store
                    .record_step(&id, step(&format!("s{i}"), StepStatus::Completed))
                    .await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let mut steps: Vec<String> = store
        .get(&id)
        .await
        .unwrap()
        .unwrap()
        .steps
        .into_iter()
        .map(|s| s.step_id)
        .collect();
    steps.sort();
    let mut expected: Vec<String> = (0..16).map(|i| format!("s{i}")).collect();
    expected.sort();
    assert_eq!(steps, expected);
    assert_eq!(
        store.list(&ExecutionFilter::default()).await.unwrap().items[0].step_count,
        16
    );
    assert_eq!(store.inner.locks.len(), 0, "idle locks are dropped");
    assert_eq!(file_names(dir.path()), [format!("{id}.yaml")]);
}

#[tokio::test]
async fn large_payloads_are_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path()).await;
    let big = "x".repeat(300 * 1024);
    let id = store
        .begin(NewExecution::now("wf", json!({ "blob": big })))
        .await
        .unwrap();
    let rec = store.get(&id).await.unwrap().unwrap();
    assert!(rec.truncated);
    assert_eq!(rec.input, json!({ "_truncated": TRUNCATION_MARKER }));

    let mut s = step("a", StepStatus::Completed);
    s.result = Some(json!({ "blob": big }));
    store.record_step(&id, s).await.unwrap();
    let rec = store.get(&id).await.unwrap().unwrap();
    assert_eq!(rec.steps[0].result, Some(json!(TRUNCATION_MARKER)));

    let content: Value =
        serde_json::from_slice(&std::fs::read(store.record_path(&id)).unwrap()).unwrap();
    assert_eq!(content["truncated"], json!(true));
    assert!(std::fs::metadata(store.record_path(&id)).unwrap().len() < 64 * 1024);
}

#[tokio::test]
async fn files_hold_snake_case_json() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path()).await;
    let id = store
        .begin(NewExecution::now("deploy", json!({ "app": "x" })))
        .await
        .unwrap();
    store
        .record_step(&id, step("build", StepStatus::Completed))
        .await
        .unwrap();
    store
        .finish(
            &id,
            ExecutionOutcome::Completed(json!({ "ok": true })),
            Utc::now(),
        )
        .await
        .unwrap();
    let text = std::fs::read_to_string(store.record_path(&id)).unwrap();
    assert!(
        text.starts_with("{\n  \"execution_id\""),
        "pretty-printed: {text}"
    );
    let content: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = content
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "execution_id",
            "workflow_name",
            "status",
            "started_at",
            "completed_at",
            "duration_ms",
            "input",
            "result",
            "steps",
        ]
    );
    assert_eq!(content["execution_id"], json!(id.as_str()));
    assert_eq!(content["workflow_name"], json!("deploy"));
    assert_eq!(content["status"], json!("completed"));
    let step_keys: Vec<&str> = content["steps"][0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        step_keys,
        [
            "step_id",
            "tool",
            "status",
            "started_at",
            "duration_ms",
            "input",
            "stored_as"
        ]
    );
    assert_eq!(content["steps"][0]["step_id"], json!("build"));
}

#[tokio::test]
async fn directory_is_created_by_the_first_write() {
    let root = tempfile::tempdir().unwrap();
    let layout = Layout::new(root.path());
    let (store, report) = FsExecutionStore::open_in(&layout).await.unwrap();
    assert_eq!(report.loaded, 0);
    assert_eq!(store.dir(), layout.workflow_executions_dir());
    assert!(!store.dir().exists());
    assert_eq!(
        store.list(&ExecutionFilter::default()).await.unwrap().total,
        0
    );
    let id = store
        .begin(NewExecution::now("wf", json!({})))
        .await
        .unwrap();
    assert!(store.record_path(&id).is_file());
}

#[tokio::test]
async fn unknown_duplicate_and_unsafe_ids() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path()).await;
    let unknown = ExecutionId::new_v4();
    assert!(matches!(
        store
            .record_step(&unknown, step("a", StepStatus::Completed))
            .await,
        Err(StoreError::NotFound {
            kind: "WorkflowExecution",
            ..
        })
    ));
    assert!(matches!(
        store
            .finish(&unknown, ExecutionOutcome::Completed(json!(1)), Utc::now())
            .await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(store.get(&unknown).await.unwrap(), None);

    let run = NewExecution::now("wf", json!({}));
    store.begin(run.clone()).await.unwrap();
    assert!(matches!(
        store.begin(run).await,
        Err(StoreError::AlreadyExists {
            kind: "WorkflowExecution",
            ..
        })
    ));

    let escape = ExecutionId::from_string("../escape");
    let err = store
        .begin(NewExecution {
            id: escape.clone(),
            ..NewExecution::now("wf", json!({}))
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err}");
    assert_eq!(store.get(&escape).await.unwrap(), None);
    assert!(!dir.path().join("../escape.yaml").exists());
}

#[tokio::test]
async fn a_record_deleted_behind_the_store_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path()).await;
    let id = store
        .begin(NewExecution::now("wf", json!({})))
        .await
        .unwrap();
    std::fs::remove_file(store.record_path(&id)).unwrap();
    assert_eq!(store.get(&id).await.unwrap(), None);
    assert!(matches!(
        store
            .record_step(&id, step("a", StepStatus::Completed))
            .await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(
        store.list(&ExecutionFilter::default()).await.unwrap().total,
        0
    );
}

#[test]
fn file_names_are_classified() {
    let id = ExecutionId::new_v4();
    assert_eq!(
        classify(&format!("{id}.yaml")),
        EntryKind::Record(id.clone())
    );
    assert_eq!(classify(&format!(".{id}.yaml.tmp-abc")), EntryKind::Temp);
    for other in [
        ".notes",
        "x.yml",
        "x.json",
        ".yaml",
        "a b.yaml",
        "..yaml.tmp-x",
        "x.yaml.tmp-1",
    ] {
        assert_eq!(classify(other), EntryKind::Other, "{other}");
    }
    assert!(is_valid_id(id.as_str()));
    for bad in ["", "..", "a/b", "a.b", &"x".repeat(129)] {
        assert!(!is_valid_id(bad), "{bad}");
    }
}

#[tokio::test]
async fn a_full_disk_fails_a_write_clearly_and_keeps_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path()).await;
    let id = store
        .begin(NewExecution::now("wf", json!({"a": 1})))
        .await
        .unwrap();
    store
        .record_step(&id, step("one", StepStatus::Completed))
        .await
        .unwrap();
    let before = std::fs::read(store.record_path(&id)).unwrap();
    crate::atomic::full_disk::fill(dir.path());
    let err = store
        .record_step(&id, step("two", StepStatus::Completed))
        .await
        .unwrap_err();
    let begin = store
        .begin(NewExecution::now("wf", json!({})))
        .await
        .unwrap_err();
    crate::atomic::full_disk::free(dir.path());
    for err in [&err, &begin] {
        let text = err.to_string();
        assert!(text.contains("No space left on device"), "{text}");
    }
    assert_eq!(std::fs::read(store.record_path(&id)).unwrap(), before);
    let record = store.get(&id).await.unwrap().unwrap();
    assert_eq!(record.steps.len(), 1);
    assert_eq!(
        file_names(dir.path()).len(),
        1,
        "{:?}",
        file_names(dir.path())
    );
    // Once there is room again, writing goes on.
    store
        .record_step(&id, step("two", StepStatus::Completed))
        .await
        .unwrap();
    assert_eq!(store.get(&id).await.unwrap().unwrap().steps.len(), 2);
}
