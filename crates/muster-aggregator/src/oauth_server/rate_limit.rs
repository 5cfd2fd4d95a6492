//! A token bucket per client address, bounding sign-in requests and failed bearers.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use muster_core::config::AuthRateLimitConfig;
use tokio::time::Instant;

/// How many addresses are tracked; beyond it the fullest buckets are forgotten first.
const MAX_TRACKED: usize = 65_536;

/// Per-address token buckets.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl RateLimiter {
    /// A limiter allowing `per_minute` sustained and `burst` more.
    pub(crate) fn new(config: AuthRateLimitConfig) -> Self {
        let per_minute = f64::from(config.per_minute.max(1));
        Self {
            per_second: per_minute / 60.0,
            burst: f64::from(config.burst) + 1.0,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one attempt from `addr`'s bucket; `false` when it is empty.
    pub(crate) fn take(&self, addr: IpAddr) -> bool {
        self.update(addr, true)
    }

    /// Whether `addr` has an attempt left, without using it.
    pub(crate) fn allows(&self, addr: IpAddr) -> bool {
        self.update(addr, false)
    }

    fn update(&self, addr: IpAddr, take: bool) -> bool {
        let now = Instant::now();
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if buckets.len() >= MAX_TRACKED && !buckets.contains_key(&addr) {
            let (per_second, burst) = (self.per_second, self.burst);
            buckets.retain(|_, b| refill(*b, now, per_second, burst) < burst);
            if buckets.len() >= MAX_TRACKED {
                buckets.clear();
            }
        }
        let bucket = buckets.entry(addr).or_insert(Bucket {
            tokens: self.burst,
            updated: now,
        });
        bucket.tokens = refill(*bucket, now, self.per_second, self.burst);
        bucket.updated = now;
        if bucket.tokens < 1.0 {
            return false;
        }
        if take {
            bucket.tokens -= 1.0;
        }
        true
    }
}

fn refill(bucket: Bucket, now: Instant, per_second: f64, burst: f64) -> f64 {
    let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
    elapsed.mul_add(per_second, bucket.tokens).min(burst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_then_the_sustained_rate() {
        let limiter = RateLimiter::new(AuthRateLimitConfig {
            per_minute: 60,
            burst: 2,
        });
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        assert!(limiter.take(a) && limiter.take(a) && limiter.take(a));
        assert!(!limiter.take(a));
        assert!(!limiter.allows(a));
        assert!(limiter.take(b), "another address has its own bucket");
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        assert!(limiter.take(a));
        assert!(!limiter.take(a));
    }
}
