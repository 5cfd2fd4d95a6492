//! Running muster in production: `/health` and `/ready` of a real `muster serve`.

#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use muster_tests::{ConfigDir, MusterConfig, deps};
use serde_json::Value;
use tokio::time::Instant;

/// `GET <path>` on muster's port: status and body.
fn get(dir: &ConfigDir, path: &str) -> (u16, String) {
    let response =
        reqwest::blocking::get(format!("http://127.0.0.1:{}{path}", dir.port())).unwrap();
    (response.status().as_u16(), response.text().unwrap())
}

/// Polls `f` until it returns `Some`, for up to `timeout`.
fn eventually<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn ready_names_a_failed_server_as_degraded_and_stays_in_rotation() {
    let dir = MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .stdio_server(
            "broken",
            "/nonexistent/muster-test-command",
            Vec::<String>::new(),
        )
        .expect_tool("x_everything_echo")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();

    let (status, body) = get(&dir, "/health");
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));

    let body: Value = eventually("the broken server to fail", Duration::from_secs(20), || {
        let (status, body) = get(&dir, "/ready");
        let body: Value = serde_json::from_str(&body).unwrap();
        (status == 200 && body["status"] == "degraded").then_some(body)
    });
    let checks = body["checks"].as_array().unwrap();
    let names: Vec<&str> = checks.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["config", "filesystem", "mcpservers"], "{body}");
    assert_eq!(checks[0]["status"], "ok");
    assert_eq!(checks[1]["status"], "ok");
    assert_eq!(checks[2]["status"], "degraded");
    assert_eq!(
        checks[2]["message"],
        "1 of 2 not running: broken (failed)",
        "{body}\n{}",
        muster.log()
    );
}

#[test]
fn ready_fails_when_the_config_directory_goes_away() {
    let dir = MusterConfig::new().write().unwrap();
    let _muster = dir.start().unwrap();
    let (status, body) = get(&dir, "/ready");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["status"],
        "ready"
    );

    std::fs::remove_dir_all(dir.path()).unwrap();
    let (status, body) = get(&dir, "/ready");
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["status"], "not_ready");
    assert_eq!(body["checks"][1]["name"], "filesystem");
    assert_eq!(body["checks"][1]["status"], "failed");
    assert!(
        body["checks"][1]["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot read "),
        "{body}"
    );
}
