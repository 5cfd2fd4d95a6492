//! [`RunTree`]: the budget shared by every workflow run started, directly or through nested
//! workflow calls, by one call from a client.

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio_util::sync::CancellationToken;

/// The bounds of one tree of workflow runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeLimits {
    /// The most workflow runs in the tree, the root included.
    pub max_runs: u64,
    /// The most tool steps run across the whole tree.
    pub max_steps: u64,
}

impl TreeLimits {
    /// Default of [`max_runs`](Self::max_runs).
    pub const DEFAULT_MAX_RUNS: u64 = 1000;
    /// Default of [`max_steps`](Self::max_steps).
    pub const DEFAULT_MAX_STEPS: u64 = 10_000;
}

impl Default for TreeLimits {
    fn default() -> Self {
        Self {
            max_runs: Self::DEFAULT_MAX_RUNS,
            max_steps: Self::DEFAULT_MAX_STEPS,
        }
    }
}

/// The budget and the cancellation shared by a root workflow run and every run nested under
/// it. The first run over a bound stops the whole tree: the tree's token is cancelled, so
/// every run of it halts at its next step, and the reason is kept for the root's error.
pub struct RunTree {
    limits: TreeLimits,
    runs: AtomicU64,
    steps: AtomicU64,
    token: CancellationToken,
    stopped: OnceLock<String>,
}

impl RunTree {
    /// The tree of a root run (counted as its first run), cancelled with `token`.
    pub fn new(limits: TreeLimits, token: CancellationToken) -> Self {
        Self {
            limits,
            runs: AtomicU64::new(1),
            steps: AtomicU64::new(0),
            token,
            stopped: OnceLock::new(),
        }
    }

    /// The bounds.
    pub fn limits(&self) -> TreeLimits {
        self.limits
    }

    /// Counts a nested run; over the bound, stops the tree and returns the reason.
    pub fn enter_run(&self) -> Result<(), String> {
        let runs = self.runs.fetch_add(1, Ordering::AcqRel) + 1;
        if runs > self.limits.max_runs {
            return Err(self.stop(format!(
                "workflow call tree exceeded {} workflow runs (limits.workflows.maxRunsPerTree)",
                self.limits.max_runs
            )));
        }
        Ok(())
    }

    /// Counts a tool step; over the bound, stops the tree and returns the reason.
    pub fn take_step(&self) -> Result<(), String> {
        let steps = self.steps.fetch_add(1, Ordering::AcqRel) + 1;
        if steps > self.limits.max_steps {
            return Err(self.stop(format!(
                "workflow call tree exceeded {} steps (limits.workflows.maxStepsPerTree)",
                self.limits.max_steps
            )));
        }
        Ok(())
    }

    /// Stops the whole tree for `reason` (the first reason is kept) and returns the kept one.
    pub fn stop(&self, reason: String) -> String {
        let kept = self.stopped.get_or_init(|| reason).clone();
        self.token.cancel();
        kept
    }

    /// Why the tree was stopped, once it was.
    pub fn stop_reason(&self) -> Option<&str> {
        self.stopped.get().map(String::as_str)
    }

    /// The token cancelled when the tree stops (or its caller goes away).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.token
    }

    /// Runs and steps counted so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.runs.load(Ordering::Acquire),
            self.steps.load(Ordering::Acquire),
        )
    }
}

impl fmt::Debug for RunTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (runs, steps) = self.counts();
        f.debug_struct("RunTree")
            .field("limits", &self.limits)
            .field("runs", &runs)
            .field("steps", &steps)
            .field("stopped", &self.stopped.get())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_run_over_the_bound_stops_the_tree() {
        let tree = RunTree::new(
            TreeLimits {
                max_runs: 3,
                max_steps: 2,
            },
            CancellationToken::new(),
        );
        assert!(tree.enter_run().is_ok());
        assert!(tree.enter_run().is_ok());
        assert!(!tree.cancellation().is_cancelled());
        let reason = tree.enter_run().unwrap_err();
        assert!(reason.contains("3 workflow runs"), "{reason}");
        assert!(tree.cancellation().is_cancelled());
        // Later problems keep the first reason.
        assert!(tree.take_step().is_ok());
        assert!(tree.take_step().is_ok());
        assert_eq!(tree.take_step().unwrap_err(), reason);
        assert_eq!(tree.stop_reason(), Some(reason.as_str()));
    }
}
