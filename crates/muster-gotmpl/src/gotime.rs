//! Go's `time.Time` for templates: layout-based formatting and parsing (reference time
//! `Mon Jan 2 15:04:05 MST 2006`) and `String()`.

use std::rc::Rc;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike, Utc};

/// Seconds from 0001-01-01 to 1970-01-01 (Go's zero time, as a Unix time).
const ZERO_UNIX: i64 = -62_135_596_800;

/// A time zone.
#[derive(Clone, Debug)]
pub(crate) enum Loc {
    /// UTC.
    Utc,
    /// The process's local zone.
    Local,
    /// A fixed offset with a name (possibly empty).
    Fixed(Rc<str>, i32),
}

impl Loc {
    /// Zone abbreviation and offset (seconds east of UTC) at the given instant.
    fn zone_at(&self, unix: i64) -> (String, i32) {
        match self {
            Loc::Utc => ("UTC".to_owned(), 0),
            Loc::Local => {
                let off = DateTime::from_timestamp(unix, 0)
                    .map(|d| {
                        chrono::Local
                            .offset_from_utc_datetime(&d.naive_utc())
                            .fix()
                            .local_minus_utc()
                    })
                    .unwrap_or(0);
                (
                    if off == 0 {
                        "UTC".to_owned()
                    } else {
                        String::new()
                    },
                    off,
                )
            }
            Loc::Fixed(name, off) => (name.to_string(), *off),
        }
    }
}

/// Go's `time.Time`.
#[derive(Clone, Debug)]
pub(crate) struct GoTime {
    /// Seconds since the Unix epoch.
    pub(crate) unix: i64,
    /// Nanoseconds within the second.
    pub(crate) nsec: u32,
    /// Location used for display.
    pub(crate) loc: Loc,
}

struct Civil {
    year: i64,
    month: u32,
    day: u32,
    yday: u32,
    weekday: u32,
    hour: u32,
    min: u32,
    sec: u32,
}

const LONG_DAY_NAMES: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const LONG_MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

impl GoTime {
    /// The current time in the local zone.
    pub(crate) fn now() -> Self {
        let n = Utc::now();
        GoTime {
            unix: n.timestamp(),
            nsec: n.timestamp_subsec_nanos(),
            loc: Loc::Local,
        }
    }

    /// Go's zero `time.Time{}`.
    pub(crate) fn zero() -> Self {
        GoTime {
            unix: ZERO_UNIX,
            nsec: 0,
            loc: Loc::Utc,
        }
    }

    /// `time.Unix(sec, 0)` (in the local zone).
    pub(crate) fn from_unix(sec: i64) -> Self {
        GoTime {
            unix: sec,
            nsec: 0,
            loc: Loc::Local,
        }
    }

    /// Same instant (Go's `==` on times also compares the location; close enough here).
    pub(crate) fn same(&self, other: &GoTime) -> bool {
        self.unix == other.unix && self.nsec == other.nsec
    }

    /// The same instant in another location.
    pub(crate) fn in_loc(&self, loc: Loc) -> Self {
        GoTime {
            unix: self.unix,
            nsec: self.nsec,
            loc,
        }
    }

    fn civil(&self) -> (Civil, String, i32) {
        let (name, off) = self.loc.zone_at(self.unix);
        let local = self.unix + i64::from(off);
        let dt = DateTime::from_timestamp(local, 0)
            .map(|d| d.naive_utc())
            .unwrap_or_default();
        let c = Civil {
            year: i64::from(dt.year()),
            month: dt.month(),
            day: dt.day(),
            yday: dt.ordinal(),
            weekday: dt.weekday().num_days_from_sunday(),
            hour: dt.hour(),
            min: dt.minute(),
            sec: dt.second(),
        };
        (c, name, off)
    }

