//! A writer killed with SIGKILL at arbitrary moments leaves only complete records, and opening
//! the directory afterwards recovers the runs it left in progress.
//!
//! The writer is this test binary itself, re-run with [`CHILD_ENV`] set so that
//! [`crash_child_writer`] writes records until it is killed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::*;

/// Set to the directory the child writes to; unset, the child test does nothing.
const CHILD_ENV: &str = "MUSTER_FS_CRASH_CHILD";
/// Concurrent writers in the child.
const WRITERS: usize = 8;

/// The full name of [`crash_child_writer`], as `--exact` wants it.
fn child_test_name() -> String {
    let module = module_path!();
    let module = module.split_once("::").map_or(module, |(_, rest)| rest);
    format!("{module}::crash_child_writer")
}

/// Writes runs (begin, step transitions, finish) in a loop forever when [`CHILD_ENV`] is set.
#[test]
fn crash_child_writer() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    runtime.block_on(async move {
        let (store, _) = FsExecutionStore::open(PathBuf::from(dir)).await.unwrap();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| tokio::spawn(write_forever(store.clone(), w)))
            .collect();
        for writer in writers {
            writer.await.unwrap();
        }
    });
}

async fn write_forever(store: FsExecutionStore, writer: usize) {
    // Just under the per-payload truncation bound, so records stay large and writes slow.
    let payload = "p".repeat(30 * 1024);
    for run in 0usize.. {
        let input = json!({ "writer": writer, "run": run, "payload": payload });
        let id = store
            .begin(NewExecution::now("crash", input))
            .await
            .unwrap();
        for s in 0..3 {
            let name = format!("s{s}");
            store
                .record_step(&id, step(&name, StepStatus::Inprogress))
                .await
                .unwrap();
            let mut done = step(&name, StepStatus::Completed);
            done.result = Some(json!({ "payload": payload }));
            store.record_step(&id, done).await.unwrap();
        }
        store
            .finish(&id, ExecutionOutcome::Completed(json!(run)), Utc::now())
            .await
            .unwrap();
    }
}

/// The record files of `dir` (temporary files excluded).
fn record_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap())
                .filter(|e| {
                    matches!(
                        classify(e.file_name().to_str().unwrap()),
                        EntryKind::Record(_)
                    )
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Waits (at most 30 s) until the child has written more than `known` records.
fn wait_for_progress(child: &mut std::process::Child, dir: &Path, known: usize) {
    for _ in 0..3000 {
        if record_files(dir).len() > known {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the writer exited on its own: {status}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the writer wrote nothing");
}

#[test]
fn sigkill_leaves_only_complete_records() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let exe = std::env::current_exe().unwrap();
    for delay_ms in [300, 370, 460] {
        let known = record_files(dir.path()).len();
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                &child_test_name(),
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_progress(&mut child, dir.path(), known);
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        child.wait().unwrap();

        let files = record_files(dir.path());
        assert!(files.len() > known);
        let mut in_progress = Vec::new();
        for path in &files {
            let bytes = std::fs::read(path).unwrap();
            let (stored_id, record) = format::decode(&bytes)
                .unwrap_or_else(|e| panic!("{} is not a complete record: {e}", path.display()));
            assert_eq!(
                path.file_stem().unwrap().to_str().unwrap(),
                stored_id.as_str()
            );
            assert!(bytes.ends_with(b"}\n"));
            if record.status == ExecutionStatus::Inprogress {
                in_progress.push(stored_id);
            }
        }

        let (store, report) = runtime
            .block_on(FsExecutionStore::open(dir.path()))
            .unwrap();
        assert!(report.skipped.is_empty(), "{:?}", report.skipped);
        assert_eq!(report.loaded, files.len());
        let mut recovered = report.recovered.clone();
        recovered.sort();
        in_progress.sort();
        assert_eq!(recovered, in_progress);
        let left: Vec<String> = file_names(dir.path())
            .into_iter()
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "temporary files are removed: {left:?}");
        let still_running = ExecutionFilter {
            status: Some(ExecutionStatus::Inprogress),
            ..ExecutionFilter::default()
        };
        assert_eq!(
            runtime.block_on(store.list(&still_running)).unwrap().total,
            0
        );
        for id in &in_progress {
            let record = runtime.block_on(store.get(id)).unwrap().unwrap();
            assert_eq!(record.error.as_deref(), Some(INTERRUPTED_ERROR));
        }
    }
}
