//! At most so many sign-ins per session per minute.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use muster_core::tool::SessionId;
use tokio::time::Instant;

/// The window attempts are counted in.
const WINDOW: Duration = Duration::from_secs(60);

/// Sessions tracked at once; the oldest windows are dropped beyond it.
const MAX_TRACKED: usize = 10_000;

/// Counts sign-in attempts per session in fixed one-minute windows.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    per_minute: u32,
    windows: Mutex<HashMap<SessionId, (Instant, u32)>>,
}

impl RateLimiter {
    pub(crate) fn new(per_minute: u32) -> Self {
        Self {
            per_minute,
            windows: Mutex::default(),
        }
    }

    /// Counts an attempt of `session`: `Ok(remaining)` or `Err(())` when over the limit.
    pub(crate) fn attempt(&self, session: &SessionId) -> Result<u32, ()> {
        let now = Instant::now();
        let mut windows = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        if windows.len() >= MAX_TRACKED {
            windows.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        let entry = windows.entry(session.clone()).or_insert((now, 0));
        if now.duration_since(entry.0) >= WINDOW {
            *entry = (now, 0);
        }
        if entry.1 >= self.per_minute {
            return Err(());
        }
        entry.1 += 1;
        Ok(self.per_minute - entry.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_per_session() {
        let limiter = RateLimiter::new(2);
        let (a, b) = (SessionId::new("a"), SessionId::new("b"));
        assert_eq!(limiter.attempt(&a), Ok(1));
        assert_eq!(limiter.attempt(&a), Ok(0));
        assert_eq!(limiter.attempt(&a), Err(()));
        assert_eq!(limiter.attempt(&b), Ok(1));
    }
}