    /// Go's `Time.Format`.
    pub(crate) fn format(&self, layout: &str) -> String {
        let (c, name, offset) = self.civil();
        let mut b = String::new();
        let mut layout = layout;
        while !layout.is_empty() {
            let (prefix, std, suffix) = next_std_chunk(layout);
            b.push_str(prefix);
            let Some(std) = std else { break };
            layout = suffix;
            match std {
                Std::Year => append_int(&mut b, c.year.abs() % 100, 2),
                Std::LongYear => append_int(&mut b, c.year, 4),
                Std::Month => b.push_str(&LONG_MONTH_NAMES[(c.month - 1) as usize][..3]),
                Std::LongMonth => b.push_str(LONG_MONTH_NAMES[(c.month - 1) as usize]),
                Std::NumMonth => append_int(&mut b, i64::from(c.month), 0),
                Std::ZeroMonth => append_int(&mut b, i64::from(c.month), 2),
                Std::WeekDay => b.push_str(&LONG_DAY_NAMES[c.weekday as usize][..3]),
                Std::LongWeekDay => b.push_str(LONG_DAY_NAMES[c.weekday as usize]),
                Std::Day => append_int(&mut b, i64::from(c.day), 0),
                Std::UnderDay => {
                    if c.day < 10 {
                        b.push(' ');
                    }
                    append_int(&mut b, i64::from(c.day), 0);
                }
                Std::ZeroDay => append_int(&mut b, i64::from(c.day), 2),
                Std::UnderYearDay => {
                    if c.yday < 100 {
                        b.push(' ');
                        if c.yday < 10 {
                            b.push(' ');
                        }
                    }
                    append_int(&mut b, i64::from(c.yday), 0);
                }
                Std::ZeroYearDay => append_int(&mut b, i64::from(c.yday), 3),
                Std::Hour => append_int(&mut b, i64::from(c.hour), 2),
                Std::Hour12 | Std::ZeroHour12 => {
                    let hr = if c.hour % 12 == 0 { 12 } else { c.hour % 12 };
                    append_int(
                        &mut b,
                        i64::from(hr),
                        if std == Std::Hour12 { 0 } else { 2 },
                    );
                }
                Std::Minute => append_int(&mut b, i64::from(c.min), 0),
                Std::ZeroMinute => append_int(&mut b, i64::from(c.min), 2),
                Std::Second => append_int(&mut b, i64::from(c.sec), 0),
                Std::ZeroSecond => append_int(&mut b, i64::from(c.sec), 2),
                Std::PM => b.push_str(if c.hour >= 12 { "PM" } else { "AM" }),
                Std::Pm => b.push_str(if c.hour >= 12 { "pm" } else { "am" }),
                Std::Tz(z) => {
                    if offset == 0 && z.iso {
                        b.push('Z');
                        continue;
                    }
                    let mut zone = offset / 60;
                    let mut absoffset = offset;
                    if zone < 0 {
                        b.push('-');
                        zone = -zone;
                        absoffset = -absoffset;
                    } else {
                        b.push('+');
                    }
                    append_int(&mut b, i64::from(zone / 60), 2);
                    if z.colon {
                        b.push(':');
                    }
                    if !z.short {
                        append_int(&mut b, i64::from(zone % 60), 2);
                    }
                    if z.seconds {
                        if z.colon {
                            b.push(':');
                        }
                        append_int(&mut b, i64::from(absoffset % 60), 2);
                    }
                }
                Std::TzName => {
                    if !name.is_empty() {
                        b.push_str(&name);
                        continue;
                    }
                    let mut zone = offset / 60;
                    if zone < 0 {
                        b.push('-');
                        zone = -zone;
                    } else {
                        b.push('+');
                    }
                    append_int(&mut b, i64::from(zone / 60), 2);
                    append_int(&mut b, i64::from(zone % 60), 2);
                }
                Std::Frac { digits, trim, sep } => {
                    let s = format!("{:09}", self.nsec);
                    let mut n = digits.min(9);
                    if trim {
                        let bytes = s.as_bytes();
                        while n > 0 && bytes[n - 1] == b'0' {
                            n -= 1;
                        }
                        if n == 0 {
                            continue;
                        }
                    }
                    b.push(sep);
                    b.push_str(&s[..n]);
                }
            }
        }
        b
    }

    /// Go's `Time.String` (without the monotonic clock reading).
    pub(crate) fn to_go_string(&self) -> String {
        self.format("2006-01-02 15:04:05.999999999 -0700 MST")
    }

    /// RFC 3339 with nanoseconds, as `encoding/json` writes times.
    pub(crate) fn to_rfc3339_nano(&self) -> String {
        self.format("2006-01-02T15:04:05.999999999Z07:00")
    }

