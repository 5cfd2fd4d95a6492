//! `core_events`.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeDelta, Utc};
use muster_core::event::{EventFilter, EventType};
use muster_core::tool::ToolError;
use muster_core::tool::reply::{error, json, string_arg};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};

use super::CoreTools;

const SUPPORTED_FORMATS: &str =
    "duration (e.g. 1h, 30m), RFC 3339, 2006-01-02, 2006-01-02 15:04:05";

/// Parses `since`/`until`: a duration before now, RFC 3339, a date, or a date and time (UTC).
pub(crate) fn parse_time(s: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if let Some(d) = parse_go_duration(s) {
        return Some(now - d);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S") {
        return Some(t.and_utc());
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

/// Parses a Go duration such as `1h30m`, `45s`, `500ms`.
pub(crate) fn parse_go_duration(s: &str) -> Option<TimeDelta> {
    crate::backend::parse_go_duration(s)
        .ok()
        .and_then(|d| TimeDelta::from_std(d).ok())
}

impl CoreTools {
    pub(super) async fn events(&self, args: JsonObject) -> Result<CallToolResult, ToolError> {
        let now = Utc::now();
        let mut filter = EventFilter {
            kind: string_arg(&args, "resourceType"),
            name: string_arg(&args, "resourceName"),
            namespace: string_arg(&args, "namespace"),
            event_type: match string_arg(&args, "eventType").as_deref() {
                Some("Normal") => Some(EventType::Normal),
                Some("Warning") => Some(EventType::Warning),
                _ => None,
            },
            ..EventFilter::default()
        };
        for (key, slot) in [("since", &mut filter.since), ("until", &mut filter.until)] {
            if let Some(s) = string_arg(&args, key) {
                match parse_time(&s, now) {
                    Some(t) => *slot = Some(t),
                    None => {
                        return Ok(error(format!(
                            "Invalid '{key}' time format: unsupported time format '{s}'. Supported formats: {SUPPORTED_FORMATS}"
                        )));
                    }
                }
            }
        }
        filter.limit = args
            .get("limit")
            .and_then(Value::as_f64)
            .filter(|l| *l > 0.0)
            .map(|l| l as usize);
        let Some(log) = &self.inner.events else {
            return Ok(json(&json!([])));
        };
        let events = match log.query(&filter).await {
            Ok(e) => e,
            Err(e) => return Ok(error(format!("Failed to query events: {e}"))),
        };
        let items: Vec<Value> = events
            .iter()
            .rev()
            .map(|e| {
                json!({
                    "timestamp": e.timestamp.format("%Y-%m-%d %H:%M:%S").to_string(),
                    "resource_type": e.involved_object.kind,
                    "resource_name": e.involved_object.name,
                    "namespace": e.namespace,
                    "reason": e.reason,
                    "message": e.message,
                    "type": e.type_,
                })
            })
            .collect();
        Ok(json(&Value::Array(items)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_formats() {
        let now = Utc::now();
        assert_eq!(parse_time("1h", now), Some(now - TimeDelta::hours(1)));
        assert_eq!(parse_time("1h30m", now), Some(now - TimeDelta::minutes(90)));
        assert!(parse_time("2026-01-02", now).is_some());
        assert!(parse_time("2026-01-02 15:04:05", now).is_some());
        assert!(parse_time("2026-01-02T15:04:05Z", now).is_some());
        assert_eq!(parse_time("yesterday", now), None);
        assert_eq!(
            parse_go_duration("500ms"),
            Some(TimeDelta::milliseconds(500))
        );
        assert_eq!(parse_go_duration("2x"), None);
    }
}
