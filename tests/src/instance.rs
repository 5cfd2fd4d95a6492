//! A config directory and `muster serve` processes running on it.

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use nix::sys::signal::Signal;
use serde_json::json;
use tempfile::TempDir;
use tokio::time::Instant;

use crate::mcp::{HANDSHAKE_PROTOCOL_VERSION, McpClient};
use crate::muster_bin;
use crate::process::ProcessId;

/// How long [`ConfigDir::start`] waits for muster to be ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a stop waits after SIGTERM before SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(10);

const POLL: Duration = Duration::from_millis(100);

/// What to put in a config directory: MCP servers, workflows, and the tools that must be
/// reachable before muster counts as ready.
#[derive(Debug, Clone, Default)]
pub struct MusterConfig {
    files: Vec<(PathBuf, String)>,
    expected_tools: Vec<String>,
    aggregator_lines: Vec<String>,
    health_only: bool,
    top_level: Vec<String>,
}

/// The `MCPServer` resource `name` with `spec`, as a config file's contents (JSON is YAML:
/// the serialiser does the quoting).
pub fn mcp_server_document(name: &str, spec: serde_json::Value) -> String {
    json!({
        "apiVersion": "muster.giantswarm.io/v1alpha1",
        "kind": "MCPServer",
        "metadata": {"name": name},
        "spec": spec,
    })
    .to_string()
}

impl MusterConfig {
    /// An empty configuration: no MCP servers, no workflows.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the stdio MCP server `name`, started at once as `command args...`.
    #[must_use]
    pub fn stdio_server<I, S>(self, name: &str, command: impl AsRef<Path>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let args: Vec<String> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        self.mcp_server(
            name,
            json!({
                "type": "stdio",
                "autoStart": true,
                "command": command.as_ref().display().to_string(),
                "args": args,
            }),
        )
    }

    /// Adds the MCP server `name` with `spec` as `mcpservers/<name>.yaml`.
    #[must_use]
    pub fn mcp_server(self, name: &str, spec: serde_json::Value) -> Self {
        self.file(
            format!("mcpservers/{name}.yaml"),
            mcp_server_document(name, spec),
        )
    }

    /// Adds the workflow definition `yaml` (a whole `Workflow` resource) as
    /// `workflows/<name>.yaml`.
    #[must_use]
    pub fn workflow(self, name: &str, yaml: &str) -> Self {
        self.file(format!("workflows/{name}.yaml"), yaml.to_owned())
    }

    /// Adds a file at `relative` inside the config directory.
    #[must_use]
    pub fn file(mut self, relative: impl Into<PathBuf>, contents: String) -> Self {
        self.files.push((relative.into(), contents));
        self
    }

    /// Adds a line to the `aggregator:` section of `config.yaml`, e.g.
    /// `allowedHosts: [muster.example]`.
    #[must_use]
    pub fn aggregator_setting(mut self, yaml_line: &str) -> Self {
        self.aggregator_lines.push(yaml_line.to_owned());
        self
    }

    /// Adds `yaml` (top-level keys, e.g. `observability:\n  logs:\n    calls: true`) to
    /// `config.yaml` after the `aggregator:` section.
    #[must_use]
    pub fn config_section(mut self, yaml: &str) -> Self {
        self.top_level.push(yaml.to_owned());
        self
    }

    /// Makes every start wait until `list_tools` reports `tool`.
    #[must_use]
    pub fn expect_tool(mut self, tool: &str) -> Self {
        self.expected_tools.push(tool.to_owned());
        self
    }

    /// Counts a start as ready once `/health` answers, without an MCP session (for a muster
    /// whose MCP endpoint requires a bearer token).
    #[must_use]
    pub fn ready_on_health(mut self) -> Self {
        self.health_only = true;
        self
    }

