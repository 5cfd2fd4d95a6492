//! Lifecycle rules that need no server: refusals, backoff schedule, options.

use std::time::Duration;

use muster_aggregator::backend::{
    Backend, BackendOptions, Backoff, ENV_INITIAL_BACKOFF, ENV_MAX_BACKOFF, ServiceState,
};
use muster_core::tool::ToolProvider;

use super::support::*;

#[test]
fn backoff_schedule_doubles_from_30s_up_to_2m() {
    let b = Backoff::default();
    let schedule: Vec<u64> = (1..=6).map(|n| b.delay(n).as_secs()).collect();
    assert_eq!(schedule, [30, 60, 120, 120, 120, 120]);
}

#[test]
fn backoff_comes_from_the_environment_as_go_durations() {
    let options = BackendOptions::from_vars(|v| match v {
        ENV_INITIAL_BACKOFF => Some("1s".to_owned()),
        ENV_MAX_BACKOFF => Some("2m".to_owned()),
        _ => None,
    })
    .unwrap();
    assert_eq!(options.backoff.initial, Duration::from_secs(1));
    assert_eq!(options.backoff.max, Duration::from_secs(120));
    let options =
        BackendOptions::from_vars(|v| (v == ENV_INITIAL_BACKOFF).then(|| " 500ms ".to_owned()))
            .unwrap();
    assert_eq!(options.backoff.initial, Duration::from_millis(500));
}

#[tokio::test(start_paused = true)]
async fn retries_follow_the_backoff_in_paused_time() {
    // A refused port: every attempt fails at once; the retry loop runs on tokio time.
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let options = options().with_backoff(Backoff::new(
        Duration::from_secs(30),
        Duration::from_secs(120),
    ));
    let backend = Backend::new("paused", http_spec(url), options);
    backend.start().await.unwrap_err();
    assert_eq!(backend.snapshot().consecutive_failures, 1);
    for (failures, state) in [
        (2, ServiceState::Failed),
        (3, ServiceState::Unreachable),
        (4, ServiceState::Unreachable),
    ] {
        let snapshot = wait_until_for(&backend, "the next retry", Duration::from_secs(600), |s| {
            s.consecutive_failures == failures
        })
        .await;
        assert_eq!(snapshot.state, state);
    }
    backend.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_backend_refuses_a_second_start() {
    let backend = Backend::new("py", py_stdio(), options());
    backend.start().await.unwrap();
    let error = backend.start().await.unwrap_err();
    assert_eq!(error.to_string(), "service py is already running");
    assert_eq!(backend.name(), "py");
    backend.stop().await;
}

#[tokio::test]
async fn a_new_backend_is_unknown_and_empty() {
    let backend = Backend::new("idle", py_stdio(), options());
    let snapshot = backend.snapshot();
    assert_eq!(snapshot.state, ServiceState::Unknown);
    assert!(!snapshot.client_ready);
    assert!(backend.catalog().tools.is_empty());
    backend.stop().await;
    assert_eq!(backend.snapshot().state, ServiceState::Stopped);
}

#[tokio::test]
async fn a_refused_connection_says_what_to_check_not_which_type_failed() {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let backend = Backend::new("refused", http_spec(url.clone()), options());
    let error = backend.start().await.unwrap_err().to_string();
    backend.stop().await;
    eprintln!("{error}");
    for internal in [
        "Transport [",
        "muster_aggregator::",
        "rmcp::",
        "ProgressTap",
        "Worker",
    ] {
        assert!(!error.contains(internal), "names a Rust type: {error}");
    }
    assert!(error.contains(&url), "names the url: {error}");
    assert!(
        error.to_ascii_lowercase().contains("connection refused"),
        "says what happened: {error}"
    );
    assert!(
        error.contains("check that the server is running"),
        "says what to do: {error}"
    );
}
