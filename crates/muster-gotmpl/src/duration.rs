//! Go's `time.Duration`: parsing (`time.ParseDuration`) and printing (`Duration.String`).
//!
//! ```
//! use muster_gotmpl::duration;
//!
//! assert_eq!(duration::parse("1h30m"), Ok(5_400_000_000_000));
//! assert_eq!(duration::format(1_500_000), "1.5ms");
//! assert_eq!(
//!     duration::parse("3d").unwrap_err().to_string(),
//!     r#"time: unknown unit "d" in duration "3d""#
//! );
//! ```

use std::time::Duration;

use crate::strconv::quote;

/// A duration text that does not parse; the messages are Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// Not a sequence of numbers with units, or out of range (about ±292 years).
    #[error("time: invalid duration {}", quote(.input))]
    Invalid {
        /// The text given.
        input: String,
    },
    /// A number without its unit (`10`).
    #[error("time: missing unit in duration {}", quote(.input))]
    MissingUnit {
        /// The text given.
        input: String,
    },
    /// A unit other than `ns`, `us` (`µs`), `ms`, `s`, `m`, `h`.
    #[error("time: unknown unit {} in duration {}", quote(.unit), quote(.input))]
    UnknownUnit {
        /// The unit found.
        unit: String,
        /// The text given.
        input: String,
    },
    /// A negative duration where only a non-negative one can be used ([`parse_std`]).
    #[error("negative duration {} is not allowed", quote(.input))]
    Negative {
        /// The text given.
        input: String,
    },
}

/// Go's `time.ParseDuration`: a possibly signed sequence of decimal numbers, each with an
/// optional fraction and a unit out of `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`; `0` alone is
/// zero. The result is in nanoseconds.
pub fn parse(input: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::Invalid {
        input: input.to_owned(),
    };
    let mut s = input;
    let mut neg = false;
    if let Some(r) = s.strip_prefix('-') {
        neg = true;
        s = r;
    } else if let Some(r) = s.strip_prefix('+') {
        s = r;
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: f64 = 0.0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let mut i = 0;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        let num: f64 = s[..i].parse().map_err(|_| invalid())?;
        s = &s[i..];
        let mut j = 0;
        let sb = s.as_bytes();
        while j < sb.len() && !(sb[j] == b'.' || sb[j].is_ascii_digit()) {
            j += 1;
        }
        let unit = &s[..j];
        s = &s[j..];
        let mult: f64 = match unit {
            "" => {
                return Err(DurationError::MissingUnit {
                    input: input.to_owned(),
                });
            }
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => {
                return Err(DurationError::UnknownUnit {
                    unit: unit.to_owned(),
                    input: input.to_owned(),
                });
            }
        };
        total += num * mult;
    }
    if total > 9.223_372_036_854_775e18 {
        return Err(invalid());
    }
    let v = total.round() as i64;
    Ok(if neg { -v } else { v })
}

/// [`parse`] into a [`Duration`], refusing negative durations.
pub fn parse_std(input: &str) -> Result<Duration, DurationError> {
    let nanos = parse(input)?;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| DurationError::Negative {
            input: input.to_owned(),
        })
}

/// Go's `Duration.String` of a signed number of nanoseconds: `1.5ms`, `2.25s`, `1m30s`, `0s`.
pub fn format(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    let u = nanos.unsigned_abs();
    let text = if u < 1_000_000_000 {
        let (unit, precision) = if u < 1_000 {
            ("ns", 0)
        } else if u < 1_000_000 {
            ("µs", 3)
        } else {
            ("ms", 6)
        };
        format!("{}{unit}", fraction(u, precision))
    } else {
        let seconds = format!("{}s", fraction(u % 60_000_000_000, 9));
        let minutes = u / 60_000_000_000;
        match (minutes / 60, minutes % 60) {
            (0, 0) => seconds,
            (0, m) => format!("{m}m{seconds}"),
            (h, m) => format!("{h}h{m}m{seconds}"),
        }
    };
    if nanos < 0 { format!("-{text}") } else { text }
}

/// [`format()`] of a [`Duration`] (durations past Go's range print as its largest one).
pub fn format_std(d: Duration) -> String {
    format(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// `v / 10^precision` with the fraction's trailing zeros removed.
fn fraction(v: u64, precision: u32) -> String {
    let p = 10u64.pow(precision);
    let (int, frac) = (v / p, v % p);
    if precision == 0 || frac == 0 {
        return int.to_string();
    }
    let digits = format!("{frac:0width$}", width = precision as usize);
    format!("{int}.{}", digits.trim_end_matches('0'))
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
            (".5s", ms(500)),
            ("30s", ms(30_000)),
            ("+5s", ms(5000)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("7ns", Duration::from_nanos(7)),
            ("1m0.5s", ms(60_500)),
        ];
        for (input, want) in table {
            assert_eq!(parse_std(input), Ok(want), "{input}");
        }
        assert_eq!(parse("-1.5s"), Ok(-1_500_000_000));
    }

    #[test]
    fn invalid_durations_fail_with_go_messages() {
        let table = [
            ("", r#"time: invalid duration """#),
            ("10", r#"time: missing unit in duration "10""#),
            ("s", r#"time: invalid duration "s""#),
            ("3d", r#"time: unknown unit "d" in duration "3d""#),
            ("1..2s", r#"time: invalid duration "1..2s""#),
            ("abc", r#"time: invalid duration "abc""#),
            (" 10s", r#"time: invalid duration " 10s""#),
            ("9999999h", r#"time: invalid duration "9999999h""#),
        ];
        for (input, message) in table {
            assert_eq!(parse(input).unwrap_err().to_string(), message, "{input}");
        }
        assert_eq!(
            parse_std("-1s"),
            Err(DurationError::Negative {
                input: "-1s".to_owned()
            })
        );
    }

    #[test]
    fn formats_like_go() {
        let table = [
            (0, "0s"),
            (7, "7ns"),
            (999, "999ns"),
            (1_500, "1.5µs"),
            (2_000_000, "2ms"),
            (1_500_000, "1.5ms"),
            (1_234_567, "1.234567ms"),
            (2_250_000_000, "2.25s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_000_000_000, "1h2m3s"),
            (-2_000_000, "-2ms"),
            (-1_000_000_000, "-1s"),
        ];
        for (nanos, text) in table {
            assert_eq!(format(nanos), text, "{nanos}");
        }
        assert_eq!(format_std(Duration::from_secs(5_400)), "1h30m0s");
    }
}
