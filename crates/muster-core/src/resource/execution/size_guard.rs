//! Keeps an execution record within the size limit of a stored object.
//!
//! When the serialized record exceeds [`MAX_RECORD_BYTES`], every one of `input`, `result`,
//! `steps[].input` and `steps[].result` whose own JSON exceeds an eighth of the limit is
//! replaced: inputs by `{"_truncated": TRUNCATION_MARKER}`, results by the marker string, and
//! `truncated` is set.

use serde_json::{Value, json};

use super::ExecutionRecord;

/// The most bytes a serialized record may take (256 KiB).
pub const MAX_RECORD_BYTES: usize = 256 * 1024;
/// What replaces an oversized payload.
pub const TRUNCATION_MARKER: &str = "[truncated: payload exceeded retention size limit]";

const MAX_PAYLOAD_BYTES: usize = MAX_RECORD_BYTES / 8;

pub(super) fn enforce(record: &mut ExecutionRecord) -> bool {
    if json_len(&*record) <= MAX_RECORD_BYTES {
        return false;
    }
    let mut changed = shrink_input(&mut record.input);
    changed |= shrink_result(&mut record.result);
    for step in &mut record.steps {
        changed |= shrink_step(step);
    }
    if changed {
        record.truncated = true;
    }
    changed
}

/// Replaces the payloads of one step that exceed the per-payload limit.
pub(super) fn shrink_step(step: &mut super::StepRecord) -> bool {
    let input = shrink_input(&mut step.input);
    shrink_result(&mut step.result) | input
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

fn shrink_input(input: &mut Value) -> bool {
    if json_len(input) > MAX_PAYLOAD_BYTES {
        *input = json!({ "_truncated": TRUNCATION_MARKER });
        true
    } else {
        false
    }
}

fn shrink_result(result: &mut Option<Value>) -> bool {
    match result {
        Some(v) if json_len(v) > MAX_PAYLOAD_BYTES => {
            *v = Value::String(TRUNCATION_MARKER.to_owned());
            true
        }
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
}