    /// Adds a duration in nanoseconds.
    pub(crate) fn add_nanos(&self, d: i64) -> Self {
        let total = i128::from(self.unix) * 1_000_000_000 + i128::from(self.nsec) + i128::from(d);
        GoTime {
            unix: total.div_euclid(1_000_000_000) as i64,
            nsec: total.rem_euclid(1_000_000_000) as u32,
            loc: self.loc.clone(),
        }
    }

    /// The civil year in the time's location.
    pub(crate) fn year(&self) -> i64 {
        self.civil().0.year
    }

    /// A field of the civil time: day, hour, minute, second, year day.
    pub(crate) fn field(&self, name: &str) -> Option<i64> {
        let c = self.civil().0;
        Some(match name {
            "Year" => c.year,
            "Day" => i64::from(c.day),
            "Hour" => i64::from(c.hour),
            "Minute" => i64::from(c.min),
            "Second" => i64::from(c.sec),
            "YearDay" => i64::from(c.yday),
            "Nanosecond" => i64::from(self.nsec),
            _ => return None,
        })
    }

    /// Whether this is Go's zero time.
    pub(crate) fn is_zero(&self) -> bool {
        self.unix == ZERO_UNIX && self.nsec == 0
    }
}

fn append_int(b: &mut String, x: i64, width: usize) {
    if x < 0 {
        b.push('-');
    }
    let s = x.unsigned_abs().to_string();
    for _ in s.len()..width {
        b.push('0');
    }
    b.push_str(&s);
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct TzStyle {
    iso: bool,
    colon: bool,
    short: bool,
    seconds: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    TzName,
    Tz(TzStyle),
    Frac {
        digits: usize,
        trim: bool,
        sep: char,
    },
}

fn starts_with_lower(s: &str) -> bool {
    s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

/// Go's `nextStdChunk`.
fn next_std_chunk(layout: &str) -> (&str, Option<Std>, &str) {
    let b = layout.as_bytes();
    let tz = |iso, colon, short, seconds| {
        Std::Tz(TzStyle {
            iso,
            colon,
            short,
            seconds,
        })
    };
    let mut i = 0;
    while i < b.len() {
        // Every element starts with an ASCII byte: the inside of a multi-byte character
        // (literal text of the layout) is skipped, and never sliced.
        if !layout.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let rest = &layout[i..];
        let hit = |std: Std, len: usize| Some((&layout[..i], Some(std), &layout[i + len..]));
        let found = match b[i] {
            b'J' if rest.starts_with("Jan") => {
                if rest.starts_with("January") {
                    hit(Std::LongMonth, 7)
                } else if !starts_with_lower(&rest[3..]) {
                    hit(Std::Month, 3)
                } else {
                    None
                }
            }
            b'M' if rest.len() >= 3 => {
                if let Some(after) = rest.strip_prefix("Mon") {
                    if rest.starts_with("Monday") {
                        hit(Std::LongWeekDay, 6)
                    } else if !starts_with_lower(after) {
                        hit(Std::WeekDay, 3)
                    } else {
                        None
                    }
                } else if rest.starts_with("MST") {
                    hit(Std::TzName, 3)
                } else {
                    None
                }
            }
            b'0' => {
                if b.len() >= i + 2 && (b'1'..=b'6').contains(&b[i + 1]) {
                    let std = [
                        Std::ZeroMonth,
                        Std::ZeroDay,
                        Std::ZeroHour12,
                        Std::ZeroMinute,
                        Std::ZeroSecond,
                        Std::Year,
                    ][(b[i + 1] - b'1') as usize];
                    hit(std, 2)
                } else if rest.starts_with("002") {
                    hit(Std::ZeroYearDay, 3)
                } else {
                    None
                }
            }
            b'1' => {
                if rest.starts_with("15") {
                    hit(Std::Hour, 2)
                } else {
                    hit(Std::NumMonth, 1)
                }
            }
            b'2' => {
                if rest.starts_with("2006") {
                    hit(Std::LongYear, 4)
                } else {
                    hit(Std::Day, 1)
                }
            }
            b'_' => {
                if rest.starts_with("_2") {
                    if rest.starts_with("_2006") {
                        return (&layout[..i + 1], Some(Std::LongYear), &layout[i + 5..]);
                    }
                    hit(Std::UnderDay, 2)
                } else if rest.starts_with("__2") {
                    hit(Std::UnderYearDay, 3)
                } else {
                    None
                }
            }
            b'3' => hit(Std::Hour12, 1),
            b'4' => hit(Std::Minute, 1),
            b'5' => hit(Std::Second, 1),
            b'P' if rest.starts_with("PM") => hit(Std::PM, 2),
            b'p' if rest.starts_with("pm") => hit(Std::Pm, 2),
            b'-' => {
                if rest.starts_with("-070000") {
                    hit(tz(false, false, false, true), 7)
                } else if rest.starts_with("-07:00:00") {
                    hit(tz(false, true, false, true), 9)
                } else if rest.starts_with("-0700") {
                    hit(tz(false, false, false, false), 5)
                } else if rest.starts_with("-07:00") {
                    hit(tz(false, true, false, false), 6)
                } else if rest.starts_with("-07") {
                    hit(tz(false, false, true, false), 3)
                } else {
                    None
                }
            }
            b'Z' => {
                if rest.starts_with("Z070000") {
                    hit(tz(true, false, false, true), 7)
                } else if rest.starts_with("Z07:00:00") {
                    hit(tz(true, true, false, true), 9)
                } else if rest.starts_with("Z0700") {
                    hit(tz(true, false, false, false), 5)
                } else if rest.starts_with("Z07:00") {
                    hit(tz(true, true, false, false), 6)
                } else if rest.starts_with("Z07") {
                    hit(tz(true, false, true, false), 3)
                } else {
                    None
                }
            }
            c @ (b'.' | b',') => {
                if i + 1 < b.len() && (b[i + 1] == b'0' || b[i + 1] == b'9') {
                    let ch = b[i + 1];
                    let mut j = i + 1;
                    while j < b.len() && b[j] == ch {
                        j += 1;
                    }
                    if !(j < b.len() && b[j].is_ascii_digit()) {
                        let std = Std::Frac {
                            digits: j - (i + 1),
                            trim: ch == b'9',
                            sep: c as char,
                        };
                        return (&layout[..i], Some(std), &layout[j..]);
                    }
                }
                None
            }
            _ => None,
        };
        if let Some(f) = found {
            return f;
        }
        i += 1;
    }
    (layout, None, "")
}

// ---- parsing -------------------------------------------------------------------------------

fn is_digit_at(s: &str, i: usize) -> bool {
    s.as_bytes().get(i).is_some_and(u8::is_ascii_digit)
}

fn getnum(s: &str, fixed: bool) -> Option<(i64, &str)> {
    if !is_digit_at(s, 0) {
        return None;
    }
    let b = s.as_bytes();
    if !is_digit_at(s, 1) {
        if fixed {
            return None;
        }
        return Some((i64::from(b[0] - b'0'), &s[1..]));
    }
    Some((
        i64::from(b[0] - b'0') * 10 + i64::from(b[1] - b'0'),
        &s[2..],
    ))
}

fn getnum3(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    let mut n = 0i64;
    let mut i = 0;
    while i < 3 && is_digit_at(s, i) {
        n = n * 10 + i64::from(b[i] - b'0');
        i += 1;
    }
    if i == 0 || fixed && i != 3 {
        return None;
    }
    Some((n, &s[i..]))
}

fn cutspace(s: &str) -> &str {
    s.trim_start_matches(' ')
}

fn skip<'v>(mut value: &'v str, mut prefix: &str) -> Option<&'v str> {
    while let Some(p) = prefix.chars().next() {
        if p == ' ' {
            if !value.is_empty() && !value.starts_with(' ') {
                return None;
            }
            prefix = cutspace(prefix);
            value = cutspace(value);
            continue;
        }
        value = value.strip_prefix(p)?;
        prefix = &prefix[p.len_utf8()..];
    }
    Some(value)
}

