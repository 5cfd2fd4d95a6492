//! `core_events`.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeDelta, Utc};
use muster_core::event::{Event, EventFilter, EventType};
use muster_core::tool::ToolError;
use muster_core::tool::reply::{error, json, string_arg};
use muster_core::tool::{CallContext, SessionId, SessionNotifier};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

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
    muster_gotmpl::duration::parse_std(s.trim())
        .ok()
        .and_then(|d| TimeDelta::from_std(d).ok())
}

/// The method of followed events sent to a session.
pub(crate) const EVENT_NOTIFICATION: &str = "notifications/muster/event";

/// How often a follow checks whether its session has ended while no event comes.
const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(5);

/// The live follow of each session: at most one; a new one cancels the old.
#[derive(Debug, Default)]
pub(super) struct Follows(Mutex<HashMap<SessionId, CancellationToken>>);

impl Follows {
    /// Registers the follow of `session`, ending the one it had.
    fn replace(&self, session: &SessionId) -> CancellationToken {
        let token = CancellationToken::new();
        let mut follows = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        follows.retain(|_, t| !t.is_cancelled());
        if let Some(old) = follows.insert(session.clone(), token.clone()) {
            old.cancel();
        }
        token
    }
}

/// The JSON shape of an event in `core_events` results and follow notifications.
fn event_json(e: &Event) -> Value {
    json!({
        "timestamp": e.timestamp.format("%Y-%m-%d %H:%M:%S").to_string(),
        "resource_type": e.involved_object.kind,
        "resource_name": e.involved_object.name,
        "namespace": e.namespace,
        "reason": e.reason,
        "message": e.message,
        "type": e.type_,
    })
}

/// Sends each new event passing `filter` to the session until it ends or `stop` fires.
async fn follow(
    mut live: broadcast::Receiver<Event>,
    filter: EventFilter,
    notifier: SessionNotifier,
    stop: CancellationToken,
) {
    let mut check = tokio::time::interval(SESSION_CHECK);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = check.tick() => {
                if notifier.is_closed() {
                    stop.cancel();
                    return;
                }
            }
            received = live.recv() => match received {
                Ok(event) if filter.matches(&event) => {
                    notifier.notify(EVENT_NOTIFICATION, event_json(&event));
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "a followed session fell behind; events were skipped");
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}

impl CoreTools {
    pub(super) async fn events(
        &self,
        args: JsonObject,
        context: &CallContext,
    ) -> Result<CallToolResult, ToolError> {
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
        let follow_mode = args.get("follow").and_then(Value::as_bool) == Some(true);
        // Subscribe before reading the snapshot, so that no event falls between the two
        // (one may come in both; clients drop repeats).
        let live = if follow_mode {
            match (log.subscribe(), &context.notifier) {
                (Some(live), Some(notifier)) => Some((live, notifier.clone())),
                _ => {
                    return Ok(error(
                        "Failed to follow events: this server or transport cannot stream events to the session",
                    ));
                }
            }
        } else {
            None
        };
        let events = match log.query(&filter).await {
            Ok(e) => e,
            Err(e) => return Ok(error(format!("Failed to query events: {e}"))),
        };
        let items: Vec<Value> = events.iter().rev().map(event_json).collect();
        if let Some((live, notifier)) = live {
            // Only the resource and type filters apply to the stream.
            let stream_filter = EventFilter {
                since: None,
                until: None,
                limit: None,
                ..filter
            };
            let stop = self.inner.follows.replace(&context.session);
            tokio::spawn(follow(live, stream_filter, notifier, stop));
        }
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
