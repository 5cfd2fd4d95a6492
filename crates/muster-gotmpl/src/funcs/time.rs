//! sprig's date functions and the methods of `time.Time`.

use std::collections::HashMap;

use super::{FResult, Func, Param, fixed};
use crate::duration::{format as duration_string, parse as parse_duration};
use crate::gotime::{GoTime, Loc, parse_in_local};
use crate::strconv::parse_int_base;
use crate::value::Value;

use Param::{Any, Str, Time};

fn s<'v>(v: &'v Value<'_>) -> &'v str {
    v.as_str().unwrap_or("")
}

/// sprig's conversion of a date argument: times, Unix seconds, or now.
fn time_of(v: &Value<'_>) -> GoTime {
    match v {
        Value::Time(t) => t.clone(),
        Value::Int(i) | Value::Int64(i) => GoTime::from_unix(*i),
        _ => GoTime::now(),
    }
}

/// `time.LoadLocation` for the names that need no zone database; others fall back to UTC,
/// as sprig does when loading fails.
fn load_location(zone: &str) -> Loc {
    match zone {
        "Local" => Loc::Local,
        _ => Loc::Utc,
    }
}

fn date_in_zone(layout: &str, date: &Value<'_>, zone: &str) -> String {
    time_of(date).in_loc(load_location(zone)).format(layout)
}

pub(super) fn register(m: &mut HashMap<&'static str, Func>) {
    m.insert("now", fixed(&[], |_| Ok(Value::Time(GoTime::now()))));
    m.insert(
        "date",
        fixed(&[Str, Any], |a| {
            Ok(Value::string(date_in_zone(s(&a[0]), &a[1], "Local")))
        }),
    );
    for name in ["dateInZone", "date_in_zone"] {
        m.insert(
            name,
            fixed(&[Str, Any, Str], |a| {
                Ok(Value::string(date_in_zone(s(&a[0]), &a[1], s(&a[2]))))
            }),
        );
    }
    m.insert(
        "htmlDate",
        fixed(&[Any], |a| {
            Ok(Value::string(date_in_zone("2006-01-02", &a[0], "Local")))
        }),
    );
    m.insert(
        "htmlDateInZone",
        fixed(&[Any, Str], |a| {
            Ok(Value::string(date_in_zone("2006-01-02", &a[0], s(&a[1]))))
        }),
    );
    for name in ["dateModify", "date_modify"] {
        m.insert(
            name,
            fixed(&[Str, Time], |a| {
                let Value::Time(t) = &a[1] else {
                    return Ok(a[1].clone());
                };
                Ok(Value::Time(match parse_duration(s(&a[0])) {
                    Ok(d) => t.add_nanos(d),
                    Err(_) => t.clone(),
                }))
            }),
        );
    }
    for name in ["mustDateModify", "must_date_modify"] {
        m.insert(
            name,
            fixed(&[Str, Time], |a| {
                let Value::Time(t) = &a[1] else {
                    return Ok(a[1].clone());
                };
                parse_duration(s(&a[0]))
                    .map(|d| Value::Time(t.add_nanos(d)))
                    .map_err(|e| e.to_string())
            }),
        );
    }
    m.insert(
        "toDate",
        fixed(&[Str, Str], |a| {
            Ok(Value::Time(
                parse_in_local(s(&a[0]), s(&a[1])).unwrap_or_else(GoTime::zero),
            ))
        }),
    );
    m.insert(
        "mustToDate",
        fixed(&[Str, Str], |a| {
            parse_in_local(s(&a[0]), s(&a[1]))
                .map(Value::Time)
                .ok_or_else(|| "cannot parse time".to_owned())
        }),
    );
    m.insert(
        "unixEpoch",
        fixed(&[Time], |a| match &a[0] {
            Value::Time(t) => Ok(Value::string(t.unix.to_string())),
            _ => Ok(Value::string("0")),
        }),
    );
    m.insert(
        "ago",
        fixed(&[Any], |a| {
            let t = match &a[0] {
                Value::Time(t) => t.clone(),
                Value::Int(i) | Value::Int64(i) => GoTime::from_unix(*i),
                _ => GoTime::now(),
            };
            let now = GoTime::now();
            let ns = (i128::from(now.unix) - i128::from(t.unix)) * 1_000_000_000
                + i128::from(now.nsec)
                - i128::from(t.nsec);
            let secs = (ns as f64 / 1e9).round() as i64;
            Ok(Value::string(duration_string(
                secs.saturating_mul(1_000_000_000),
            )))
        }),
    );
    m.insert(
        "duration",
        fixed(&[Any], |a| {
            let n = match &a[0] {
                Value::Str(x) => parse_int_base(x, 10).unwrap_or(0),
                Value::Int64(i) => *i,
                _ => 0,
            };
            Ok(Value::string(duration_string(
                n.wrapping_mul(1_000_000_000),
            )))
        }),
    );
    m.insert("durationRound", fixed(&[Any], duration_round));
}