fn lookup<'v>(names: &[&str], value: &'v str, short: bool) -> Option<(usize, &'v str)> {
    for (i, name) in names.iter().enumerate() {
        let name = if short { &name[..3] } else { name };
        if let Some(head) = value.get(..name.len())
            && head.eq_ignore_ascii_case(name)
        {
            return Some((i, &value[name.len()..]));
        }
    }
    None
}

fn parse_nanoseconds(value: &str, nbytes: usize) -> Option<i64> {
    let b = value.as_bytes();
    if !(b[0] == b'.' || b[0] == b',') {
        return None;
    }
    let digits = value.get(1..nbytes)?;
    if !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut ns: i64 = 0;
    for (k, c) in digits.bytes().enumerate() {
        if k >= 10 {
            break;
        }
        ns = ns * 10 + i64::from(c - b'0');
    }
    let n = digits.len().min(10);
    for _ in n..9 {
        ns *= 10;
    }
    if n > 9 {
        ns /= 10;
    }
    Some(ns)
}

fn parse_time_zone(value: &str) -> Option<usize> {
    let b = value.as_bytes();
    if b.len() < 3 {
        return None;
    }
    if matches!(value.get(..4), Some("ChST" | "MeST")) {
        return Some(4);
    }
    if value.get(..3) == Some("GMT") {
        // GMT+h / GMT-h
        let mut n = 3;
        if b.len() > 3 && (b[3] == b'+' || b[3] == b'-') {
            n = 4;
            while n < b.len() && b[n].is_ascii_digit() {
                n += 1;
            }
        }
        return Some(n);
    }
    if b[0] == b'+' || b[0] == b'-' {
        let mut n = 1;
        while n < b.len() && (b[n].is_ascii_alphanumeric()) {
            n += 1;
        }
        return if n > 1 { Some(n) } else { None };
    }
    let mut n = 0;
    while n < b.len() && b[n].is_ascii_uppercase() {
        n += 1;
    }
    match n {
        0..=2 => None,
        5 if b[4] != b'T' => None,
        3..=5 => Some(n),
        _ => None,
    }
}

