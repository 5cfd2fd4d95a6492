//! The reconnect backoff of remote servers: `initial * 2^(failures-1)`, capped.

use std::time::Duration;

/// Default first wait after a failed connection attempt.
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_secs(30);
/// Default cap of the wait between attempts.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(120);

/// How long a remote server waits before the next connection attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: DEFAULT_INITIAL_BACKOFF,
            max: DEFAULT_MAX_BACKOFF,
        }
    }
}

impl Backoff {
    /// A backoff starting at `initial` and capped at `max`.
    pub const fn new(initial: Duration, max: Duration) -> Self {
        Self { initial, max }
    }

    /// The wait after `failures` consecutive failures: `initial * 2^(failures-1)`, at most
    /// `max`. Zero failures wait as long as one.
    pub fn delay(&self, failures: u32) -> Duration {
        let exponent = failures.saturating_sub(1);
        let factor = 2u32.checked_pow(exponent).unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_doubles_from_initial_and_stops_at_the_cap() {
        let b = Backoff::default();
        let table = [
            (0, 30),
            (1, 30),
            (2, 60),
            (3, 120),
            (4, 120),
            (10, 120),
            (40, 120),
            (u32::MAX, 120),
        ];
        for (failures, secs) in table {
            assert_eq!(b.delay(failures), Duration::from_secs(secs), "{failures}");
        }
    }

    #[test]
    fn custom_initial_and_cap() {
        let b = Backoff::new(Duration::from_millis(500), Duration::from_secs(3));
        let got: Vec<_> = (1..=5).map(|f| b.delay(f).as_millis()).collect();
        assert_eq!(got, [500, 1000, 2000, 3000, 3000]);
    }

    #[test]
    fn a_cap_below_initial_wins() {
        let b = Backoff::new(Duration::from_secs(30), Duration::from_secs(10));
        assert_eq!(b.delay(1), Duration::from_secs(10));
    }
}
