//! `docs/getting-started.md`, followed by a new user on a fresh machine: every marked snippet
//! of the page runs, in order, against a real `muster serve` and a real MCP server.
//!
//! The page marks its fences:
//! - ```` ```sh test ````: run with `bash -euo pipefail`; must exit 0;
//! - ```` ```text expected ````: every line appears in the output of the `sh test` before it;
//! - ```` ```yaml file=PATH ````: written to `PATH` (`~` is the user's home);
//! - ```` ```sh test-serve ````: started in the background; the next snippets run once it
//!   serves the `x_everything_echo` tool;
//! - ```` ```json test-ide ````: an IDE's MCP configuration; its command is started the way
//!   an IDE does and driven over stdio (initialize, `tools/list`, `call_tool`);
//! - ```` ```sh install ````: the install command, checked here; it is run for real (a
//!   release build, minutes) only when `MUSTER_DOCS_INSTALL=1`.
//!
//! The user's environment is simulated, not the commands: `HOME` is a fresh directory, `muster`
//! on `PATH` is the binary under test, `npx` finds server-everything in the test peers'
//! `node_modules` (the snippets run there, with npm offline), and a `config.yaml` the page does
//! not mention moves the default port 8090 to a free one so parallel tests do not collide.

#![allow(missing_docs, clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use muster_tests::markdown::{Block, blocks, read_doc};
use muster_tests::{McpClient, ProcessId, deps, muster_bin, workspace_root};
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use tokio::time::Instant;

const PAGE: &str = "docs/getting-started.md";
const DOC_ENDPOINT: &str = "http://localhost:8090/mcp";
const READY: Duration = Duration::from_secs(90);

/// The simulated user: a home, a working directory and an environment.
struct User {
    home: tempfile::TempDir,
    cwd: PathBuf,
    path: std::ffi::OsString,
    port: u16,
}

impl User {
    fn new() -> anyhow::Result<Self> {
        let home = tempfile::Builder::new()
            .prefix("muster-docs-home-")
            .tempdir()?;
        let bin_dir = muster_bin()?
            .parent()
            .context("muster binary without directory")?
            .to_path_buf();
        // server-everything must be installed; `npx` resolves it from this project dir.
        deps::server_everything()?;
        let port = free_port()?;
        let config = home.path().join(".config/muster");
        std::fs::create_dir_all(&config)?;
        std::fs::write(
            config.join("config.yaml"),
            format!("aggregator:\n  port: {port}\n"),
        )?;
        Ok(Self {
            home,
            cwd: deps::dir(),
            path: deps::path_with(&bin_dir)?,
            port,
        })
    }

