//! Children that outlive a killed muster.
//!
//! - **Tied to muster's life.** On Linux every stdio server is started with
//!   `PR_SET_PDEATHSIG = SIGKILL`, so the kernel kills it when muster dies, even by `SIGKILL`.
//!   The signal fires when the *thread* that spawned the child exits, so children are spawned
//!   from one thread that lives as long as the process ([`spawn`]).
//! - **Stale groups reaped on start.** The death signal reaches the server only, not the
//!   processes it started (`npx` → `node`, `sh -c` → …). Each server runs in a process group of
//!   its own, carrying the marker variable [`MARKER_ENV`]; with a [`ProcessRegistry`], the
//!   group is recorded as a file in a state directory while it runs. On the next start,
//!   [`ProcessRegistry::reap_stale`] kills every recorded group that still has members
//!   carrying its marker (so a process group id reused by someone else is left alone).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, PoisonError};

use tokio::process::{Child, Command};
use tokio::sync::oneshot;

/// The environment variable marking the processes of one stdio server's group.
pub const MARKER_ENV: &str = "MUSTER_PROCESS_GROUP";

type SpawnJob = (
    Command,
    tokio::runtime::Handle,
    oneshot::Sender<io::Result<Child>>,
);

/// Spawns `command` from muster's long-lived spawner thread (in the caller's runtime), with
/// the death signal set on Linux.
pub(crate) async fn spawn(mut command: Command) -> io::Result<Child> {
    set_death_signal(&mut command);
    static SPAWNER: OnceLock<Mutex<Sender<SpawnJob>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (jobs, queue) = channel::<SpawnJob>();
        let started = std::thread::Builder::new()
            .name("muster-spawner".to_owned())
            .spawn(move || {
                for (mut command, handle, reply) in queue {
                    let _runtime = handle.enter();
                    let _ = reply.send(command.spawn());
                }
            });
        if let Err(e) = started {
            tracing::warn!(error = %e, "cannot start the spawner thread");
        }
        Mutex::new(jobs)
    });
    let (reply, spawned) = oneshot::channel();
    let job = (command, tokio::runtime::Handle::current(), reply);
    spawner
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .send(job)
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    spawned
        .await
        .map_err(|_| io::Error::other("the spawner thread dropped the request"))?
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // The one unsafe block of muster; see docs/decisions/0004-*.
fn set_death_signal(command: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-
    // safe system calls (prctl, getppid).
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(io::Error::from)?;
            // muster died between fork and prctl: the signal will never come.
            if nix::unistd::getppid().as_raw() as u32 != parent {
                return Err(io::Error::other("muster exited while starting the server"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn set_death_signal(_command: &mut Command) {}

/// The process groups of running stdio servers, recorded as files of a state directory.
#[derive(Debug, Clone)]
pub struct ProcessRegistry {
    dir: PathBuf,
}

impl ProcessRegistry {
    /// A registry in `dir` (created when missing).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A marker value for a new group.
    pub(crate) fn new_marker() -> String {
        uuid::Uuid::new_v4().to_string()
    }

    /// Records the group `pgid` carrying `marker`.
    pub(crate) fn record(&self, pgid: u32, marker: &str) {
        let write = std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(self.dir.join(pgid.to_string()), marker));
        if let Err(e) = write {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot record a process group");
        }
    }

    /// Forgets the group `pgid` (it was stopped).
    pub(crate) fn forget(&self, pgid: u32) {
        let _ = std::fs::remove_file(self.dir.join(pgid.to_string()));
    }

    /// Kills the recorded groups that still have members carrying their marker (left behind
    /// by a muster that was killed) and forgets every recorded group. Returns how many
    /// processes were killed.
    pub fn reap_stale(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut killed = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            let pgid = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok());
            let marker = std::fs::read_to_string(&path).ok();
            if let (Some(pgid), Some(marker)) = (pgid, marker) {
                killed += kill_marked_group(pgid, marker.trim());
            }
            let _ = std::fs::remove_file(&path);
        }
        killed
    }
}

/// Kills the members of group `pgid` whose environment holds `MARKER_ENV=marker`.
#[cfg(target_os = "linux")]
fn kill_marked_group(pgid: i32, marker: &str) -> usize {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let wanted = format!("{MARKER_ENV}={marker}");
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut killed = 0;
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`: comm may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let pgrp = after
            .split_whitespace()
            .nth(2)
            .and_then(|g| g.parse::<i32>().ok());
        if pgrp != Some(pgid) {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes())
            && kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok()
        {
            killed += 1;
        }
    }
    killed
}

#[cfg(not(target_os = "linux"))]
fn kill_marked_group(_pgid: i32, _marker: &str) -> usize {
    0
}
