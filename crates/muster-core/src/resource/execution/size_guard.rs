//! Keeps an execution record within the size limit of a stored object.
//!
//! When the serialized record exceeds [`MAX_RECORD_BYTES`], the whole record is brought back
//! under it, in this order, stopping as soon as it fits:
//!
//! 1. every one of `input`, `result`, `steps[].input` and `steps[].result` whose own JSON
//!    exceeds an eighth of the limit is replaced: inputs by `{"_truncated": TRUNCATION_MARKER}`,
//!    results by the marker string (the original's rule);
//! 2. the same with ever smaller thresholds (down to [`MIN_PAYLOAD_BYTES`]), and error texts
//!    longer than the threshold are cut;
//! 3. the oldest finished step records are dropped (steps still in progress are kept).
//!
//! Rules 2 and 3 bring the record down to three quarters of the limit, so a long run does
//! not pay for a full pass on every further step. `truncated` is set whenever anything was
//! replaced, cut or dropped.

use serde_json::{Value, json};

use super::{ExecutionRecord, StepRecord, StepStatus};
use crate::text::truncate_in_place;

/// The most bytes a serialized record may take (256 KiB).
pub const MAX_RECORD_BYTES: usize = 256 * 1024;
/// What replaces an oversized payload.
pub const TRUNCATION_MARKER: &str = "[truncated: payload exceeded retention size limit]";

const MAX_PAYLOAD_BYTES: usize = MAX_RECORD_BYTES / 8;
/// The smallest payload threshold of rule 2.
const MIN_PAYLOAD_BYTES: usize = 256;
/// What rules 2 and 3 bring a record down to.
const TARGET_BYTES: usize = MAX_RECORD_BYTES / 4 * 3;

pub(super) fn enforce(record: &mut ExecutionRecord) -> bool {
    let mut size = json_len(&*record);
    if size <= MAX_RECORD_BYTES {
        return false;
    }
    // Rule 1.
    let mut changed = shrink_all(record, MAX_PAYLOAD_BYTES);
    if changed {
        size = json_len(&*record);
    }
    // Rule 2.
    let mut threshold = MAX_PAYLOAD_BYTES / 2;
    while size > TARGET_BYTES && threshold >= MIN_PAYLOAD_BYTES {
        if shrink_all(record, threshold) {
            changed = true;
            size = json_len(&*record);
        }
        threshold /= 2;
    }
    // Rule 3.
    if size > TARGET_BYTES {
        changed |= drop_oldest_steps(record, size - TARGET_BYTES);
    }
    if changed {
        record.truncated = true;
    }
    changed
}

/// Applies the payload rule with `threshold` to the whole record.
fn shrink_all(record: &mut ExecutionRecord, threshold: usize) -> bool {
    let mut changed = shrink_input(&mut record.input, threshold);
    changed |= shrink_result(&mut record.result, threshold);
    changed |= shrink_error(&mut record.error, threshold);
    for step in &mut record.steps {
        changed |= shrink_payloads(step, threshold);
        changed |= shrink_error(&mut step.error, threshold);
    }
    changed
}

/// Drops finished step records, oldest first, until about `excess` bytes are gone.
fn drop_oldest_steps(record: &mut ExecutionRecord, excess: usize) -> bool {
    let mut freed = 0;
    let mut dropped = 0;
    record.steps.retain(|step| {
        if freed >= excess || step.status == StepStatus::Inprogress {
            return true;
        }
        // The step's JSON and its separating comma.
        freed += json_len(step) + 1;
        dropped += 1;
        false
    });
    dropped > 0
}

/// Replaces the payloads of one step that exceed the per-payload limit.
pub(super) fn shrink_step(step: &mut StepRecord) -> bool {
    shrink_payloads(step, MAX_PAYLOAD_BYTES)
}

fn shrink_payloads(step: &mut StepRecord, threshold: usize) -> bool {
    let input = shrink_input(&mut step.input, threshold);
    shrink_result(&mut step.result, threshold) | input
}

/// The length of `v`'s compact JSON, counted without building it.
pub(super) fn json_len<T: serde::Serialize + ?Sized>(v: &T) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, v) {
        Ok(()) => counter.0,
        Err(_) => 0,
    }
}

