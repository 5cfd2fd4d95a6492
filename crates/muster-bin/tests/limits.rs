//! Bounded resources against the real `muster serve`: a runaway jq program neither blocks the
//! server nor its shutdown, in-flight runs are recorded when it stops, and the processes of
//! stdio servers do not outlive a killed muster.

#![allow(clippy::unwrap_used)]

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET /health` over a plain socket; `None` when no answer came within `timeout`.
fn health(port: u16, timeout: Duration) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

fn serve(dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_muster"))
        .args(["serve", "--config-path"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_healthy(port: u16) {
    for _ in 0..300 {
        if health(port, Duration::from_secs(1)).is_some_and(|a| a.contains("200 OK")) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("muster did not start");
}

fn config_dir(port: u16, workflows: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.yaml"),
        format!("aggregator:\n  port: {port}\n"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("workflows")).unwrap();
    std::fs::create_dir_all(dir.path().join("mcpservers")).unwrap();
    for (name, steps) in workflows {
        std::fs::write(
            dir.path().join(format!("workflows/{name}.yaml")),
            format!(
                "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: {name}\nspec:\n  steps:\n{steps}"
            ),
        )
        .unwrap();
    }
    dir
}

/// Starts `muster run workflow <name>` against the server, in the background.
fn run_workflow(port: u16, name: &str, home: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_muster"))
        .args(["run", "workflow", name, "--endpoint"])
        .arg(format!("http://localhost:{port}/mcp"))
        .env("HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits up to `limit` for `child` to exit; kills it and fails the test otherwise.
fn exits_within(child: &mut Child, limit: Duration, what: &str) {
    let deadline = std::time::SystemTime::now() + limit;
    while std::time::SystemTime::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("{what} did not exit within {limit:?}");
}

fn records(dir: &Path) -> Vec<serde_json::Value> {
    let Ok(entries) = std::fs::read_dir(dir.join("workflow_executions")) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect()
}

#[test]
fn a_runaway_jq_program_blocks_neither_health_nor_sigterm() {
    let port = free_port();
    let dir = config_dir(
        port,
        &[(
            "spin",
            "    - id: spin\n      tool: core_service_list\n      jq: 'last(range(700000000))'\n",
        )],
    );
    let home = tempfile::tempdir().unwrap();
    let mut server = serve(dir.path());
    wait_healthy(port);
    let mut client = run_workflow(port, "spin", home.path());
    // The run is under way (its record exists) and evaluating.
    for _ in 0..200 {
        if !records(dir.path()).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..3 {
        let answer = health(port, Duration::from_secs(2)).expect("/health answers while jq runs");
        assert!(answer.contains("{\"status\":\"ok\"}"), "{answer}");
    }
    nix_term(&server);
    exits_within(
        &mut server,
        Duration::from_secs(8),
        "muster serve after SIGTERM",
    );
    exits_within(&mut client, Duration::from_secs(10), "the client");
    let records = records(dir.path());
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["status"], "failed", "{:#}", records[0]);
}

fn nix_term(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn the_processes_of_stdio_servers_do_not_outlive_a_killed_muster() {
    let port = free_port();
    let dir = config_dir(port, &[]);
    let pids = dir.path().join("pids");
    // A real MCP server (the Python SDK's) that starts a grandchild first; both record their
    // pids.
    let deps = std::env::var_os("MUSTER_TEST_DEPS").map_or_else(
        || Path::new(&std::env::var_os("HOME").unwrap()).join(".cache/muster-test-deps"),
        std::path::PathBuf::from,
    );
    let python = deps.join("venv/bin/python");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../muster-aggregator/tests/fixtures/py_server.py");
    let script = format!(
        "sleep 1000 & echo $! >> {p}; echo $$ >> {p}; exec {py} {fixture}",
        p = pids.display(),
        py = python.display(),
        fixture = fixture.display()
    );
    std::fs::write(
        dir.path().join("mcpservers/spawner.yaml"),
        format!(
            "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: spawner\nspec:\n  type: stdio\n  command: sh\n  args: ['-c', {script:?}]\n  autoStart: true\n"
        ),
    )
    .unwrap();
    let mut server = serve(dir.path());
    wait_healthy(port);
    let read_pids = || -> Vec<i32> {
        std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    };
    for _ in 0..200 {
        if read_pids().len() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let started = read_pids();
    assert!(started.len() >= 2, "{started:?}");
    // Connected: the server is up and running, muster has no reason to stop it.
    for _ in 0..300 {
        let listed =
            std::fs::read_to_string(dir.path().join("mcpservers/spawner.yaml")).unwrap_or_default();
        if listed.contains("state: running") || listed.contains("state: Running") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let alive = |pid: i32| Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid);
    assert!(started.iter().all(|p| alive(*p)));
    server.kill().unwrap();
    server.wait().unwrap();
    // The server process dies with muster (the death signal)...
    let server_pid = started[1];
    wait_until(|| !alive(server_pid), "the stdio server dies with muster");
    // ...its grandchild is reaped by the next muster.
    let mut next = serve(dir.path());
    wait_healthy(port);
    wait_until(
        || started.iter().all(|p| !alive(*p)),
        "the next muster reaps the grandchild",
    );
    // The next one's own server dies with it too (its grandchild waits for the muster after).
    for _ in 0..200 {
        if read_pids().len() >= 4 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let second = read_pids();
    next.kill().unwrap();
    next.wait().unwrap();
    wait_until(
        || !alive(second[3]),
        "the second stdio server dies with muster",
    );
    let _ = Command::new("kill").arg(second[2].to_string()).status();
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rfind(')')
                .map(|i| s[i + 1..].trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

fn wait_until(done: impl Fn() -> bool, what: &str) {
    for _ in 0..200 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what}: not within 10 s");
}
