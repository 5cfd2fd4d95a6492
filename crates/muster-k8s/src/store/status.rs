//! The status as written to `/status`: with `observedGeneration`, on the status and on each
//! condition that does not carry one.

use serde::Serialize;
use serde_json::Value;

/// `status` as JSON, stamped with the generation it was computed from.
pub(super) fn with_observed_generation<S: Serialize>(
    status: &S,
    generation: Option<i64>,
) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(status)?;
    if let (Some(generation), Some(obj)) = (generation, value.as_object_mut()) {
        obj.insert("observedGeneration".into(), Value::from(generation));
        if let Some(conditions) = obj.get_mut("conditions").and_then(Value::as_array_mut) {
            for c in conditions.iter_mut().filter_map(Value::as_object_mut) {
                c.entry("observedGeneration")
                    .or_insert_with(|| Value::from(generation));
            }
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn stamps_status_and_conditions() {
        let status = json!({"state": "Connected", "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "Other", "status": "True", "observedGeneration": 1}
        ]});
        let out = with_observed_generation(&status, Some(4)).unwrap();
        assert_eq!(out["observedGeneration"], 4);
        assert_eq!(out["conditions"][0]["observedGeneration"], 4);
        assert_eq!(out["conditions"][1]["observedGeneration"], 1);
    }
}
