use chrono::{DateTime, TimeDelta, Utc};
use muster_core::{Event, EventFilter, EventLog, EventSink, EventType};
use std::io::Write;

use serde_json::Value;

use super::*;

fn event(kind: &str, name: &str, type_: EventType, at: DateTime<Utc>) -> Event {
    let mut event = Event::new(
        kind,
        name,
        "default",
        "Reason",
        type_,
        format!("{name} at {at}"),
    );
    event.timestamp = at;
    event
}

fn names(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e.involved_object.name.as_str())
        .collect()
}

#[tokio::test]
async fn appends_json_lines_and_reads_them_back_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let log = FsEventLog::in_config_dir(&Layout::new(dir.path())).unwrap();
    let now = Utc::now();
    log.record(event(
        "MCPServer",
        "a",
        EventType::Normal,
        now - TimeDelta::seconds(2),
    ));
    log.record(event(
        "Workflow",
        "b",
        EventType::Warning,
        now - TimeDelta::seconds(1),
    ));
    log.record(event("MCPServer", "c", EventType::Normal, now));

    let all = log.query(&EventFilter::default()).await.unwrap();
    assert_eq!(names(&all), ["a", "b", "c"]);
    assert_eq!(log.dropped(), 0);

    let file = dir
        .path()
        .join("events")
        .join(format!("events-{}.json", now.format("%Y-%m-%d")));
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    let first: Value = serde_json::from_str(lines[0]).unwrap();
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "timestamp",
            "namespace",
            "involvedObject",
            "reason",
            "message",
            "type",
            "source"
        ]
    );
    assert_eq!(first["involvedObject"]["kind"], "MCPServer");
    assert_eq!(first["source"], "muster");
}

#[tokio::test]
async fn filters() {
    let dir = tempfile::tempdir().unwrap();
    let log = FsEventLog::new(dir.path().join("events")).unwrap();
    let now = Utc::now();
    let at = |secs| now - TimeDelta::seconds(secs);
    log.record(event("MCPServer", "a", EventType::Normal, at(40)));
    log.record(event("MCPServer", "a", EventType::Warning, at(30)));
    log.record(event("Workflow", "w", EventType::Normal, at(20)));
    let mut other_ns = event("MCPServer", "a", EventType::Normal, at(10));
    other_ns.namespace = "team".into();
    log.record(other_ns);

    let query = |filter: EventFilter| {
        let log = log.clone();
        async move { log.query(&filter).await.unwrap() }
    };
    let by_kind = query(EventFilter {
        kind: Some("Workflow".into()),
        ..EventFilter::default()
    })
    .await;
    assert_eq!(names(&by_kind), ["w"]);
    let by_name = query(EventFilter {
        name: Some("a".into()),
        ..EventFilter::default()
    })
    .await;
    assert_eq!(by_name.len(), 3);
    let by_ns = query(EventFilter {
        namespace: Some("team".into()),
        ..EventFilter::default()
    })
    .await;
    assert_eq!(by_ns.len(), 1);
    let warnings = query(EventFilter {
        event_type: Some(EventType::Warning),
        ..EventFilter::default()
    })
    .await;
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].timestamp, at(30));
    let window = query(EventFilter {
        since: Some(at(30)),
        until: Some(at(20)),
        ..EventFilter::default()
    })
    .await;
    assert_eq!(
        window.iter().map(|e| e.timestamp).collect::<Vec<_>>(),
        [at(30), at(20)]
    );
    let newest_two = query(EventFilter {
        limit: Some(2),
        ..EventFilter::default()
    })
    .await;
    assert_eq!(
        newest_two.iter().map(|e| e.timestamp).collect::<Vec<_>>(),
        [at(20), at(10)]
    );
}