    /// Writes the directory, with a `config.yaml` on a free loopback port.
    ///
    /// # Errors
    ///
    /// When the directory cannot be written or no port is free.
    pub fn write(self) -> anyhow::Result<ConfigDir> {
        let root = tempfile::Builder::new()
            .prefix("muster-e2e-")
            .tempdir()
            .context("cannot create a temporary directory")?;
        let config = root.path().join("muster");
        let port = free_port()?;
        let mut files = self.files;
        let mut config_yaml = format!("aggregator:\n  host: 127.0.0.1\n  port: {port}\n");
        for line in &self.aggregator_lines {
            config_yaml.push_str("  ");
            config_yaml.push_str(line);
            config_yaml.push('\n');
        }
        for section in &self.top_level {
            config_yaml.push_str(section);
            if !section.ends_with('\n') {
                config_yaml.push('\n');
            }
        }
        files.push((PathBuf::from("config.yaml"), config_yaml));
        for (relative, contents) in files {
            let path = config.join(relative);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            std::fs::write(&path, contents)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        std::fs::create_dir_all(root.path().join("logs")).context("cannot create logs/")?;
        Ok(ConfigDir {
            root,
            config,
            port,
            expected_tools: self.expected_tools,
            health_only: self.health_only,
            starts: AtomicUsize::new(0),
        })
    }
}

/// A port that was free a moment ago: bound on 127.0.0.1:0, then released. Another process
/// may take it in between; tests accept that small race.
/// A loopback TCP port nobody listens on right now.
///
/// # Errors
///
/// When no port can be bound.
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("no free port")?;
    Ok(listener.local_addr().context("no local address")?.port())
}

/// A written config directory (`<tmp>/muster`, with muster's logs in `<tmp>/logs`), removed
/// when dropped. Start any number of `muster serve` processes on it, one after the other.
#[derive(Debug)]
pub struct ConfigDir {
    root: TempDir,
    config: PathBuf,
    port: u16,
    expected_tools: Vec<String>,
    health_only: bool,
    starts: AtomicUsize,
}

impl ConfigDir {
    /// The directory given to `--config-path`.
    pub fn path(&self) -> &Path {
        &self.config
    }

    /// The port of `config.yaml`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The streamable HTTP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Starts `muster serve --config-path <dir>` in its own process group, and waits until
    /// `/health` answers and `list_tools` reports every expected tool.
    ///
    /// # Errors
    ///
    /// When the binary is missing, or muster exits or is not ready within
    /// [`READY_TIMEOUT`]; the error carries muster's log.
    pub fn start(&self) -> anyhow::Result<MusterInstance> {
        self.start_with_args(&[])
    }

    /// Like [`start`](Self::start), with global flags before `serve` (e.g. `--debug`).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn start_with_args(&self, global_args: &[&str]) -> anyhow::Result<MusterInstance> {
        self.launch(Command::new(muster_bin()?), global_args)
    }

    /// Like [`start`](Self::start), with muster allowed on one CPU only (`taskset`), the
    /// first this test may run on: what a container limited to one CPU gives it.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start), and when `taskset` is missing.
    pub fn start_on_one_cpu(&self) -> anyhow::Result<MusterInstance> {
        let mut taskset = Command::new("taskset");
        taskset
            .arg("--cpu-list")
            .arg(first_allowed_cpu()?.to_string())
            .arg(muster_bin()?);
        self.launch(taskset, &[])
    }

    /// Runs `command` (muster, or a launcher whose last argument is muster) with
    /// `global_args`, `serve` and this directory, and waits until it is ready.
    fn launch(&self, mut command: Command, global_args: &[&str]) -> anyhow::Result<MusterInstance> {
        let n = self.starts.fetch_add(1, Ordering::Relaxed);
        let log = self
            .root
            .path()
            .join("logs")
            .join(format!("muster-{n}.log"));
        let out = File::create(&log).context("cannot create the log file")?;
        let err = out.try_clone().context("cannot share the log file")?;
        let child = command
            .args(global_args)
            .arg("serve")
            .arg("--config-path")
            .arg(&self.config)
            .env("MUSTER_MCPSERVER_INITIAL_BACKOFF", "1s")
            .env("MUSTER_ORCHESTRATOR_RETRY_INTERVAL", "1s")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .context("cannot start muster")?;
        let process = ProcessId::of(child.id());
        let mut instance = MusterInstance {
            child,
            process,
            port: self.port,
            log,
            children_seen: Vec::new(),
        };
        instance
            .wait_ready(&self.expected_tools, self.health_only)
            .with_context(|| format!("muster did not get ready; its log:\n{}", instance.log()))?;
        Ok(instance)
    }
}

/// The lowest CPU this process may run on (`Cpus_allowed_list` of `/proc/self/status`).
fn first_allowed_cpu() -> anyhow::Result<u32> {
    let status = std::fs::read_to_string("/proc/self/status").context("cannot read /proc")?;
    let list = status
        .lines()
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        .context("no Cpus_allowed_list in /proc/self/status")?;
    let first = list
        .trim()
        .split([',', '-'])
        .next()
        .context("an empty Cpus_allowed_list")?;
    first
        .parse()
        .with_context(|| format!("not a CPU number: {first}"))
}

