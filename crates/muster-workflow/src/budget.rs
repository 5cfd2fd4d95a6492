//! Time budgets of CPU-bound evaluations (jq programs, templates) and the pool that runs jq
//! programs off the async workers.
//!
//! jaq cannot be interrupted from outside, so two mechanisms work together:
//!
//! - **A cooperative deadline.** The thread running an evaluation holds its deadline in a
//!   thread-local ([`with_deadline`]). The places where an evaluation can loop without bound
//!   check it: jq's `range` generator (the native behind `range/1`, `range/2`, `range/3`,
//!   `last(range(…))`, `limit`, …), the loop over a jq program's outputs, and the template
//!   engine's `range` iterations and `template` calls. Past the deadline they fail with
//!   [`BUDGET_EXCEEDED`], so the evaluation unwinds and its thread is free again.
//! - **A bounded pool of threads** ([`Evaluator`]) runs every jq program, so a long one never
//!   blocks an async worker (the server keeps answering, SIGTERM is handled at once). The
//!   caller waits at most the budget: a program that loops where no check reaches (pure jq
//!   recursion such as `def f: f; f`) fails its step at the budget, and its thread is
//!   abandoned (its result discarded when it ends). The pool has a fixed number of threads,
//!   so at most that many runaway evaluations burn CPU at once; when all of them are busy,
//!   further evaluations wait, and fail at their budget. The threads start with the first
//!   evaluation: a process that runs no jq program has none.

// The budget is real time spent computing, on threads outside the async runtime: the runtime's
// (pausable) clock has no say in it.
#![allow(clippy::disallowed_types)]

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, Once, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

pub use muster_gotmpl::deadline::{BUDGET_EXCEEDED, deadline_in, expired, with_deadline};

/// Why an evaluation on the pool produced no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EvaluationError {
    /// The evaluation did not finish within its budget.
    #[error("{BUDGET_EXCEEDED} ({}ms)", .0.as_millis())]
    Timeout(Duration),
    /// The evaluation panicked (its thread was replaced).
    #[error("evaluation failed unexpectedly")]
    Panicked,
}

type Job = Box<dyn FnOnce() + Send>;

/// A fixed pool of threads running evaluations with a time budget. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Evaluator {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    budget: Duration,
    jobs: Mutex<Sender<Job>>,
    /// Where the threads take jobs from, and how many there are.
    queue: Arc<Mutex<Receiver<Job>>>,
    threads: usize,
    /// Starts the threads with the first job.
    started: Once,
}

impl Evaluator {
    /// Default budget of one evaluation.
    pub const DEFAULT_BUDGET: Duration = Duration::from_secs(10);
    /// Default number of evaluations that may run at once.
    pub const DEFAULT_THREADS: usize = 4;

    /// A pool of `threads` threads (at least one, started with the first evaluation)
    /// giving each evaluation `budget`.
    pub fn new(budget: Duration, threads: usize) -> Self {
        let (jobs, queue) = channel::<Job>();
        Self {
            inner: Arc::new(Inner {
                budget,
                jobs: Mutex::new(jobs),
                queue: Arc::new(Mutex::new(queue)),
                threads: threads.max(1),
                started: Once::new(),
            }),
        }
    }

    /// The budget of one evaluation.
    pub fn budget(&self) -> Duration {
        self.inner.budget
    }

    /// Runs `f` on the pool under the budget (its deadline set, see [`expired`]) and waits
    /// for its result, at most the budget (plus a moment for the deadline checks to land).
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, EvaluationError> {
        self.inner.started.call_once(|| {
            for i in 0..self.inner.threads {
                spawn_worker(i, Arc::clone(&self.inner.queue));
            }
        });
        let budget = self.inner.budget;
        let deadline = Instant::now() + budget;
        let (reply, result) = oneshot::channel();
        let job: Job = Box::new(move || {
            // Skip evaluations whose caller gave up while they were queued.
            if reply.is_closed() || Instant::now() >= deadline {
                return;
            }
            let value = with_deadline(Some(deadline), f);
            let _ = reply.send(value);
        });
        let sent = self
            .inner
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(job);
        if sent.is_err() {
            return Err(EvaluationError::Panicked);
        }
        // The cooperative checks answer right at the deadline; the grace lets their error
        // (which names the problem better) arrive before the timeout fires.
        let grace = Duration::from_millis(50);
        match tokio::time::timeout(budget + grace, result).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(_)) if Instant::now() >= deadline => Err(EvaluationError::Timeout(budget)),
            Ok(Err(_)) => Err(EvaluationError::Panicked),
            Err(_) => Err(EvaluationError::Timeout(budget)),
        }
    }
}

impl Default for Evaluator {
    fn default() -> Self {
        Self::new(Self::DEFAULT_BUDGET, Self::DEFAULT_THREADS)
    }
}

fn spawn_worker(index: usize, queue: Arc<Mutex<Receiver<Job>>>) {
    let name = format!("muster-eval-{index}");
    let spawned = std::thread::Builder::new().name(name).spawn(move || {
        loop {
            let job = {
                let queue = queue.lock().unwrap_or_else(PoisonError::into_inner);
                match queue.recv() {
                    Ok(job) => job,
                    Err(_) => return,
                }
            };
            // A panicking evaluation drops its reply (the caller sees `Panicked`) and the
            // thread goes on with the next one.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        }
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start an evaluation thread");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_threads_start_with_the_first_evaluation() {
        let pool = Evaluator::new(Duration::from_secs(1), 2);
        assert!(!pool.inner.started.is_completed(), "no thread before a job");
        assert_eq!(pool.run(|| 1 + 1).await, Ok(2));
        assert!(pool.inner.started.is_completed());
        assert_eq!(pool.run(|| 2 + 2).await, Ok(4));
    }

    #[tokio::test]
    async fn a_runaway_evaluation_fails_at_its_budget_and_frees_nothing_else() {
        let pool = Evaluator::new(Duration::from_millis(200), 1);
        // Cooperative: stops at the deadline.
        let started = Instant::now();
        let out = pool
            .run(|| {
                while !expired() {
                    std::hint::spin_loop();
                }
                "stopped"
            })
            .await;
        assert_eq!(out, Ok("stopped"));
        assert!(started.elapsed() < Duration::from_secs(2));
        // Not cooperative: the caller still gets its answer at the budget.
        let started = Instant::now();
        let out = pool
            .run(|| std::thread::sleep(Duration::from_millis(600)))
            .await;
        assert_eq!(
            out,
            Err(EvaluationError::Timeout(Duration::from_millis(200)))
        );
        assert!(started.elapsed() < Duration::from_millis(500));
        // While the abandoned evaluation holds the only thread, others wait and time out.
        assert_eq!(
            pool.run(|| 1).await,
            Err(EvaluationError::Timeout(Duration::from_millis(200)))
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(pool.run(|| 6).await, Ok(6));
        // A panic is reported and the thread lives on (printing the panic may be slow).
        let pool = Evaluator::new(Duration::from_secs(20), 1);
        let out: Result<(), _> = pool.run(|| panic!("boom")).await;
        assert_eq!(out, Err(EvaluationError::Panicked));
        assert_eq!(pool.run(|| 7).await, Ok(7));
        assert!(!expired(), "the deadline is the pool thread's only");
    }
}