fn is_marker_input(input: &Value) -> bool {
    input
        .get("_truncated")
        .is_some_and(|m| m == TRUNCATION_MARKER)
}

fn shrink_input(input: &mut Value, threshold: usize) -> bool {
    if !is_marker_input(input) && json_len(input) > threshold {
        *input = json!({ "_truncated": TRUNCATION_MARKER });
        true
    } else {
        false
    }
}

fn shrink_result(result: &mut Option<Value>, threshold: usize) -> bool {
    match result {
        Some(Value::String(s)) if s == TRUNCATION_MARKER => false,
        Some(v) if json_len(v) > threshold => {
            *v = Value::String(TRUNCATION_MARKER.to_owned());
            true
        }
        _ => false,
    }
}

fn shrink_error(error: &mut Option<String>, threshold: usize) -> bool {
    match error {
        Some(e) if threshold < MAX_PAYLOAD_BYTES => truncate_in_place(e, threshold.max(1024)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    #[test]
    fn small_records_are_untouched_and_large_payloads_replaced() {
        let mut small = ExecutionRecord::started("wf", json!({"a": 1}), Utc::now());
        assert!(!small.enforce_size_limit());
        assert!(!small.truncated);

        let big = "x".repeat(300 * 1024);
        let mut large = ExecutionRecord::started("wf", json!({ "blob": big }), Utc::now());
        large.result = Some(json!({"small": true}));
        assert!(large.enforce_size_limit());
        assert!(large.truncated);
        assert_eq!(large.input, json!({ "_truncated": TRUNCATION_MARKER }));
        assert_eq!(large.result, Some(json!({"small": true})));
        assert!(serde_json::to_vec(&large).unwrap().len() <= MAX_RECORD_BYTES);
    }

    fn step(i: usize, status: StepStatus, payload: usize) -> StepRecord {
        StepRecord {
            step_id: "item".to_owned(),
            tool: Some("x_echo".to_owned()),
            status,
            started_at: Utc::now(),
            completed_at: None,
            duration_ms: 1,
            input: json!({ "i": i, "pad": "p".repeat(payload) }),
            result: Some(json!({ "pad": "r".repeat(payload) })),
            error: None,
            stored_as: Some(format!("item_{i}")),
        }
    }

    #[test]
    fn the_whole_record_fits_even_with_many_small_steps() {
        // 10 000 steps of ~300 bytes each: no payload is large, the record is ~3 MB.
        let mut record = ExecutionRecord::started("wf", json!({}), Utc::now());
        record.steps = (0..10_000)
            .map(|i| step(i, StepStatus::Completed, 40))
            .collect();
        record.steps.push(step(10_000, StepStatus::Inprogress, 40));
        record.error = Some("e".repeat(200 * 1024));
        assert!(record.json_size() > 10 * MAX_RECORD_BYTES);
        assert!(record.enforce_size_limit());
        assert!(record.truncated);
        assert!(
            record.json_size() <= MAX_RECORD_BYTES,
            "{}",
            record.json_size()
        );
        // The newest steps and the one in progress are kept.
        let last = record.steps.last().unwrap();
        assert_eq!(last.status, StepStatus::Inprogress);
        assert_eq!(last.stored_as.as_deref(), Some("item_10000"));
        assert!(record.error.as_ref().unwrap().ends_with("bytes truncated]"));
    }

    #[test]
    fn medium_payloads_shrink_before_steps_are_dropped() {
        // 40 steps with 8 KiB payloads each: ~660 KB, under the per-payload rule of 32 KiB.
        let mut record = ExecutionRecord::started("wf", json!({}), Utc::now());
        record.steps = (0..40)
            .map(|i| step(i, StepStatus::Completed, 8 * 1024))
            .collect();
        assert!(record.enforce_size_limit());
        assert!(record.json_size() <= MAX_RECORD_BYTES);
        assert_eq!(record.steps.len(), 40);
        assert_eq!(record.steps[0].result, Some(json!(TRUNCATION_MARKER)));
    }
}
