//! Per-name debouncing: a name is due once it has not changed for the debounce time.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use tokio::time::Instant;

/// The names with changes not yet read, each with the moment it becomes due.
#[derive(Debug)]
pub(super) struct Debouncer {
    delay: Duration,
    due: HashMap<String, Instant>,
}

impl Debouncer {
    /// Names become due `delay` after their last change.
    pub(super) fn new(delay: Duration) -> Self {
        Self {
            delay,
            due: HashMap::new(),
        }
    }

    /// Records a change of `name` at `now`, postponing it when already pending.
    pub(super) fn touch(&mut self, name: String, now: Instant) {
        self.due.insert(name, now + self.delay);
    }

    /// The earliest moment a name becomes due, if any is pending.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.due.values().min().copied()
    }

    /// Removes and returns the names due at `now`.
    pub(super) fn take_due(&mut self, now: Instant) -> BTreeSet<String> {
        let due: BTreeSet<String> = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(name, _)| name.clone())
            .collect();
        for name in &due {
            self.due.remove(name);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_postpones_its_name_only() {
        let start = Instant::now();
        let ms = Duration::from_millis;
        let mut d = Debouncer::new(ms(500));
        assert_eq!(d.next_deadline(), None);
        d.touch("a".into(), start);
        d.touch("b".into(), start + ms(100));
        d.touch("a".into(), start + ms(300));
        assert_eq!(d.next_deadline(), Some(start + ms(600)));
        assert!(d.take_due(start + ms(599)).is_empty());
        assert_eq!(
            d.take_due(start + ms(800)),
            BTreeSet::from(["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(d.next_deadline(), None);
    }
}
