//! The client commands, the agent bridge and the progress display, against a real
//! `muster serve` with a stdio MCP server (`mcp-server-everything`) and a workflow.
//!
//! The MCP server and the Python MCP SDK come from `$MUSTER_TEST_DEPS` (default
//! `$HOME/.cache/muster-test-deps`): `node_modules/.bin/mcp-server-everything` and
//! `venv/bin/python` with the `mcp` package.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

const WORKFLOW: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: greet
spec:
  description: Greet twice
  args:
    name:
      type: string
      required: true
  steps:
    - id: hello
      tool: x_everything_echo
      args:
        message: 'hello {{ .input.name }}'
    - id: goodbye
      tool: x_everything_echo
      args:
        message: 'goodbye {{ .input.name }}'
";

fn deps() -> PathBuf {
    std::env::var_os("MUSTER_TEST_DEPS").map_or_else(
        || {
            std::env::var_os("HOME")
                .map_or_else(|| PathBuf::from("."), PathBuf::from)
                .join(".cache/muster-test-deps")
        },
        PathBuf::from,
    )
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `muster serve` on its own config directory and port; killed on drop.
struct Server {
    dir: TempDir,
    home: TempDir,
    port: u16,
    child: Option<Child>,
}

impl Server {
    fn start() -> Self {
        let mut server = Self::prepare();
        server.spawn();
        server
    }

    /// The config directory with the everything server and the workflow, not served yet.
    fn prepare() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        std::fs::write(
            dir.path().join("config.yaml"),
            format!("aggregator:\n  host: localhost\n  port: {port}\n"),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("mcpservers")).unwrap();
        std::fs::create_dir_all(dir.path().join("workflows")).unwrap();
        let everything = deps().join("node_modules/.bin/mcp-server-everything");
        std::fs::write(
            dir.path().join("mcpservers/everything.yaml"),
            format!(
                "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  \
                 name: everything\nspec:\n  type: stdio\n  command: {}\n  autoStart: true\n",
                everything.display()
            ),
        )
        .unwrap();
        std::fs::write(dir.path().join("workflows/greet.yaml"), WORKFLOW).unwrap();
        Self {
            dir,
            home: tempfile::tempdir().unwrap(),
            port,
            child: None,
        }
    }

    fn spawn(&mut self) {
        let child = Command::new(env!("CARGO_BIN_EXE_muster"))
            .args(["serve", "--config-path"])
            .arg(self.dir.path())
            .env("HOME", self.home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.log())
                    .unwrap(),
            ))
            .spawn()
            .unwrap();
        self.child = Some(child);
        self.wait_ready();
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Where the server's stderr goes.
    fn log(&self) -> PathBuf {
        self.home.path().join("serve.log")
    }

    fn endpoint(&self) -> String {
        format!("http://localhost:{}/mcp", self.port)
    }

    /// Waits until the MCP server runs and the workflow is available.
    fn wait_ready(&self) {
        for attempt in 0.. {
            let servers = self.muster(&["list", "mcpserver", "--no-headers"]);
            let workflows = self.muster(&["list", "workflow", "--no-headers"]);
            if stdout(&servers).contains("Running") && stdout(&workflows).contains("true") {
                return;
            }
            assert!(
                attempt < 300,
                "muster did not become ready: {}{}",
                stdout(&servers),
                stderr(&servers)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Runs the CLI against this server.
    fn muster(&self, args: &[&str]) -> Output {
        cli(self.home.path())
            .args(args)
            .args(["--endpoint", &self.endpoint()])
            .output()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The CLI with a private HOME and no endpoint variables.
fn cli(home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_muster"));
    command
        .env("HOME", home)
        .env_remove("MUSTER_ENDPOINT")
        .env_remove("MUSTER_CONTEXT")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    command
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[track_caller]
fn assert_ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        stdout(output),
        stderr(output)
    );
    stdout(output)
}

#[track_caller]
fn assert_fails(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(1), "stdout: {}", stdout(output));
    stderr(output)
}

fn json(output: &Output) -> Value {
    serde_json::from_str(&assert_ok(output)).unwrap()
}

/// The first line of a table split into its columns.
fn columns(line: &str) -> Vec<&str> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn client_commands_against_a_running_server() {
    let server = Server::start();

    // list
    let table = assert_ok(&server.muster(&["list", "mcpserver"]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(columns(lines[0]), ["NAME", "STATE", "SESSION", "TYPE"]);
    assert_eq!(columns(lines[1]), ["everything", "Running", "-", "stdio"]);
    let state_column = lines[0].find("STATE").unwrap();
    assert_eq!(
        lines[1].find("Running"),
        Some(state_column),
        "aligned:\n{table}"
    );
    let bare = assert_ok(&server.muster(&["list", "mcpservers", "--no-headers"]));
    assert!(bare.starts_with("everything"), "{bare}");
    let servers = json(&server.muster(&["list", "mcpserver", "-o", "json"]));
    assert_eq!(servers["mcpServers"][0]["name"], "everything");
    let yaml = assert_ok(&server.muster(&["list", "mcpserver", "-o", "yaml"]));
    assert!(yaml.contains("name: everything"), "{yaml}");
    let wide = assert_ok(&server.muster(&["list", "mcpserver", "-o", "wide"]));
    assert!(
        wide.contains("AUTOSTART") && wide.contains("mcp-server-everything"),
        "{wide}"
    );

    let services = assert_ok(&server.muster(&["list", "service"]));
    assert!(
        services.contains("mcp-aggregator") && services.contains("everything"),
        "{services}"
    );
    let workflows = assert_ok(&server.muster(&["list", "workflow"]));
    assert!(
        workflows.contains("greet") && workflows.contains("Greet twice"),
        "{workflows}"
    );
    let tools = assert_ok(&server.muster(&["list", "tool", "--filter", "x_*_echo"]));
    assert_eq!(tools.lines().count(), 2, "{tools}");
    assert!(tools.contains("x_everything_echo"), "{tools}");

    // get
    let get = assert_ok(&server.muster(&["get", "mcpserver", "everything"]));
    assert!(
        get.contains("name: everything") && get.contains("state: Running"),
        "{get}"
    );
    let status = json(&server.muster(&["get", "service", "everything", "-o", "json"]));
    assert_eq!(status["state"], "running");
    let missing = assert_fails(&server.muster(&["get", "service", "nope"]));
    assert!(missing.contains("service nope not found"), "{missing}");

    // call
    let echo = assert_ok(&server.muster(&["call", "x_everything_echo", "--arg", "message=hi"]));
    assert_eq!(echo.trim(), "Echo: hi");
    let echo = json(&server.muster(&[
        "call",
        "x_everything_echo",
        "--json",
        r#"{"message": "json"}"#,
        "-o",
        "json",
    ]));
    assert_eq!(echo["isError"], false);
    assert_eq!(echo["content"][0]["text"], "Echo: json");
    let listed = assert_ok(&server.muster(&["call", "core_service_list"]));
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert!(listed["total"].as_u64().unwrap() >= 2);
    let unknown = assert_fails(&server.muster(&["call", "x_everything_nope"]));
    assert!(unknown.contains("error:"), "{unknown}");

    // stop, check, start
    let stopped = assert_ok(&server.muster(&["stop", "everything"]));
    assert!(
        stopped.contains("Successfully stopped service 'everything'"),
        "{stopped}"
    );
    assert_fails(&server.muster(&["check", "mcpserver", "everything"]));
    let started = assert_ok(&server.muster(&["start", "service", "everything"]));
    assert!(started.contains("everything"), "{started}");
    let checked = assert_ok(&server.muster(&["check", "mcpserver", "everything"]));
    assert!(checked.contains("running"), "{checked}");
    server.wait_ready();
    assert_ok(&server.muster(&["check", "workflow", "greet"]));

    // run (no terminal: plain lines), and the original's spelling
    let run = server.muster(&[
        "run", "workflow", "greet", "--arg", "name=bob", "-o", "json",
    ]);
    let result: Value = serde_json::from_str(&assert_ok(&run)).unwrap();
    assert_eq!(result["status"], "completed");
    let progress = stderr(&run);
    assert!(progress.contains("step hello completed"), "{progress}");
    assert!(progress.contains("step goodbye completed"), "{progress}");
    let call = json(&server.muster(&["call", "workflow_greet", "--arg", "name=ann", "-o", "json"]));
    assert_eq!(call["isError"], false);
    let failed = assert_fails(&server.muster(&["run", "workflow", "greet"]));
    assert!(failed.contains("error:"), "{failed}");
    // The original's `--KEY=VALUE` flags, and the result as tables.
    let table =
        assert_ok(&server.muster(&["start", "workflow", "greet", "--name=eve", "-o", "table"]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        columns(lines[0]),
        ["EXECUTION", "WORKFLOW", "STATUS"],
        "{table}"
    );
    assert_eq!(columns(lines[1])[1..], ["greet", "completed"], "{table}");
    assert_eq!(columns(lines[3]), ["STEP", "TOOL", "STATUS"], "{table}");
    assert_eq!(
        columns(lines[4]),
        ["hello", "x_everything_echo", "completed"],
        "{table}"
    );
    assert_eq!(
        columns(lines[5]),
        ["goodbye", "x_everything_echo", "completed"],
        "{table}"
    );
    assert!(!table.contains('{'), "no JSON in a table: {table}");
    let run = json(&server.muster(&["run", "workflow", "greet", "--name=joe", "-o", "json"]));
    assert_eq!(run["input"]["name"], "joe");

    // executions and events
    let executions = assert_ok(&server.muster(&["list", "execution"]));
    assert!(executions.starts_with("ID"), "{executions}");
    assert!(
        executions.contains("greet") && executions.contains("completed"),
        "{executions}"
    );
    let events =
        assert_ok(&server.muster(&["events", "--resource-type", "Workflow", "--limit", "5"]));
    assert!(events.starts_with("TIME"), "{events}");
    assert!(events.contains("greet"), "{events}");
    let events = json(&server.muster(&["events", "-o", "json", "--limit", "2"]));
    assert_eq!(events.as_array().unwrap().len(), 2);

    // create from flags and from a file
    let created = assert_ok(&server.muster(&[
        "create",
        "mcpserver",
        "second",
        "--type",
        "stdio",
        "--command",
        "/bin/true",
        "--description",
        "never started",
    ]));
    assert!(
        created.contains("MCP server 'second' created successfully"),
        "{created}"
    );
    let file = server.home.path().join("remote.yaml");
    std::fs::write(
        &file,
        "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: remote\n\
         spec:\n  type: streamable-http\n  url: http://127.0.0.1:9/mcp\n",
    )
    .unwrap();
    let created = assert_ok(&server.muster(&["create", "-f", file.to_str().unwrap()]));
    assert!(created.contains("'remote' created"), "{created}");
    let duplicate = assert_fails(&server.muster(&["create", "-f", file.to_str().unwrap()]));
    assert!(duplicate.contains("already exists"), "{duplicate}");
    let all = json(&server.muster(&["list", "mcpserver", "--all", "-o", "json"]));
    let names: Vec<&str> = all["mcpServers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"second") && names.contains(&"remote"),
        "{names:?}"
    );
    // A server that never ran is `stopped` / `disconnected` as a service, as it is
    // `Stopped` / `Disconnected` as an MCP server: never `unknown`.
    // The reconciler registers new definitions after the watch's debounce: wait for both.
    let mut services = json(&server.muster(&["list", "service", "-o", "json"]));
    let mut attempts = 0;
    while attempts < 300
        && !["second", "remote"].iter().all(|n| {
            services["services"]
                .as_array()
                .is_some_and(|a| a.iter().any(|s| s["name"] == *n))
        })
    {
        std::thread::sleep(Duration::from_millis(200));
        attempts += 1;
        services = json(&server.muster(&["list", "service", "-o", "json"]));
    }
    let state = |name: &str| {
        services["services"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["state"].clone())
    };
    assert_eq!(state("second"), Some(Value::from("stopped")), "{services}");
    assert_eq!(
        state("remote"),
        Some(Value::from("disconnected")),
        "{services}"
    );
    let table = assert_ok(&server.muster(&["list", "service"]));
    assert!(
        table.lines().all(|line| columns(line)[2] != "unknown"),
        "{table}"
    );

    // Starting a server nothing answers at says what happened and what to check, in words,
    // never which Rust types the error passed through.
    let refused = assert_fails(&server.muster(&["start", "service", "remote"]));
    for internal in [
        "Transport [",
        "muster_aggregator::",
        "rmcp::",
        "ProgressTap",
    ] {
        assert!(!refused.contains(internal), "names a Rust type: {refused}");
    }
    assert!(
        refused.contains("cannot reach the server http://127.0.0.1:9/mcp"),
        "{refused}"
    );
    assert!(
        refused.contains("check that the server is running"),
        "{refused}"
    );
    assert_ok(&server.muster(&["stop", "remote"]));

    // A workflow from flags.
    let created = assert_ok(&server.muster(&[
        "create",
        "workflow",
        "shout",
        "--description",
        "Echo once",
        "--step",
        "say=x_everything_echo",
        "--required",
        "message",
    ]));
    assert!(
        created.contains("Workflow created successfully"),
        "{created}"
    );
    let shout = json(&server.muster(&["get", "workflow", "shout", "-o", "json"]));
    let text = shout.to_string();
    assert!(
        text.contains("x_everything_echo") && text.contains("Echo once"),
        "{text}"
    );
    let missing = assert_fails(&server.muster(&["create", "workflow", "empty"]));
    assert!(missing.contains("--step ID=TOOL"), "{missing}");

    follow_events(&server);
}

/// How long `events --follow` may take to show an event on a loaded machine.
const FOLLOW_PATIENCE: Duration = Duration::from_secs(120);

/// `events --follow` prints events that happen after it started, one JSON object a line.
fn follow_events(server: &Server) {
    let mut follower = cli(server.home.path())
        .args([
            "events",
            "-f",
            "-o",
            "json",
            "--limit",
            "1",
            "--resource-name",
            "everything",
        ])
        .args(["--endpoint", &server.endpoint()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = follower.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // The snapshot (a JSON array) comes first. Once it is printed, the server streams every
    // later event to the follower's session, so the stop below cannot be missed: wait for
    // it as long as a loaded machine needs, not for a fixed short time.
    let deadline = tokio::time::Instant::now() + FOLLOW_PATIENCE;
    let next_line = || {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        rx.recv_timeout(left).ok()
    };
    let mut snapshot = String::new();
    while !snapshot.ends_with(']') {
        snapshot = next_line().expect("the snapshot of events --follow");
    }
    assert_ok(&server.muster(&["stop", "everything"]));
    let mut stopped = false;
    while let Some(line) = next_line() {
        let event: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(event["resource_name"], "everything");
        if event["reason"] == "MCPServerStopped" {
            assert_eq!(
                event["message"],
                "MCPServer everything service stopped successfully"
            );
            stopped = true;
            break;
        }
    }
    let _ = follower.kill();
    let _ = follower.wait();
    assert!(stopped, "no MCPServerStopped event was followed");
    assert_ok(&server.muster(&["start", "everything"]));
    server.wait_ready();
}

#[test]
fn a_repeated_key_in_config_yaml_is_placed_and_a_failed_reload_is_logged() {
    let server = Server::start();
    let config = server.dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "aggregator:\n  host: localhost\n  port: {port}\n  musterPrefix: x\n  port: {port}\n",
            port = server.port
        ),
    )
    .unwrap();
    let failed = assert_fails(&server.muster(&["call", "core_config_reload"]));
    assert!(
        failed.contains("5:3: aggregator: duplicate field `port` (first at line 3)"),
        "{failed}"
    );
    let log = std::fs::read_to_string(server.log()).unwrap();
    assert!(
        log.contains("config.yaml was not reloaded") && log.contains("5:3"),
        "{log}"
    );
    let validate = cli(server.home.path())
        .args(["validate", "--config-path"])
        .arg(server.dir.path())
        .output()
        .unwrap();
    let report = stdout(&validate);
    assert!(report.contains("(line 5, column 3)"), "{report}");
}

#[test]
fn contexts_choose_the_endpoint() {
    let server = Server::start();
    let home = server.home.path();
    let listed = cli(home).args(["context", "list"]).output().unwrap();
    assert!(
        stderr(&listed).contains("No contexts"),
        "{}",
        stderr(&listed)
    );
    assert_ok(
        &cli(home)
            .args(["context", "add", "local", "--endpoint", &server.endpoint()])
            .output()
            .unwrap(),
    );
    let down = format!("http://localhost:{}/mcp", free_port());
    assert_ok(
        &cli(home)
            .args(["context", "add", "down", "--endpoint", &down])
            .output()
            .unwrap(),
    );
    let listed = assert_ok(&cli(home).args(["context", "list"]).output().unwrap());
    assert!(
        listed
            .lines()
            .any(|l| columns(l) == ["*", "local", &server.endpoint()]),
        "{listed}"
    );
    let contexts = std::fs::read_to_string(home.join(".config/muster/contexts.yaml")).unwrap();
    assert!(contexts.contains("current-context: local"), "{contexts}");

    // The current context is used without flags.
    let table = assert_ok(&cli(home).args(["list", "service"]).output().unwrap());
    assert!(table.contains("mcp-aggregator"), "{table}");
    // --context and MUSTER_CONTEXT beat it; --endpoint beats them.
    let error = assert_fails(
        &cli(home)
            .args(["list", "service", "--context", "down"])
            .output()
            .unwrap(),
    );
    assert!(
        error.contains(&format!(
            "cannot reach muster at {down}: is `muster serve` running?"
        )),
        "{error}"
    );
    let error = assert_fails(
        &cli(home)
            .args(["list", "service"])
            .env("MUSTER_CONTEXT", "down")
            .output()
            .unwrap(),
    );
    assert!(error.contains(&down), "{error}");
    assert_ok(
        &cli(home)
            .args([
                "list",
                "service",
                "--context",
                "down",
                "--endpoint",
                &server.endpoint(),
            ])
            .output()
            .unwrap(),
    );
    assert_ok(&cli(home).args(["context", "use", "down"]).output().unwrap());
    let current = assert_ok(&cli(home).args(["context", "current"]).output().unwrap());
    assert_eq!(current.trim(), "down");
    let error = assert_fails(&cli(home).args(["context", "use", "nope"]).output().unwrap());
    assert!(error.contains("known contexts: local, down"), "{error}");

    // Without contexts the endpoint comes from config.yaml of --config-path.
    assert_ok(
        &cli(home)
            .args(["context", "delete", "down"])
            .output()
            .unwrap(),
    );
    assert_ok(
        &cli(home)
            .args(["context", "delete", "local"])
            .output()
            .unwrap(),
    );
    let table = cli(home)
        .args(["list", "service", "--config-path"])
        .arg(server.dir.path())
        .output()
        .unwrap();
    assert!(assert_ok(&table).contains("mcp-aggregator"));
}

#[test]
fn an_unreachable_server_is_explained() {
    let home = tempfile::tempdir().unwrap();
    let endpoint = format!("http://localhost:{}/mcp", free_port());
    let output = cli(home.path())
        .args(["list", "mcpserver", "--endpoint", &endpoint])
        .output()
        .unwrap();
    let error = assert_fails(&output);
    assert!(
        error.contains(&format!(
            "cannot reach muster at {endpoint}: is `muster serve` running?"
        )),
        "{error}"
    );
}

#[test]
fn agent_bridge_serves_an_mcp_client_and_survives_a_restart() {
    let mut server = Server::start();
    let python = deps().join("venv/bin/python");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bridge_client.py");
    let mut client = Command::new(python)
        .arg(script)
        .args([
            env!("CARGO_BIN_EXE_muster"),
            &server.endpoint(),
            "--restart",
        ])
        .env("HOME", server.home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(client.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let done = line == "waiting for restart";
        seen.push(line);
        if done {
            break;
        }
    }
    let seen = seen.join("\n");
    assert!(seen.contains("server: muster-aggregator"), "{seen}");
    assert!(
        seen.contains(
            "tools: call_tool,describe_prompt,describe_resource,describe_tool,filter_tools"
        ),
        "{seen}"
    );
    assert!(
        seen.contains("services: everything,mcp-aggregator"),
        "{seen}"
    );
    assert!(seen.contains("echo: Echo: hi"), "{seen}");
    assert!(
        seen.contains("waiting for restart"),
        "client failed:\n{seen}"
    );

    server.kill();
    server.spawn();
    let mut stdin = client.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    drop(stdin);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = client.wait().unwrap();
    let mut errors = String::new();
    std::io::Read::read_to_string(&mut client.stderr.take().unwrap(), &mut errors).unwrap();
    assert!(status.success(), "{rest:?}\n{errors}");
    assert_eq!(rest, ["echo after restart: Echo: again"], "{errors}");
}

#[test]
fn run_workflow_shows_live_progress_on_a_terminal() {
    let server = Server::start();
    let python = deps().join("venv/bin/python");
    // pty.spawn gives the command a terminal and copies what it writes to our stdout.
    let output = Command::new(python)
        .args(["-c", "import pty, sys; pty.spawn(sys.argv[1:])"])
        .args([
            env!("CARGO_BIN_EXE_muster"),
            "run",
            "workflow",
            "greet",
            "--arg",
            "name=tty",
            "--endpoint",
            &server.endpoint(),
        ])
        .env("HOME", server.home.path())
        .env_remove("MUSTER_ENDPOINT")
        .env_remove("MUSTER_CONTEXT")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let screen = stdout(&output);
    assert!(output.status.success(), "{screen}\n{}", stderr(&output));
    assert!(screen.contains("running workflow greet"), "{screen:?}");
    assert!(screen.contains("✓ hello completed"), "{screen:?}");
    assert!(screen.contains("✓ goodbye completed"), "{screen:?}");
    assert!(
        screen.contains("\r\x1b[2K"),
        "the status line is redrawn: {screen:?}"
    );
    // The result prints as tables by default.
    assert!(
        screen.contains("EXECUTION") && screen.contains("STEP") && screen.contains("goodbye"),
        "{screen:?}"
    );
}

/// A REPL process: commands go to its stdin, its stdout lines come through a channel.
struct Repl {
    child: Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Repl {
    fn start(server: &Server) -> Self {
        let mut child = cli(server.home.path())
            .args(["agent", "--repl", "--endpoint", &server.endpoint()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if tx.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    /// Sends one command line.
    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The lines up to and including the first that contains `needle`.
    #[track_caller]
    fn until(&self, needle: &str) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + FOLLOW_PATIENCE;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let Ok(line) = self.lines.recv_timeout(left) else {
                panic!("no line with {needle:?} came; saw:\n{}", seen.join("\n"));
            };
            let found = line.contains(needle);
            seen.push(line);
            if found {
                return seen;
            }
        }
    }
}

impl Repl {
    /// The first column of the first row of the table whose header starts with `header`.
    #[track_caller]
    fn first_cell(&self, header: &str) -> String {
        self.until(header);
        let row = self.lines.recv_timeout(FOLLOW_PATIENCE).unwrap();
        columns(&row)[0].to_owned()
    }
}

#[test]
fn agent_repl_lists_describes_calls_and_shows_notifications() {
    let server = Server::start();
    let mut repl = Repl::start(&server);
    repl.until("Connected to muster-aggregator");

    repl.send("list tools");
    let tools = repl.until("x_everything_echo");
    assert!(tools.iter().any(|l| l.starts_with("NAME")), "{tools:?}");

    repl.send("describe tool x_everything_echo");
    repl.until("\"inputSchema\"");

    repl.send(r#"call x_everything_echo {"message": "hi from the repl"}"#);
    repl.until("Echo: hi from the repl");

    repl.send("list resources");
    let uri = repl.first_cell("URI");
    assert!(uri.contains("://"), "{uri}");
    repl.send(&format!("describe resource {uri}"));
    repl.until(&format!("\"uri\": \"{uri}\""));
    // Its contents; an error would show on stderr, checked at the end.
    repl.send(&format!("get {uri}"));
    repl.send("list prompts");
    let prompt = repl.first_cell("NAME");
    repl.send(&format!("describe prompt {prompt}"));
    repl.until(&format!("\"name\": \"{prompt}\""));

    repl.send("filter tools core_service_* stop");
    repl.until("core_service_stop");

    // Followed events arrive as notifications of the REPL's session.
    repl.send(r#"call core_events {"follow": true, "limit": 1}"#);
    repl.until("]");
    repl.send(r#"call core_service_stop {"name": "everything"}"#);
    let notes = repl.until("MCPServerStopped");
    let note = notes.last().unwrap();
    assert!(
        note.starts_with("notification: notifications/muster/event {"),
        "{note}"
    );

    repl.send("frobnicate");
    repl.send("exit");
    let status = repl.child.wait().unwrap();
    let mut errors = String::new();
    std::io::Read::read_to_string(&mut repl.child.stderr.take().unwrap(), &mut errors).unwrap();
    assert!(status.success(), "{errors}");
    let error_lines: Vec<&str> = errors.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        error_lines,
        ["error: unknown command \"frobnicate\"; `help` lists the commands"],
        "{errors}"
    );
}

#[test]
fn standalone_serves_an_ide_on_stdio_and_stops_with_it() {
    let server = Server::prepare();
    let python = deps().join("venv/bin/python");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bridge_client.py");
    let output = Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_muster"))
        .arg("--standalone")
        .arg(server.dir.path())
        .env("HOME", server.home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let seen = stdout(&output);
    assert!(output.status.success(), "{seen}\n{}", stderr(&output));
    assert!(seen.contains("server: muster-aggregator"), "{seen}");
    assert!(
        seen.contains("services: everything,mcp-aggregator"),
        "{seen}"
    );
    assert!(seen.contains("echo: Echo: hi"), "{seen}");
    // The IDE is gone, and so is the server: its port is free again.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", server.port)).is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "muster standalone still listens after its IDE left"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
