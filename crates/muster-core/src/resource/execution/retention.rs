//! Which execution records a retention pass deletes.

use chrono::{DateTime, TimeDelta, Utc};

use super::ExecutionId;

/// Retention bounds of execution records: older than `max_age` goes, and only the newest
/// `max_records` stay. The defaults (21 days, 10 000) are the fixed bounds of muster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// Records started longer ago than this are deleted.
    pub max_age: TimeDelta,
    /// At most this many records (the newest by start time) are kept.
    pub max_records: usize,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        Self {
            max_age: TimeDelta::days(21),
            max_records: 10_000,
        }
    }
}

impl RetentionPolicy {
    /// The ids to delete among `records` (id and start time) at time `now`.
    pub fn expired<'a, I>(&self, records: I, now: DateTime<Utc>) -> Vec<ExecutionId>
    where
        I: IntoIterator<Item = (&'a ExecutionId, DateTime<Utc>)>,
    {
        let mut all: Vec<_> = records.into_iter().collect();
        // Newest first; ties broken by id so the result is deterministic.
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let cutoff = now - self.max_age;
        all.into_iter()
            .enumerate()
            .filter(|(i, (_, started))| *i >= self.max_records || *started < cutoff)
            .map(|(_, (id, _))| id.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn age_and_count_bounds() {
        let now = Utc::now();
        let ids: Vec<ExecutionId> = (0..5)
            .map(|i| ExecutionId::from_string(format!("e{i}")))
            .collect();
        let policy = RetentionPolicy {
            max_age: TimeDelta::days(21),
            max_records: 3,
        };
        let records = [
            (&ids[0], now),
            (&ids[1], now - TimeDelta::days(1)),
            (&ids[2], now - TimeDelta::days(22)),
            (&ids[3], now - TimeDelta::hours(1)),
            (&ids[4], now - TimeDelta::days(2)),
        ];
        let mut gone = policy.expired(records, now);
        gone.sort();
        // e2 is too old; of the four young ones, e4 is the oldest beyond the newest three.
        assert_eq!(gone, vec![ids[2].clone(), ids[4].clone()]);
    }
}
