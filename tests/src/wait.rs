//! Waiting for something a running muster does on its own time.

use std::time::Duration;

use anyhow::bail;
use tokio::time::Instant;

const POLL: Duration = Duration::from_millis(100);

/// Polls `check` until it returns `Some` or `timeout` passes.
///
/// # Errors
///
/// When `timeout` passes first; the error names `what`.
pub fn eventually<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> anyhow::Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            bail!("{what}: not within {timeout:?}");
        }
        std::thread::sleep(POLL);
    }
}