/// A running `muster serve`. Dropping it sends SIGTERM, then SIGKILL to its process group
/// after [`TERM_GRACE`], and SIGKILL to the process groups of MCP servers it left behind.
#[derive(Debug)]
pub struct MusterInstance {
    child: Child,
    process: Option<ProcessId>,
    port: u16,
    log: PathBuf,
    /// Every child seen, so the ones a SIGKILL orphans can be cleaned up.
    children_seen: Vec<ProcessId>,
}

impl MusterInstance {
    /// muster's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The streamable HTTP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The legacy SSE endpoint, `http://127.0.0.1:<port>/sse`.
    pub fn sse_url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }

    /// A new MCP session.
    ///
    /// # Errors
    ///
    /// When muster refuses it.
    pub fn client(&self) -> anyhow::Result<McpClient> {
        McpClient::connect(&self.mcp_url())
    }

    /// What muster wrote to stdout and stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// muster's direct children now (its stdio MCP servers), remembered for cleanup.
    pub fn children(&mut self) -> Vec<ProcessId> {
        let children = self.process.map(|p| p.children()).unwrap_or_default();
        for c in &children {
            if !self.children_seen.contains(c) {
                self.children_seen.push(*c);
            }
        }
        children
    }

    /// Whether muster still runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends SIGTERM and waits up to `timeout` for muster to exit.
    ///
    /// # Errors
    ///
    /// When it is still running after `timeout` (it is then left running for the drop).
    pub fn terminate(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        self.children();
        self.signal(Signal::SIGTERM);
        self.wait(timeout)?
            .with_context(|| format!("muster still runs {timeout:?} after SIGTERM"))
    }

    /// Sends SIGKILL to muster alone (its MCP servers live in their own process groups and
    /// survive it) and reaps it.
    ///
    /// # Errors
    ///
    /// When it cannot be reaped.
    pub fn kill(&mut self) -> anyhow::Result<ExitStatus> {
        self.children();
        self.signal(Signal::SIGKILL);
        self.child.wait().context("cannot reap muster")
    }

    fn signal(&self, signal: Signal) {
        if let Some(p) = self.process {
            p.signal(signal);
        }
    }

    /// Waits up to `timeout` for muster to exit.
    fn wait(&mut self, timeout: Duration) -> anyhow::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().context("cannot wait for muster")? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_ready(&mut self, expected: &[String], health_only: bool) -> anyhow::Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let health = format!("http://127.0.0.1:{}/health", self.port);
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()?;
        let mut last = String::from("nothing tried yet");
        // 1. /health answers.
        loop {
            self.ensure_running()?;
            match http.get(&health).send() {
                Ok(r) if r.status().is_success() => break,
                Ok(r) => last = format!("/health answered {}", r.status()),
                Err(e) => last = format!("/health: {e}"),
            }
            if Instant::now() >= deadline {
                bail!("not healthy within {READY_TIMEOUT:?}: {last}");
            }
            std::thread::sleep(POLL);
        }
        if health_only {
            return Ok(());
        }
        // 2. An MCP session lists every expected tool.
        let mut client = None;
        loop {
            self.ensure_running()?;
            if client.is_none() {
                match McpClient::connect(&self.mcp_url()) {
                    Ok(c) => client = Some(c),
                    Err(e) => last = format!("initialize ({HANDSHAKE_PROTOCOL_VERSION}): {e:#}"),
                }
            }
            if let Some(c) = &client {
                match c.reachable_tools() {
                    Ok(tools) => {
                        let missing: Vec<&String> =
                            expected.iter().filter(|t| !tools.contains(t)).collect();
                        if missing.is_empty() {
                            self.children();
                            return Ok(());
                        }
                        last = format!("list_tools lacks {missing:?}; it has {tools:?}");
                    }
                    Err(e) => last = format!("list_tools: {e:#}"),
                }
            }
            if Instant::now() >= deadline {
                bail!("not ready within {READY_TIMEOUT:?}: {last}");
            }
            std::thread::sleep(POLL);
        }
    }

    fn ensure_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("muster exited early ({status})");
        }
        Ok(())
    }

    fn stop(&mut self) {
        if self.is_running() {
            self.children();
            self.signal(Signal::SIGTERM);
            if !matches!(self.wait(TERM_GRACE), Ok(Some(_))) {
                if let Some(p) = self.process {
                    p.signal_group(Signal::SIGKILL);
                }
                let _ = self.child.wait();
            }
        }
        for orphan in &self.children_seen {
            orphan.signal_group(Signal::SIGKILL);
        }
    }
}

impl Drop for MusterInstance {
    fn drop(&mut self) {
        self.stop();
    }
}
