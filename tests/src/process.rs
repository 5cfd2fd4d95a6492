//! Processes as seen in `/proc`, identified so that a recycled pid is never mistaken for
//! the process it used to name.

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// A process: its pid plus its start time (in clock ticks after boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessId {
    pid: i32,
    start_time: u64,
}

/// The fields of `/proc/<pid>/stat` the harness reads.
#[derive(Debug, Clone, Copy)]
struct Stat {
    state: char,
    process_group: i32,
    start_time: u64,
}

fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses, so the fields
    // are counted from the last `)`; field n of proc(5) is at index n - 3.
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        process_group: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

impl ProcessId {
    /// The process now running as `pid`, if any.
    pub fn of(pid: u32) -> Option<Self> {
        let pid = i32::try_from(pid).ok()?;
        stat(pid).map(|s| Self {
            pid,
            start_time: s.start_time,
        })
    }

    /// The pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether this very process still runs: its pid exists, was not reused, and is not a
    /// zombie waiting to be reaped.
    pub fn is_alive(&self) -> bool {
        stat(self.pid)
            .is_some_and(|s| s.start_time == self.start_time && !matches!(s.state, 'Z' | 'X'))
    }

    /// The process group this process is in, while it is alive.
    pub fn process_group(&self) -> Option<i32> {
        stat(self.pid)
            .filter(|s| s.start_time == self.start_time)
            .map(|s| s.process_group)
    }

    /// The direct children, from `/proc/<pid>/task/*/children`.
    pub fn children(&self) -> Vec<ProcessId> {
        if !self.is_alive() {
            return Vec::new();
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) else {
            return Vec::new();
        };
        let mut children: Vec<ProcessId> = tasks
            .flatten()
            .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
            .flat_map(|list| {
                list.split_whitespace()
                    .filter_map(|pid| pid.parse().ok())
                    .collect::<Vec<u32>>()
            })
            .filter_map(ProcessId::of)
            .collect();
        children.sort_by_key(|c| c.pid);
        children.dedup();
        children
    }

    /// Every descendant, children first.
    pub fn descendants(&self) -> Vec<ProcessId> {
        let mut all = self.children();
        let mut i = 0;
        while let Some(p) = all.get(i).copied() {
            all.extend(p.children());
            i += 1;
        }
        all
    }

    /// Sends `signal` to this process, if it is still this process.
    pub fn signal(&self, signal: Signal) {
        if self.is_alive() {
            let _ = kill(Pid::from_raw(self.pid), signal);
        }
    }

    /// Sends `signal` to this process's group, if the process is still alive and leads its
    /// own group (as muster's stdio children and muster itself under the harness do);
    /// otherwise to the process alone.
    pub fn signal_group(&self, signal: Signal) {
        if !self.is_alive() {
            return;
        }
        if self.process_group() == Some(self.pid) {
            let _ = killpg(Pid::from_raw(self.pid), signal);
        } else {
            let _ = kill(Pid::from_raw(self.pid), signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn children_are_found_and_seen_to_die() {
        let me = ProcessId::of(std::process::id()).expect("this process");
        assert!(me.is_alive());
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep runs");
        let id = ProcessId::of(child.id()).expect("the child");
        assert!(me.children().contains(&id), "{:?}", me.children());
        id.signal(Signal::SIGKILL);
        child.wait().expect("reaped");
        assert!(!id.is_alive());
        assert!(!me.children().contains(&id));
    }
}