#[tokio::test]
async fn days_have_files_of_their_own_and_expired_ones_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let events_dir = dir.path().join("events");
    std::fs::create_dir_all(&events_dir).unwrap();
    let today = Utc::now().date_naive();
    let file_of = |days_ago: i64| {
        events_dir.join(format!(
            "events-{}.json",
            (today - TimeDelta::days(days_ago)).format("%Y-%m-%d")
        ))
    };
    std::fs::write(file_of(31), "").unwrap();
    std::fs::write(file_of(400), "").unwrap();
    std::fs::write(events_dir.join("events.log"), "legacy\n").unwrap();
    let log = FsEventLog::new(&events_dir).unwrap();

    let now = Utc::now();
    let old = now - TimeDelta::days(30);
    log.record(event("MCPServer", "old", EventType::Normal, old));
    log.record(event("MCPServer", "new", EventType::Normal, now));
    log.flush().await.unwrap();

    assert!(
        !file_of(31).exists() && !file_of(400).exists(),
        "expired files are removed"
    );
    assert!(file_of(30).exists() && file_of(0).exists());
    assert!(
        events_dir.join("events.log").exists(),
        "other files are left alone"
    );

    // A malformed line is skipped, not fatal.
    let mut text = std::fs::read_to_string(file_of(30)).unwrap();
    text.push_str("{not json\n\n");
    std::fs::write(file_of(30), text).unwrap();
    let all = log.query(&EventFilter::default()).await.unwrap();
    assert_eq!(names(&all), ["old", "new"]);
    let recent = log
        .query(&EventFilter {
            since: Some(now - TimeDelta::days(1)),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(names(&recent), ["new"]);
}

#[tokio::test]
async fn a_missing_directory_has_no_events() {
    let dir = tempfile::tempdir().unwrap();
    let log = FsEventLog::new(dir.path().join("nowhere")).unwrap();
    assert!(log.query(&EventFilter::default()).await.unwrap().is_empty());
}

#[test]
fn recording_works_outside_a_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let log = FsEventLog::new(dir.path()).unwrap();
    log.record(event("Workflow", "w", EventType::Normal, Utc::now()));
    drop(log);
    // The writer finishes what was queued after the last clone is gone.
    let written = || {
        std::fs::read_dir(dir.path()).unwrap().any(|f| {
            std::fs::read_to_string(f.unwrap().path())
                .unwrap()
                .ends_with('\n')
        })
    };
    let mut waited = 0;
    while !written() {
        assert!(waited < 1000, "nothing was written");
        std::thread::sleep(std::time::Duration::from_millis(10));
        waited += 1;
    }
}

#[tokio::test]
async fn files_rotate_at_their_size_and_the_oldest_go_beyond_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let options = EventLogOptions {
        max_file_bytes: 4096,
        max_files: 3,
        max_message_bytes: 300,
        ..EventLogOptions::default()
    };
    let log = FsEventLog::with_options(dir.path(), options).unwrap();
    let now = Utc::now();
    for i in 0..200 {
        let mut e = event("Workflow", &format!("w{i}"), EventType::Normal, now);
        e.message = "m".repeat(if i == 199 { 100_000 } else { 50 });
        log.record(e);
    }
    log.flush().await.unwrap();
    let mut names_on_disk: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names_on_disk.sort();
    assert_eq!(names_on_disk.len(), 3, "{names_on_disk:?}");
    let day = now.format("%Y-%m-%d");
    assert!(names_on_disk.contains(&format!("events-{day}.json")));
    for name in &names_on_disk {
        let len = std::fs::metadata(dir.path().join(name)).unwrap().len();
        assert!(len <= 4096, "{name}: {len}");
    }
    // Queries span the rotated files, newest kept, in order.
    let all = log.query(&EventFilter::default()).await.unwrap();
    assert!(all.len() > 20 && all.len() < 200, "{}", all.len());
    let expected: Vec<String> = (200 - all.len()..200).map(|i| format!("w{i}")).collect();
    assert_eq!(names(&all), expected);
    let last = all.last().unwrap();
    assert!(last.message.len() <= 300, "long messages are cut");
    let three = log
        .query(&EventFilter {
            limit: Some(3),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(names(&three), ["w197", "w198", "w199"]);
    // Limits larger than the current file reach into the rotated ones.
    let many = log
        .query(&EventFilter {
            limit: Some(all.len() - 1),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(names(&many), expected[1..]);
}

#[tokio::test]
async fn a_limited_query_reads_the_end_of_a_huge_file_only() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let path = dir
        .path()
        .join(format!("events-{}.json", now.format("%Y-%m-%d")));
    // 64 GiB of nothing (a sparse file) before the three newest events: reading the whole
    // file would take minutes and more memory than the machine has.
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(64 << 30).unwrap();
    drop(file);
    let mut tail = String::from("\n");
    for name in ["x", "y", "z"] {
        tail.push_str(
            &serde_json::to_string(&event("Workflow", name, EventType::Normal, now)).unwrap(),
        );
        tail.push('\n');
    }
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(tail.as_bytes())
        .unwrap();
    let log = FsEventLog::new(dir.path()).unwrap();
    let three = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        log.query(&EventFilter {
            limit: Some(3),
            ..EventFilter::default()
        }),
    )
    .await
    .expect("reads from the end")
    .unwrap();
    assert_eq!(names(&three), ["x", "y", "z"]);
}

#[tokio::test]
async fn a_full_disk_loses_the_event_but_never_leaves_half_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = FsEventLog::new(dir.path()).unwrap();
    let now = Utc::now();
    log.record(event("Workflow", "before", EventType::Normal, now));
    log.flush().await.unwrap();
    crate::atomic::full_disk::fill(dir.path());
    log.record(event("Workflow", "lost", EventType::Normal, now));
    log.flush().await.unwrap();
    crate::atomic::full_disk::free(dir.path());
    log.record(event("Workflow", "after", EventType::Normal, now));
    let all = log.query(&EventFilter::default()).await.unwrap();
    assert_eq!(names(&all), ["before", "after"]);
    let path = dir
        .path()
        .join(format!("events-{}.json", now.format("%Y-%m-%d")));
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
}