    fn endpoint(&self) -> String {
        format!("http://localhost:{}/mcp", self.port)
    }

    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.cwd)
            .env("HOME", self.home.path())
            .env("PATH", &self.path)
            .env("npm_config_offline", "true")
            .env("npm_config_update_notifier", "false")
            .env_remove("MUSTER_ENDPOINT")
            .env_remove("MUSTER_CONTEXT")
            .stdin(Stdio::null());
        cmd
    }

    fn expand(&self, path: &str) -> PathBuf {
        match path.strip_prefix("~/") {
            Some(rest) => self.home.path().join(rest),
            None => PathBuf::from(path),
        }
    }

    /// Runs a `sh test` snippet; returns its stdout and stderr.
    fn run(&self, block: &Block) -> anyhow::Result<String> {
        let out = self
            .command("bash")
            .args(["-euo", "pipefail", "-c", &block.body])
            .output()
            .context("cannot run bash")?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if !out.status.success() {
            bail!(
                "{PAGE}:{}: `{}` failed ({}):\n{text}",
                block.line,
                block.body.trim(),
                out.status
            );
        }
        Ok(text)
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A process started by the page, killed with its process group when dropped.
struct Background {
    child: Child,
    log: PathBuf,
}

impl Background {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(p) = ProcessId::of(self.child.id()) {
            let descendants = p.descendants();
            p.signal_group(Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            p.signal_group(Signal::SIGKILL);
            for d in descendants {
                d.signal_group(Signal::SIGKILL);
            }
        }
        let _ = self.child.wait();
    }
}

fn serve(user: &User, block: &Block) -> anyhow::Result<Background> {
    use std::os::unix::process::CommandExt as _;
    let log = user.home.path().join("serve.log");
    let out = std::fs::File::create(&log)?;
    let err = out.try_clone()?;
    let child = user
        .command("bash")
        .args(["-c", &format!("exec {}", block.body.trim())])
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .context("cannot start the serve snippet")?;
    let mut bg = Background { child, log };
    let deadline = Instant::now() + READY;
    loop {
        if let Some(status) = bg.child.try_wait()? {
            bail!(
                "{PAGE}:{}: `{}` exited ({status}):\n{}",
                block.line,
                block.body.trim(),
                bg.log()
            );
        }
        let last = match McpClient::connect(&user.endpoint()).and_then(|c| c.reachable_tools()) {
            Ok(tools) if tools.iter().any(|t| t == "x_everything_echo") => return Ok(bg),
            Ok(tools) => format!("tools so far: {tools:?}"),
            Err(e) => format!("{e:#}"),
        };
        if Instant::now() >= deadline {
            bail!(
                "{PAGE}:{}: muster did not serve x_everything_echo within {READY:?} ({last}):\n{}",
                block.line,
                bg.log()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Drives the IDE configuration's command over stdio as an IDE does.
fn ide(user: &User, block: &Block) -> anyhow::Result<()> {
    let config: Value = serde_json::from_str(&block.body)
        .with_context(|| format!("{PAGE}:{}: the IDE configuration is not JSON", block.line))?;
    let server = &config["mcpServers"]["muster"];
    let command = server["command"].as_str().context("no command")?;
    let args: Vec<String> = server["args"]
        .as_array()
        .context("no args")?
        .iter()
        .map(|a| {
            a.as_str()
                .unwrap_or_default()
                .replace(DOC_ENDPOINT, &user.endpoint())
        })
        .collect();
    let mut child = user
        .command(command)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start `{command} {}`", args.join(" ")))?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let (tx, rx) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line)
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    let ask = |stdin: &mut std::process::ChildStdin,
               id: u64,
               method: &str,
               params: Value|
     -> anyhow::Result<Value> {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{msg}")?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let reply = rx
                .recv_timeout(left)
                .with_context(|| format!("no answer to {method} over stdio"))?;
            if reply["id"] == id {
                return Ok(reply);
            }
        }
    };
    let init = ask(
        &mut stdin,
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "docs-ide", "version": "1"}}),
    )?;
    assert_eq!(
        init["result"]["serverInfo"]["name"], "muster-aggregator",
        "{init}"
    );
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )?;
    let list = ask(&mut stdin, 2, "tools/list", json!({}))?;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .context("tools/list without tools")?
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names.len(),
        11,
        "the page promises 11 meta-tools: {names:?}"
    );
    for promised in ["list_tools", "describe_tool", "filter_tools", "call_tool"] {
        assert!(names.contains(&promised), "{promised} missing: {names:?}");
    }
    let call = ask(
        &mut stdin,
        3,
        "tools/call",
        json!({"name": "call_tool",
               "arguments": {"name": "x_everything_echo", "arguments": {"message": "from the IDE"}}}),
    )?;
    let text = call["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("Echo: from the IDE"), "{call}");
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait()?.is_none() {
        if Instant::now() >= deadline {
            child.kill()?;
            bail!("the IDE bridge did not exit when its stdin closed");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The install snippet: the documented command names the workspace's binary package.
fn check_install(user: &User, block: &Block) -> anyhow::Result<()> {
    let command = block.body.trim();
    let path = command
        .split_whitespace()
        .skip_while(|w| *w != "--path")
        .nth(1)
        .context("the install command has no --path")?;
    let manifest = std::fs::read_to_string(workspace_root().join(path).join("Cargo.toml"))
        .with_context(|| format!("{PAGE}:{}: {path} is not a package", block.line))?;
    assert!(
        manifest.contains("name = \"muster\""),
        "{PAGE}:{}: {path} has no `muster` binary",
        block.line
    );
    assert!(command.contains("--locked") && workspace_root().join("Cargo.lock").exists());
    if std::env::var_os("MUSTER_DOCS_INSTALL").is_some_and(|v| v == "1") {
        let root = user.home.path().join(".cargo");
        let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(command.split_whitespace().skip(1))
            .arg("--root")
            .arg(&root)
            .current_dir(workspace_root())
            .status()?;
        assert!(status.success(), "`{command}` failed");
        assert!(root.join("bin/muster").exists());
    }
    Ok(())
}

fn write_file(user: &User, block: &Block, path: &str) -> anyhow::Result<()> {
    let target = user.expand(path);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&target, &block.body)
        .with_context(|| format!("cannot write {}", target.display()))
}

fn expect(block: &Block, previous: Option<&(usize, String)>) {
    let (line, output) = previous.unwrap_or_else(|| {
        panic!(
            "{PAGE}:{}: an `expected` block must follow a `sh test` block",
            block.line
        )
    });
    for want in block.body.lines().map(str::trim).filter(|l| !l.is_empty()) {
        assert!(
            output.contains(want),
            "{PAGE}:{}: the snippet at line {line} does not print `{want}`; it printed:\n{output}",
            block.line
        );
    }
}

#[test]
fn getting_started_works_as_written() {
    let page = read_doc(PAGE).unwrap();
    let user = User::new().unwrap();
    let mut server: Option<Background> = None;
    let mut last_output: Option<(usize, String)> = None;
    let mut seen = (0, 0, 0, 0);
    for block in blocks(&page) {
        if block.lang == "sh" && block.has("install") {
            check_install(&user, &block).unwrap();
        } else if block.lang == "sh" && block.has("test") {
            last_output = Some((block.line, user.run(&block).unwrap()));
            seen.0 += 1;
        } else if block.lang == "sh" && block.has("test-serve") {
            server = Some(serve(&user, &block).unwrap());
            seen.1 += 1;
        } else if block.has("expected") {
            expect(&block, last_output.as_ref());
        } else if let Some(path) = block.value("file") {
            write_file(&user, &block, path).unwrap();
            seen.2 += 1;
        } else if block.has("test-ide") {
            assert!(server.is_some(), "the IDE snippet needs muster running");
            ide(&user, &block).unwrap();
            seen.3 += 1;
        } else if block.lang == "sh" {
            panic!(
                "{PAGE}:{}: every shell snippet of the page is run: mark it `sh test`, \
                 `sh test-serve` or `sh install`",
                block.line
            );
        }
    }
    assert!(seen.0 >= 8, "fewer shell snippets than expected: {seen:?}");
    assert_eq!((seen.1, seen.2, seen.3), (1, 2, 1), "{seen:?}");
    let log = server.as_ref().map(Background::log).unwrap_or_default();
    assert!(log.contains("muster serving MCP at"), "{log}");
    drop(server);
}
