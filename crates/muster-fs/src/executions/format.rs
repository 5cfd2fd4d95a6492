//! The file format of an execution record: pretty-printed JSON in the API's snake_case shape.
//!
//! ```text
//! {
//!   "execution_id": "…", "workflow_name": "…", "status": "inprogress",
//!   "started_at": "…", "completed_at": "…", "duration_ms": 0, "input": {…},
//!   "result": …, "error": "…",
//!   "steps": [{ "step_id": "…", "tool": "…", "status": "…", "started_at": "…",
//!               "completed_at": "…", "duration_ms": 0, "input": {…}, "result": …,
//!               "error": "…", "stored_as": "…" }],
//!   "truncated": true
//! }
//! ```
//!
//! Optional fields are left out when unset, `truncated` when false.

use muster_core::resource::execution::{ApiExecutionRecord, ExecutionId, ExecutionRecord};

/// Serializes a record for its file.
pub(crate) fn encode(id: &ExecutionId, record: ExecutionRecord) -> serde_json::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(&ApiExecutionRecord::new(id, &record))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Reads a record from its file's bytes.
pub(crate) fn decode(bytes: &[u8]) -> serde_json::Result<(ExecutionId, ExecutionRecord)> {
    serde_json::from_slice::<ApiExecutionRecord>(bytes).map(ApiExecutionRecord::into_record)
}
