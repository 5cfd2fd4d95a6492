//! The conversions sprig relies on: `spf13/cast` (`ToInt64`, `ToInt`, `ToFloat64`) and sprig's
//! own `strval`.

use crate::gofmt::sprint_one;
use crate::strconv::{parse_float, parse_int0};
use crate::value::Value;

/// Go's conversion of a `float64` to `int64` on amd64 (out of range gives the minimum).
pub(crate) fn f64_to_i64(f: f64) -> i64 {
    if f.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// cast's `trimZeroDecimal`: `"1.0"` becomes `"1"`.
fn trim_zero_decimal(s: &str) -> &str {
    let b = s.as_bytes();
    let mut found_zero = false;
    for i in (1..=b.len()).rev() {
        match b[i - 1] {
            b'.' => {
                if found_zero {
                    return &s[..i - 1];
                }
            }
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// `cast.ToInt64` (errors become 0).
pub(crate) fn to_int64(v: &Value<'_>) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Uint8(u) => i64::from(*u),
        Value::Float(f) => f64_to_i64(*f),
        Value::Str(s) => parse_int0(trim_zero_decimal(s)).unwrap_or(0),
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

/// `cast.ToFloat64` (errors become 0).
pub(crate) fn to_float64(v: &Value<'_>) -> f64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Uint8(u) => f64::from(*u),
        Value::Float(f) => *f,
        Value::Str(s) => parse_float(s).unwrap_or(0.0),
        Value::Bool(true) => 1.0,
        _ => 0.0,
    }
}

/// sprig's `strval`: strings as they are, everything else as `fmt.Sprintf("%v")`.
pub(crate) fn to_string(v: &Value<'_>) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Time(t) => t.to_go_string(),
        other => sprint_one(other),
    }
}
