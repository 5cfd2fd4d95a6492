//! Running muster in production: `/health` and `/ready` of a real `muster serve`.

#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use muster_tests::{ConfigDir, MusterConfig, deps, free_port};
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

/// A real Prometheus (Debian's `prometheus`) scraping one target every second, with its
/// data in a temporary directory.
struct Prometheus {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn scraping(target: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: muster\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port().unwrap();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = std::process::Command::new(prometheus_binary())
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("prometheus starts (Debian package `prometheus`, installed by .ci/run)");
        Self {
            child,
            port,
            _dir: dir,
        }
    }

    /// The result vector of the instant query `promql`, or `None` while Prometheus is not
    /// up.
    fn query(&self, promql: &str) -> Option<Vec<Value>> {
        let url = url::Url::parse_with_params(
            &format!("http://127.0.0.1:{}/api/v1/query", self.port),
            [("query", promql)],
        )
        .unwrap();
        let response = reqwest::blocking::get(url).ok()?;
        let body: Value = response.json().ok()?;
        assert_eq!(body["status"], "success", "{promql}: {body}");
        body["data"]["result"].as_array().cloned()
    }

    /// The single value of `promql` once it has one.
    fn value(&self, promql: &str, accept: impl Fn(f64) -> bool) -> f64 {
        eventually(promql, Duration::from_secs(60), || {
            let result = self.query(promql)?;
            let value: f64 = result.first()?["value"][1].as_str()?.parse().ok()?;
            accept(value).then_some(value)
        })
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `prometheus` on PATH, or Debian's.
fn prometheus_binary() -> std::path::PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("prometheus"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| "/usr/bin/prometheus".into())
}

#[test]
fn prometheus_scrapes_call_counters_and_latency_quantiles() {
    let dir = MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .expect_tool("x_everything_echo")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    for i in 0..5 {
        let envelope = client
            .call(
                "x_everything_echo",
                serde_json::json!({"message": format!("m{i}")}),
            )
            .unwrap();
        assert!(!envelope.is_error, "{}", envelope.text());
    }
    let failed = client
        .call("x_everything_no_such_tool", serde_json::json!({}))
        .unwrap();
    assert!(failed.is_error);

    // The exposition itself, as Prometheus reads it.
    let (status, text) = get(&dir, "/metrics");
    assert_eq!(status, 200);
    assert!(
        text.contains(
            "muster_tool_calls_total{server=\"everything\",kind=\"server\",outcome=\"ok\"} 5\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("muster_mcpserver_state{server=\"everything\",state=\"running\"} 1\n"),
        "{text}"
    );
    // This client's session, plus those of the readiness polls of the start, which may
    // still be open.
    let sessions: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("muster_sessions_active "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(sessions >= 1.0, "{text}");
    assert!(
        text.contains("muster_meta_tool_calls_total{tool=\"call_tool\",outcome=\"error\"} 1\n"),
        "{text}"
    );

    let prometheus = Prometheus::scraping(&format!("127.0.0.1:{}", dir.port()));
    let calls = prometheus.value(
        r#"muster_tool_calls_total{job="muster",server="everything",kind="server",outcome="ok"}"#,
        |v| v >= 5.0,
    );
    assert_eq!(calls, 5.0, "{}", prometheus.log());
    let p99 = prometheus.value(
        r#"histogram_quantile(0.99, sum by (le) (muster_tool_call_duration_seconds_bucket{server="everything"}))"#,
        f64::is_finite,
    );
    assert!(p99 > 0.0 && p99 <= 60.0, "p99 {p99}");
    let state = prometheus.value(
        r#"muster_mcpserver_state{server="everything",state="running"}"#,
        |v| v == 1.0,
    );
    assert_eq!(state, 1.0);
    let tools = prometheus.value(r#"muster_catalog_items{kind="tool"}"#, |v| v > 0.0);
    assert!(tools >= 1.0);
}
