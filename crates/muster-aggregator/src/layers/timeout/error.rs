//! [`Elapsed`]: which budget of a call ran out.

use std::fmt;
use std::time::Duration;

use muster_core::tool::ToolError;

/// The budget that ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// No answer and no progress within `spec.timeout`.
    Idle,
    /// The call as a whole exceeded `spec.progress.maxDuration`.
    Total,
}

/// A call ran out of its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed {
    budget: Budget,
    after: Duration,
}

impl Elapsed {
    /// The `budget` of length `after` ran out.
    pub const fn new(budget: Budget, after: Duration) -> Self {
        Self { budget, after }
    }

    /// Which budget ran out.
    pub const fn budget(&self) -> Budget {
        self.budget
    }

    /// Its length.
    pub const fn after(&self) -> Duration {
        self.after
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.budget {
            Budget::Idle => write!(f, "no answer or progress within {:?}", self.after),
            Budget::Total => write!(f, "the call exceeded its maximum duration {:?}", self.after),
        }
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for ToolError {
    fn from(e: Elapsed) -> Self {
        ToolError::Timeout { after: e.after }
    }
}
