//! Go duration strings (`300ms`, `1.5s`, `2m`, `1h30m`), as muster's environment variables
//! spell them.

use std::time::Duration;

/// A duration string that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {input:?}: {reason}")]
#[non_exhaustive]
pub struct DurationError {
    /// The text given.
    pub input: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Parses a Go duration: a sequence of decimal numbers, each with a unit out of `ns`, `us`
/// (or `µs`), `ms`, `s`, `m`, `h`; `0` alone is zero. Negative durations are refused.
pub fn parse_go_duration(input: &str) -> Result<Duration, DurationError> {
    let err = |reason| DurationError {
        input: input.to_owned(),
        reason,
    };
    let s = input.trim();
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.starts_with('-') {
        return Err(err("negative durations are not allowed"));
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(err("empty"));
    }
    let mut total_nanos: f64 = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| err("missing unit"))?;
        if number_len == 0 {
            return Err(err("expected a number"));
        }
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| err("malformed number"))?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per_unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(err("unknown unit")),
        };
        rest = &rest[unit_len..];
        total_nanos = number.mul_add(nanos_per_unit, total_nanos);
    }
    if !total_nanos.is_finite() || total_nanos > u64::MAX as f64 {
        return Err(err("out of range"));
    }
    Ok(Duration::from_nanos(total_nanos.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_durations() {
        let ms = |n| Duration::from_millis(n);
        let table = [
            ("0", ms(0)),
            ("1s", ms(1000)),
            ("500ms", ms(500)),
            ("2m", ms(120_000)),
            ("1h30m", ms(5_400_000)),
            ("1.5s", ms(1500)),
            ("30s", ms(30_000)),
            ("+5s", ms(5000)),
            (" 10s ", ms(10_000)),
            ("250us", Duration::from_micros(250)),
            ("7ns", Duration::from_nanos(7)),
            ("1m0.5s", ms(60_500)),
        ];
        for (input, want) in table {
            assert_eq!(parse_go_duration(input), Ok(want), "{input}");
        }
    }

    #[test]
    fn invalid_durations() {
        let table = [
            ("", "empty"),
            ("10", "missing unit"),
            ("s", "expected a number"),
            ("-1s", "negative durations are not allowed"),
            ("3d", "unknown unit"),
            ("1..2s", "malformed number"),
            ("abc", "expected a number"),
        ];
        for (input, reason) in table {
            let e = parse_go_duration(input).unwrap_err();
            assert_eq!(e.reason, reason, "{input}");
        }
    }
}
