//! stdio servers: a child process in its own process group, speaking MCP on stdin/stdout,
//! with its stderr kept in a bounded tail. The child is killed and reaped on stop, and killed
//! when its handle is dropped, so no process outlives its backend.

use futures::future::BoxFuture;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use muster_core::resource::mcp_server::StdioTransport;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::failure::{Failure, FailureKind};
use super::handler::UpstreamHandler;
use super::handshake::{Running, init_failure, serve_stream};
use super::options::BackendOptions;
use super::reaper::{MARKER_ENV, ProcessRegistry};
use super::stderr_tail::StderrTail;

/// How long to wait for the last stderr bytes of a process that exited.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// A stdio server's process. Dropping it kills the whole process group.
#[derive(Debug)]
pub(crate) struct ChildProcess {
    child: Child,
    pid: Option<u32>,
    exited: Option<ExitStatus>,
    tail: StderrTail,
    stderr_task: Option<JoinHandle<()>>,
    /// Where the process group is recorded while it runs.
    registry: Option<ProcessRegistry>,
}

impl ChildProcess {
    /// Spawns `transport.command` with its args, the inherited environment plus `env`, in a
    /// process group of its own.
    ///
    /// The process dies with muster (see [`reaper`](super::reaper)); with a `registry`, its
    /// group is recorded while it runs, so a later muster reaps what a killed one left.
    pub(crate) async fn spawn(
        transport: &StdioTransport,
        tail_bytes: usize,
        registry: Option<&ProcessRegistry>,
    ) -> std::io::Result<(
        Self,
        tokio::process::ChildStdout,
        tokio::process::ChildStdin,
    )> {
        let marker = ProcessRegistry::new_marker();
        let mut command = Command::new(&transport.command);
        command
            .args(&transport.args)
            .envs(&transport.env)
            .env(MARKER_ENV, &marker)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = super::reaper::spawn(command).await?;
        if let (Some(registry), Some(pid)) = (registry, child.id()) {
            registry.record(pid, &marker);
        }
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("child stdout missing"))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("child stdin missing"))?;
        let tail = StderrTail::new(tail_bytes);
        let stderr_task = child
            .stderr
            .take()
            .map(|stderr| tokio::spawn(tail.clone().collect(stderr)));
        let pid = child.id();
        Ok((
            Self {
                child,
                pid,
                exited: None,
                tail,
                stderr_task,
                registry: registry.cloned(),
            },
            stdout,
            stdin,
        ))
    }

    /// The process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn signal_group(&self, signal: Signal) {
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            // ESRCH (the group is gone already) is the expected outcome of a late signal.
            let _ = killpg(Pid::from_raw(pid), signal);
        }
    }

    /// Stops the process: `SIGTERM` to its group, `SIGKILL` after `grace`, then reaps it.
    pub(crate) async fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.signal_group(Signal::SIGTERM);
            match tokio::time::timeout(grace, self.child.wait()).await {
                Ok(Ok(status)) => self.exited = Some(status),
                Ok(Err(_)) | Err(_) => {
                    self.signal_group(Signal::SIGKILL);
                    self.exited = self.child.wait().await.ok();
                }
            }
        }
        // Whatever the leader left behind in its group goes with it.
        self.signal_group(Signal::SIGKILL);
        self.forget();
        self.exited
    }

    fn forget(&self) {
        if let (Some(registry), Some(pid)) = (&self.registry, self.pid) {
            registry.forget(pid);
        }
    }

    /// After the connection closed: waits up to `grace` for the process to exit by itself,
    /// then stops it.
    pub(crate) async fn reap(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.exited.is_none()
            && let Ok(Ok(status)) = tokio::time::timeout(grace, self.child.wait()).await
        {
            self.exited = Some(status);
        }
        self.terminate(grace).await
    }

    /// The process's stderr tail, after giving it a moment to flush.
    pub(crate) async fn stderr(&mut self) -> String {
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(STDERR_DRAIN, task).await;
        }
        self.tail.text()
    }

    /// Why the process is gone, with its stderr tail.
    pub(crate) async fn exit_report(&mut self, what: &str) -> String {
        let stderr = self.stderr().await;
        let mut message = match self.exited {
            Some(status) => format!("{what} ({status})"),
            None => what.to_owned(),
        };
        if !stderr.is_empty() {
            message.push_str(": ");
            message.push_str(&stderr);
        }
        message
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if self.exited.is_none() {
            // kill_on_drop kills the leader and the runtime reaps it; this takes the rest of
            // the group along.
            self.signal_group(Signal::SIGKILL);
        }
        self.forget();
    }
}

/// Spawns the server and initializes it; the running client and the process.
pub(crate) fn open<'a>(
    transport: &'a StdioTransport,
    options: &'a BackendOptions,
    handler: UpstreamHandler,
    ct: CancellationToken,
) -> BoxFuture<'a, Result<(Running, ChildProcess), Failure>> {
    Box::pin(open_inner(transport, options, handler, ct))
}

async fn open_inner(
    transport: &StdioTransport,
    options: &BackendOptions,
    handler: UpstreamHandler,
    ct: CancellationToken,
) -> Result<(Running, ChildProcess), Failure> {
    let spawned = ChildProcess::spawn(
        transport,
        options.stderr_tail_bytes,
        options.process_registry.as_ref(),
    )
    .await;
    let (mut child, stdout, stdin) = spawned.map_err(|e| {
        Failure::new(
            FailureKind::Permanent,
            format!("starting {:?}: {e}", transport.command),
        )
    })?;
    let limited = super::line_limit::LineLimit::new(stdout, options.max_result_bytes);
    match serve_stream(handler, (limited, stdin), options, ct).await {
        Ok(running) => Ok((running, child)),
        Err(error) => {
            let failure = init_failure(&error);
            child.reap(Duration::from_millis(200)).await;
            let message = child.exit_report(&failure.message).await;
            Err(Failure::new(FailureKind::Permanent, message))
        }
    }
}
