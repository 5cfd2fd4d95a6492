//! The cooperative evaluation deadline that template rendering checks.
//!
//! The thread that renders a template may hold a deadline ([`with_deadline`]); the places
//! where a template can loop without bound (`range` iterations, `template` calls) check it and,
//! once it has passed, rendering fails with [`BUDGET_EXCEEDED`]. Code that evaluates other
//! languages on the same thread (a jq program, say) can check the same deadline with
//! [`expired`], so one budget covers a whole evaluation.

// The deadline is real time spent computing, on whatever thread renders: no async runtime's
// (pausable) clock has a say in it.
#![allow(clippy::disallowed_types)]

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The text of the error an evaluation past its deadline fails with.
pub const BUDGET_EXCEEDED: &str = "evaluation time budget exceeded";

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Runs `f` with `deadline` as this thread's evaluation deadline (restoring the previous one
/// afterwards, also when `f` panics).
pub fn with_deadline<T>(deadline: Option<Instant>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEADLINE.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(DEADLINE.with(|d| d.replace(deadline)));
    f()
}

/// The deadline of an evaluation starting now with `budget`.
pub fn deadline_in(budget: Duration) -> Instant {
    Instant::now() + budget
}

/// Whether this thread's evaluation deadline has passed (never, without a deadline).
pub fn expired() -> bool {
    DEADLINE
        .with(Cell::get)
        .is_some_and(|d| Instant::now() >= d)
}