fn duration_round(a: Vec<Value<'_>>) -> FResult<'_> {
    let d: i64 = match &a[0] {
        Value::Str(x) => parse_duration(x).unwrap_or(0),
        Value::Int64(i) => *i,
        Value::Time(t) => {
            let now = GoTime::now();
            ((i128::from(now.unix) - i128::from(t.unix)) * 1_000_000_000 + i128::from(now.nsec)
                - i128::from(t.nsec)) as i64
        }
        _ => 0,
    };
    let u = d.unsigned_abs();
    let second = 1_000_000_000u64;
    let minute = 60 * second;
    let hour = 60 * minute;
    let day = 24 * hour;
    let month = 30 * day;
    let year = 365 * day;
    let r = if u > year {
        format!("{}y", u / year)
    } else if u > month {
        format!("{}mo", u / month)
    } else if u > day {
        format!("{}d", u / day)
    } else if u > hour {
        format!("{}h", u / hour)
    } else if u > minute {
        format!("{}m", u / minute)
    } else if u > second {
        format!("{}s", u / second)
    } else {
        "0s".to_owned()
    };
    Ok(Value::string(r))
}

fn recv(a: &[Value<'_>]) -> GoTime {
    match a.first() {
        Some(Value::Time(t)) => t.clone(),
        _ => GoTime::zero(),
    }
}

/// A method of `time.Time`; the receiver is passed as the first argument.
pub(super) fn method(name: &str) -> Option<Func> {
    Some(match name {
        "Year" => fixed(&[], |a| Ok(Value::Int(recv(&a).field("Year").unwrap_or(0)))),
        "Day" => fixed(&[], |a| Ok(Value::Int(recv(&a).field("Day").unwrap_or(0)))),
        "Hour" => fixed(&[], |a| Ok(Value::Int(recv(&a).field("Hour").unwrap_or(0)))),
        "Minute" => fixed(&[], |a| {
            Ok(Value::Int(recv(&a).field("Minute").unwrap_or(0)))
        }),
        "Second" => fixed(&[], |a| {
            Ok(Value::Int(recv(&a).field("Second").unwrap_or(0)))
        }),
        "Nanosecond" => fixed(&[], |a| {
            Ok(Value::Int(recv(&a).field("Nanosecond").unwrap_or(0)))
        }),
        "YearDay" => fixed(&[], |a| {
            Ok(Value::Int(recv(&a).field("YearDay").unwrap_or(0)))
        }),
        "Unix" => fixed(&[], |a| Ok(Value::Int64(recv(&a).unix))),
        "UnixMilli" => fixed(&[], |a| {
            let t = recv(&a);
            Ok(Value::Int64(t.unix * 1000 + i64::from(t.nsec / 1_000_000)))
        }),
        "UnixNano" => fixed(&[], |a| {
            let t = recv(&a);
            Ok(Value::Int64(
                t.unix
                    .wrapping_mul(1_000_000_000)
                    .wrapping_add(i64::from(t.nsec)),
            ))
        }),
        "UTC" => fixed(&[], |a| Ok(Value::Time(recv(&a).in_loc(Loc::Utc)))),
        "Local" => fixed(&[], |a| Ok(Value::Time(recv(&a).in_loc(Loc::Local)))),
        "IsZero" => fixed(&[], |a| Ok(Value::Bool(recv(&a).is_zero()))),
        "String" => fixed(&[], |a| Ok(Value::string(recv(&a).to_go_string()))),
        "Format" => fixed(&[Str], |a| Ok(Value::string(recv(&a).format(s(&a[1]))))),
        _ => return None,
    })
}