fn days_in(month: i64, year: i64) -> i64 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    match month {
        2 => {
            if leap {
                29
            } else {
                28
            }
        }
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Go's `time.ParseInLocation(layout, value, time.Local)`; `None` on any parse error.
pub(crate) fn parse_in_local(layout: &str, value: &str) -> Option<GoTime> {
    let mut layout = layout;
    let mut value = value;
    let (mut year, mut month, mut day, mut yday) = (0i64, -1i64, -1i64, -1i64);
    let (mut hour, mut min, mut sec, mut nsec) = (0i64, 0i64, 0i64, 0i64);
    let (mut am_set, mut pm_set) = (false, false);
    let mut utc = false;
    let mut zone_offset: Option<i64> = None;
    let mut zone_name = String::new();
    loop {
        let (prefix, std, suffix) = next_std_chunk(layout);
        value = skip(value, prefix)?;
        let Some(std) = std else {
            if !value.is_empty() {
                return None;
            }
            break;
        };
        layout = suffix;
        match std {
            Std::Year => {
                if value.len() < 2 {
                    return None;
                }
                let p = value.get(..2)?;
                if !p.bytes().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                value = &value[2..];
                year = p.parse::<i64>().ok()?;
                year += if year >= 69 { 1900 } else { 2000 };
            }
            Std::LongYear => {
                if value.len() < 4 || !is_digit_at(value, 0) {
                    return None;
                }
                let p = value.get(..4)?;
                if !p.bytes().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                year = p.parse().ok()?;
                value = &value[4..];
            }
            Std::Month | Std::LongMonth => {
                let (m, rest) = lookup(&LONG_MONTH_NAMES, value, std == Std::Month)?;
                month = m as i64 + 1;
                value = rest;
            }
            Std::NumMonth | Std::ZeroMonth => {
                let (m, rest) = getnum(value, std == Std::ZeroMonth)?;
                if !(1..=12).contains(&m) {
                    return None;
                }
                month = m;
                value = rest;
            }
            Std::WeekDay | Std::LongWeekDay => {
                let (_, rest) = lookup(&LONG_DAY_NAMES, value, std == Std::WeekDay)?;
                value = rest;
            }
            Std::Day | Std::UnderDay | Std::ZeroDay => {
                if std == Std::UnderDay && value.starts_with(' ') {
                    value = &value[1..];
                }
                let (d, rest) = getnum(value, std == Std::ZeroDay)?;
                day = d;
                value = rest;
            }
            Std::UnderYearDay | Std::ZeroYearDay => {
                for _ in 0..2 {
                    if std == Std::UnderYearDay && value.starts_with(' ') {
                        value = &value[1..];
                    }
                }
                let (d, rest) = getnum3(value, std == Std::ZeroYearDay)?;
                yday = d;
                value = rest;
            }
            Std::Hour => {
                let (h, rest) = getnum(value, false)?;
                if !(0..24).contains(&h) {
                    return None;
                }
                hour = h;
                value = rest;
            }
            Std::Hour12 | Std::ZeroHour12 => {
                let (h, rest) = getnum(value, std == Std::ZeroHour12)?;
                if !(0..=12).contains(&h) {
                    return None;
                }
                hour = h;
                value = rest;
            }
            Std::Minute | Std::ZeroMinute => {
                let (m, rest) = getnum(value, std == Std::ZeroMinute)?;
                if !(0..60).contains(&m) {
                    return None;
                }
                min = m;
                value = rest;
            }
            Std::Second | Std::ZeroSecond => {
                let (s, rest) = getnum(value, std == Std::ZeroSecond)?;
                if !(0..60).contains(&s) {
                    return None;
                }
                sec = s;
                value = rest;
                let vb = value.as_bytes();
                if vb.len() >= 2 && (vb[0] == b'.' || vb[0] == b',') && vb[1].is_ascii_digit() {
                    let (_, next, _) = next_std_chunk(layout);
                    if !matches!(next, Some(Std::Frac { .. })) {
                        let mut n = 2;
                        while n < vb.len() && vb[n].is_ascii_digit() {
                            n += 1;
                        }
                        nsec = parse_nanoseconds(value, n)?;
                        value = &value[n..];
                    }
                }
            }
            Std::PM | Std::Pm => {
                let p = value.get(..2)?;
                value = &value[2..];
                match (std, p) {
                    (Std::PM, "PM") | (Std::Pm, "pm") => pm_set = true,
                    (Std::PM, "AM") | (Std::Pm, "am") => am_set = true,
                    _ => return None,
                }
            }
            Std::Tz(z) => {
                if z.iso && !z.seconds && value.starts_with('Z') {
                    value = &value[1..];
                    utc = true;
                    continue;
                }
                let vb = value.as_bytes();
                let (sign, hh, mm, ss, rest);
                if z.colon && !z.seconds {
                    if vb.len() < 6 || vb[3] != b':' {
                        return None;
                    }
                    (sign, hh, mm, ss, rest) = (
                        value.get(..1)?,
                        value.get(1..3)?,
                        value.get(4..6)?,
                        "00",
                        value.get(6..)?,
                    );
                } else if z.short {
                    if vb.len() < 3 {
                        return None;
                    }
                    (sign, hh, mm, ss, rest) = (
                        value.get(..1)?,
                        value.get(1..3)?,
                        "00",
                        "00",
                        value.get(3..)?,
                    );
                } else if z.colon && z.seconds {
                    if vb.len() < 9 || vb[3] != b':' || vb[6] != b':' {
                        return None;
                    }
                    (sign, hh, mm, ss, rest) = (
                        value.get(..1)?,
                        value.get(1..3)?,
                        value.get(4..6)?,
                        value.get(7..9)?,
                        value.get(9..)?,
                    );
                } else if z.seconds {
                    if vb.len() < 7 {
                        return None;
                    }
                    (sign, hh, mm, ss, rest) = (
                        value.get(..1)?,
                        value.get(1..3)?,
                        value.get(3..5)?,
                        value.get(5..7)?,
                        value.get(7..)?,
                    );
                } else {
                    if vb.len() < 5 {
                        return None;
                    }
                    (sign, hh, mm, ss, rest) = (
                        value.get(..1)?,
                        value.get(1..3)?,
                        value.get(3..5)?,
                        "00",
                        value.get(5..)?,
                    );
                }
                let num = |s: &str| -> Option<i64> {
                    if s.bytes().all(|c| c.is_ascii_digit()) {
                        s.parse().ok()
                    } else {
                        None
                    }
                };
                let mut off = (num(hh)? * 60 + num(mm)?) * 60 + num(ss)?;
                match sign {
                    "+" => {}
                    "-" => off = -off,
                    _ => return None,
                }
                zone_offset = Some(off);
                value = rest;
            }
            Std::TzName => {
                if value.starts_with("UTC") {
                    utc = true;
                    value = &value[3..];
                    continue;
                }
                let n = parse_time_zone(value)?;
                zone_name = value[..n].to_owned();
                value = &value[n..];
            }
            Std::Frac { digits, trim, .. } => {
                if !trim {
                    let ndigit = 1 + digits;
                    if value.len() < ndigit {
                        return None;
                    }
                    nsec = parse_nanoseconds(value, ndigit)?;
                    value = &value[ndigit..];
                } else {
                    let vb = value.as_bytes();
                    if vb.len() < 2 || !(vb[0] == b'.' || vb[0] == b',') || !vb[1].is_ascii_digit()
                    {
                        continue;
                    }
                    let mut i = 0;
                    while i < 9 && i + 1 < vb.len() && vb[i + 1].is_ascii_digit() {
                        i += 1;
                    }
                    nsec = parse_nanoseconds(value, 1 + i)?;
                    value = &value[1 + i..];
                }
            }
        }
    }
    if pm_set && hour < 12 {
        hour += 12;
    } else if am_set && hour == 12 {
        hour = 0;
    }
    if yday >= 0 {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let date = NaiveDate::from_yo_opt(i32::try_from(year).ok()?, u32::try_from(yday).ok()?)?;
        let _ = leap;
        if month >= 0 && month != i64::from(date.month()) {
            return None;
        }
        if day >= 0 && day != i64::from(date.day()) {
            return None;
        }
        month = i64::from(date.month());
        day = i64::from(date.day());
    } else {
        if month < 0 {
            month = 1;
        }
        if day < 0 {
            day = 1;
        }
    }
    if day < 1 || day > days_in(month, year) {
        return None;
    }
    let naive = NaiveDate::from_ymd_opt(
        i32::try_from(year).ok()?,
        u32::try_from(month).ok()?,
        u32::try_from(day).ok()?,
    )?
    .and_hms_opt(
        u32::try_from(hour).ok()?,
        u32::try_from(min).ok()?,
        u32::try_from(sec).ok()?,
    )?;
    let base = naive.and_utc().timestamp();
    let nsec = u32::try_from(nsec).ok()?;
    if utc {
        return Some(GoTime {
            unix: base,
            nsec,
            loc: Loc::Utc,
        });
    }
    if let Some(off) = zone_offset {
        let unix = base - off;
        let (local_name, local_off) = Loc::Local.zone_at(unix);
        if i64::from(local_off) == off && (zone_name.is_empty() || local_name == zone_name) {
            return Some(GoTime {
                unix,
                nsec,
                loc: Loc::Local,
            });
        }
        return Some(GoTime {
            unix,
            nsec,
            loc: Loc::Fixed(zone_name.into(), off as i32),
        });
    }
    if !zone_name.is_empty() {
        let (local_name, local_off) = Loc::Local.zone_at(base);
        if local_name == zone_name {
            return Some(GoTime {
                unix: base - i64::from(local_off),
                nsec,
                loc: Loc::Local,
            });
        }
        if zone_name.len() > 3 && zone_name.starts_with("GMT") {
            let h: i64 = zone_name[3..].parse().ok()?;
            let off = h * 3600;
            return Some(GoTime {
                unix: base - off,
                nsec,
                loc: Loc::Fixed(zone_name.into(), off as i32),
            });
        }
        return Some(GoTime {
            unix: base,
            nsec,
            loc: Loc::Fixed(zone_name.into(), 0),
        });
    }
    let local_off = local_offset_for_naive(&naive);
    Some(GoTime {
        unix: base - i64::from(local_off),
        nsec,
        loc: Loc::Local,
    })
}

fn local_offset_for_naive(naive: &NaiveDateTime) -> i32 {
    chrono::Local
        .offset_from_local_datetime(naive)
        .earliest()
        .map_or(0, |o| o.fix().local_minus_utc())
}
