//! Go's `fmt` package for template values: `Sprint`, `Sprintln`, `Sprintf` with verbs and
//! flags, and `strconv.FormatFloat`.

use super::strconv::{can_backquote, quote_rune, quote_with};
use super::unicode::is_print;
use super::value::Value;

/// The most one print function (`print`, `printf`, `println`, an action's value) writes. Go
/// has no such bound, but a width or precision of up to ten million applied to every element
/// of a collection could ask for gigabytes; a printer that reaches it stops, and the function
/// fails.
pub const MAX_PRINT_BYTES: usize = 16 * 1024 * 1024;

/// The error of a print function whose result reached [`MAX_PRINT_BYTES`]; `None` when
/// `printed` is within it.
pub(crate) fn too_large(function: &str, printed: &str) -> Option<String> {
    (printed.len() > MAX_PRINT_BYTES)
        .then(|| format!("{function}: the result exceeds the limit of {MAX_PRINT_BYTES} bytes"))
}

/// The `%v` form of a value, as `fmt.Sprint(v)` prints it.
pub(crate) fn sprint_one(v: &Value<'_>) -> String {
    let mut p = Printer::default();
    p.print_arg(v, 'v');
    p.buf
}

/// Go's `fmt.Sprint`.
pub(crate) fn sprint(args: &[Value<'_>]) -> String {
    let mut p = Printer::default();
    let mut prev_string = false;
    for (i, a) in args.iter().enumerate() {
        let is_string = matches!(a, Value::Str(_));
        if i > 0 && !is_string && !prev_string {
            p.buf.push(' ');
        }
        p.print_arg(a, 'v');
        prev_string = is_string;
    }
    p.buf
}

/// Go's `fmt.Sprintln`.
pub(crate) fn sprintln(args: &[Value<'_>]) -> String {
    let mut p = Printer::default();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            p.buf.push(' ');
        }
        p.print_arg(a, 'v');
    }
    p.buf.push('\n');
    p.buf
}

/// Go's `fmt.Sprintf`.
pub(crate) fn sprintf(format: &str, args: &[Value<'_>]) -> String {
    let mut p = Printer::default();
    p.do_printf(format, args);
    p.buf
}

#[derive(Default, Clone, Copy)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

#[derive(Default)]
struct Printer {
    buf: String,
    f: Flags,
}

const LDIGITS: &[u8; 17] = b"0123456789abcdefx";
const UDIGITS: &[u8; 17] = b"0123456789ABCDEFX";

impl Printer {
    // ---- padding -------------------------------------------------------------------------

    /// Whether the printer reached [`MAX_PRINT_BYTES`] (and prints nothing more).
    fn is_full(&self) -> bool {
        self.buf.len() > MAX_PRINT_BYTES
    }

    fn write_padding(&mut self, n: usize) {
        const SPACES: &str = "                                                                ";
        const ZEROS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
        let run = if self.f.zero { ZEROS } else { SPACES };
        // Past the limit the result is refused anyway: one byte over is enough to tell.
        let room = (MAX_PRINT_BYTES + 1).saturating_sub(self.buf.len());
        let mut left = n.min(room);
        self.buf.reserve(left);
        while left > 0 {
            let piece = left.min(run.len());
            self.buf.push_str(&run[..piece]);
            left -= piece;
        }
    }

    fn pad(&mut self, s: &str) {
        let Some(wid) = self.f.wid.filter(|w| *w > 0) else {
            self.buf.push_str(s);
            return;
        };
        let width = wid.saturating_sub(s.chars().count());
        if self.f.minus {
            self.buf.push_str(s);
            self.write_padding(width);
        } else {
            self.write_padding(width);
            self.buf.push_str(s);
        }
    }

    fn pad_no_zero(&mut self, s: &str) {
        let old = self.f.zero;
        self.f.zero = false;
        self.pad(s);
        self.f.zero = old;
    }

    fn truncate<'s>(&self, s: &'s str) -> &'s str {
        if let Some(p) = self.f.prec
            && let Some((i, _)) = s.char_indices().nth(p)
        {
            return &s[..i];
        }
        s
    }

    // ---- dispatch ------------------------------------------------------------------------

    fn print_arg(&mut self, v: &Value<'_>, verb: char) {
        if v.is_nil() {
            match verb {
                'T' | 'v' => self.pad("<nil>"),
                _ => self.bad_verb(v, verb),
            }
            return;
        }
        if verb == 'T' {
            let t = v.type_name();
            self.fmt_s(&t);
            return;
        }
        self.print_value(v, verb);
    }

    fn print_value(&mut self, v: &Value<'_>, verb: char) {
        if self.is_full() {
            return;
        }
        match v {
            Value::Nil => {
                // A nil interface inside a collection.
                if self.f.sharp_v {
                    self.buf.push_str("interface {}(nil)");
                } else {
                    self.buf.push_str("<nil>");
                }
            }
            Value::Bool(b) => match verb {
                't' | 'v' => self.pad(if *b { "true" } else { "false" }),
                _ => self.bad_verb(v, verb),
            },
            Value::Int(i) | Value::Int64(i) => self.fmt_integer_verb(v, *i as u64, true, verb),
            Value::Uint8(u) => self.fmt_integer_verb(v, u64::from(*u), false, verb),
            Value::Float(f) => self.fmt_float_verb(v, *f, verb),
            Value::Str(s) => self.fmt_string_verb(v, s, verb),
            Value::Time(t) => {
                let s = t.to_go_string();
                match verb {
                    'v' | 's' | 'x' | 'X' | 'q' => {
                        if self.f.sharp_v {
                            self.fmt_s(&s);
                        } else {
                            self.fmt_string_verb(v, &s, verb);
                        }
                    }
                    _ => self.bad_verb(v, verb),
                }
            }
            _ if v.is_map() => {
                let entries = v.map_entries().unwrap_or_default();
                if self.f.sharp_v {
                    self.buf.push_str(&v.type_name());
                    if v.is_nil_collection() {
                        self.buf.push_str("(nil)");
                        return;
                    }
                    self.buf.push('{');
                } else {
                    self.buf.push_str("map[");
                }
                for (i, (k, x)) in entries.iter().enumerate() {
                    if i > 0 {
                        if self.f.sharp_v {
                            self.buf.push_str(", ");
                        } else {
                            self.buf.push(' ');
                        }
                    }
                    self.print_value(&Value::string(k.as_str()), verb);
                    self.buf.push(':');
                    self.print_value(x, verb);
                }
                self.buf.push(if self.f.sharp_v { '}' } else { ']' });
            }
            _ if v.is_seq() => {
                let items = v.seq_items().unwrap_or_default();
                if self.f.sharp_v {
                    self.buf.push_str(&v.type_name());
                    if v.is_nil_collection() {
                        self.buf.push_str("(nil)");
                        return;
                    }
                    self.buf.push('{');
                    for (i, x) in items.iter().enumerate() {
                        if i > 0 {
                            self.buf.push_str(", ");
                        }
                        self.print_value(x, verb);
                    }
                    self.buf.push('}');
                    return;
                }
                self.buf.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        self.buf.push(' ');
                    }
                    self.print_value(x, verb);
                }
                self.buf.push(']');
            }
            _ => self.buf.push('?'),
        }
    }

    fn bad_verb(&mut self, v: &Value<'_>, verb: char) {
        self.buf.push_str("%!");
        self.buf.push(verb);
        self.buf.push('(');
        if v.is_nil() {
            self.buf.push_str("<nil>");
        } else {
            self.buf.push_str(&v.type_name());
            self.buf.push('=');
            self.print_arg(v, 'v');
        }
        self.buf.push(')');
    }

    // ---- strings -------------------------------------------------------------------------

    fn fmt_string_verb(&mut self, v: &Value<'_>, s: &str, verb: char) {
        match verb {
            'v' => {
                if self.f.sharp_v {
                    self.fmt_q(s);
                } else {
                    self.fmt_s(s);
                }
            }
            's' => self.fmt_s(s),
            'x' => self.fmt_sx(s, LDIGITS),
            'X' => self.fmt_sx(s, UDIGITS),
            'q' => self.fmt_q(s),
            _ => self.bad_verb(v, verb),
        }
    }

    fn fmt_s(&mut self, s: &str) {
        let s = self.truncate(s).to_owned();
        self.pad(&s);
    }

    fn fmt_q(&mut self, s: &str) {
        let s = self.truncate(s).to_owned();
        if self.f.sharp && can_backquote(&s) {
            self.pad(&format!("`{s}`"));
        } else {
            let q = quote_with(&s, '"', self.f.plus);
            self.pad(&q);
        }
    }

    fn fmt_sx(&mut self, s: &str, digits: &[u8; 17]) {
        let b = s.as_bytes();
        let mut length = b.len();
        if let Some(p) = self.f.prec {
            length = length.min(p);
        }
        let mut width = 2 * length;
        if width > 0 {
            if self.f.space {
                if self.f.sharp {
                    width *= 2;
                }
                width += length - 1;
            } else if self.f.sharp {
                width += 2;
            }
        } else {
            if let Some(w) = self.f.wid {
                self.write_padding(w);
            }
            return;
        }
        let wid = self.f.wid.unwrap_or(0);
        if wid > width && !self.f.minus {
            self.write_padding(wid - width);
        }
        let mut out = String::new();
        if self.f.sharp {
            out.push('0');
            out.push(digits[16] as char);
        }
        for (i, c) in b.iter().take(length).enumerate() {
            if self.f.space && i > 0 {
                out.push(' ');
                if self.f.sharp {
                    out.push('0');
                    out.push(digits[16] as char);
                }
            }
            out.push(digits[(c >> 4) as usize] as char);
            out.push(digits[(c & 0xF) as usize] as char);
        }
        self.buf.push_str(&out);
        if wid > width && self.f.minus {
            self.write_padding(wid - width);
        }
    }

    // ---- integers ------------------------------------------------------------------------

    fn fmt_integer_verb(&mut self, v: &Value<'_>, u: u64, signed: bool, verb: char) {
        match verb {
            'v' | 'd' => self.fmt_integer(u, 10, signed, verb, LDIGITS),
            'b' => self.fmt_integer(u, 2, signed, verb, LDIGITS),
            'o' | 'O' => self.fmt_integer(u, 8, signed, verb, LDIGITS),
            'x' => self.fmt_integer(u, 16, signed, verb, LDIGITS),
            'X' => self.fmt_integer(u, 16, signed, verb, UDIGITS),
            'c' => {
                let c = char::from_u32(u as u32)
                    .filter(|_| u <= 0x10FFFF)
                    .unwrap_or('\u{FFFD}');
                self.pad(&c.to_string());
            }
            'q' => {
                let r = if u > 0x10FFFF { 0xFFFD } else { u as u32 };
                let q = quote_rune(r, self.f.plus);
                self.pad(&q);
            }
            'U' => self.fmt_unicode(u),
            _ => self.bad_verb(v, verb),
        }
    }

    fn fmt_integer(&mut self, u: u64, base: u64, signed: bool, verb: char, digits: &[u8; 17]) {
        let negative = signed && (u as i64) < 0;
        let mut u = if negative {
            (u as i64).unsigned_abs()
        } else {
            u
        };
        let mut prec = 0usize;
        if let Some(p) = self.f.prec {
            prec = p;
            if p == 0 && u == 0 {
                let old = self.f.zero;
                self.f.zero = false;
                let w = self.f.wid.unwrap_or(0);
                self.write_padding(w);
                self.f.zero = old;
                return;
            }
        } else if self.f.zero && self.f.wid.is_some() {
            prec = self.f.wid.unwrap_or(0);
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let mut rev: Vec<u8> = Vec::new();
        loop {
            rev.push(digits[(u % base) as usize]);
            u /= base;
            if u == 0 {
                break;
            }
        }
        while rev.len() < prec {
            rev.push(b'0');
        }
        if self.f.sharp {
            match base {
                2 => rev.extend_from_slice(b"b0"),
                8 if rev.last() != Some(&b'0') => rev.push(b'0'),
                16 => {
                    rev.push(digits[16]);
                    rev.push(b'0');
                }
                _ => {}
            }
        }
        if verb == 'O' {
            rev.extend_from_slice(b"o0");
        }
        if negative {
            rev.push(b'-');
        } else if self.f.plus {
            rev.push(b'+');
        } else if self.f.space {
            rev.push(b' ');
        }
        rev.reverse();
        let s = String::from_utf8_lossy(&rev).into_owned();
        self.pad_no_zero(&s);
    }

    fn fmt_unicode(&mut self, u: u64) {
        let mut prec = 4;
        if let Some(p) = self.f.prec {
            prec = prec.max(p);
        }
        let mut s = format!("U+{u:0prec$X}");
        if self.f.sharp
            && u <= 0x10FFFF
            && let Some(c) = char::from_u32(u as u32)
            && is_print(c)
        {
            s.push_str(&format!(" '{c}'"));
        }
        self.pad_no_zero(&s);
    }

    // ---- floats --------------------------------------------------------------------------

    fn fmt_float_verb(&mut self, v: &Value<'_>, x: f64, verb: char) {
        match verb {
            'v' => self.fmt_float(x, 'g', None),
            'b' | 'g' | 'G' | 'x' | 'X' => self.fmt_float(x, verb, None),
            'f' | 'e' | 'E' => self.fmt_float(x, verb, Some(6)),
            'F' => self.fmt_float(x, 'f', Some(6)),
            _ => self.bad_verb(v, verb),
        }
    }

    fn fmt_float(&mut self, x: f64, verb: char, default_prec: Option<usize>) {
        let prec = self.f.prec.or(default_prec);
        let s = format_float(x, verb, prec);
        let mut num = if s.starts_with('-') || s.starts_with('+') {
            s
        } else {
            format!("+{s}")
        };
        if self.f.space && num.starts_with('+') && !self.f.plus {
            num.replace_range(0..1, " ");
        }
        let second = num.as_bytes().get(1).copied();
        if second == Some(b'I') || second == Some(b'N') {
            if second == Some(b'N') && !self.f.space && !self.f.plus {
                num.remove(0);
            }
            self.pad_no_zero(&num);
            return;
        }
        if self.f.sharp && verb != 'b' {
            let mut digits: i64 = 0;
            if matches!(verb, 'v' | 'g' | 'G' | 'x') {
                digits = prec.map_or(6, |p| p as i64);
            }
            let mut tail = String::new();
            let bytes: Vec<char> = num.chars().collect();
            let mut body = String::new();
            body.push(bytes[0]);
            let mut has_point = false;
            let mut saw_nonzero = false;
            let mut i = 1;
            while i < bytes.len() {
                let c = bytes[i];
                match c {
                    '.' => {
                        has_point = true;
                        body.push(c);
                    }
                    'p' | 'P' => {
                        tail = bytes[i..].iter().collect();
                        break;
                    }
                    'e' | 'E' if verb != 'x' && verb != 'X' => {
                        tail = bytes[i..].iter().collect();
                        break;
                    }
                    _ => {
                        if c != '0' {
                            saw_nonzero = true;
                        }
                        if saw_nonzero {
                            digits -= 1;
                        }
                        body.push(c);
                    }
                }
                i += 1;
            }
            if !has_point {
                if body.len() == 2 && body.ends_with('0') {
                    digits -= 1;
                }
                body.push('.');
            }
            while digits > 0 {
                body.push('0');
                digits -= 1;
            }
            body.push_str(&tail);
            num = body;
        }
        if self.f.plus || !num.starts_with('+') {
            let len = num.chars().count();
            if self.f.zero && self.f.wid.is_some_and(|w| w > len) {
                let w = self.f.wid.unwrap_or(0);
                let sign = num.remove(0);
                self.buf.push(sign);
                self.write_padding(w - len);
                self.buf.push_str(&num);
                return;
            }
            self.pad(&num);
            return;
        }
        let rest = num[1..].to_owned();
        self.pad(&rest);
    }

    // ---- Printf --------------------------------------------------------------------------

    fn do_printf(&mut self, format: &str, args: &[Value<'_>]) {
        let fb = format.as_bytes();
        let end = fb.len();
        let mut st = PrintfState {
            arg_num: 0,
            reordered: false,
            good_arg_num: true,
        };
        let mut after_index;
        let mut i = 0usize;
        'format: while i < end {
            st.good_arg_num = true;
            let lasti = i;
            while i < end && fb[i] != b'%' {
                i += 1;
            }
            if i > lasti {
                self.buf.push_str(&format[lasti..i]);
            }
            if i >= end {
                break;
            }
            i += 1;
            self.f = Flags::default();
            while i < end {
                match fb[i] {
                    b'#' => self.f.sharp = true,
                    b'0' => self.f.zero = !self.f.minus,
                    b'+' => self.f.plus = true,
                    b'-' => {
                        self.f.minus = true;
                        self.f.zero = false;
                    }
                    b' ' => self.f.space = true,
                    c => {
                        if c.is_ascii_lowercase() && st.arg_num < args.len() {
                            let verb = c as char;
                            if verb == 'v' {
                                self.set_v_flags();
                            }
                            self.print_arg(&args[st.arg_num], verb);
                            st.arg_num += 1;
                            i += 1;
                            continue 'format;
                        }
                        break;
                    }
                }
                i += 1;
            }
            (i, after_index) = st.arg_number(format, i, args.len());
            if i < end && fb[i] == b'*' {
                i += 1;
                let (w, ok) = st.int_from_arg(args);
                if !ok {
                    self.buf.push_str("%!(BADWIDTH)");
                }
                if ok && w < 0 {
                    self.f.minus = true;
                    self.f.zero = false;
                }
                self.f.wid = if ok {
                    Some(w.unsigned_abs() as usize)
                } else {
                    None
                };
                after_index = false;
            } else {
                let (w, present, ni) = parse_num(format, i);
                i = ni;
                if present {
                    self.f.wid = Some(w);
                    if after_index {
                        st.good_arg_num = false;
                    }
                }
            }
            if i + 1 < end && fb[i] == b'.' {
                i += 1;
                if after_index {
                    st.good_arg_num = false;
                }
                (i, after_index) = st.arg_number(format, i, args.len());
                if i < end && fb[i] == b'*' {
                    i += 1;
                    let (p, ok) = st.int_from_arg(args);
                    if ok && p >= 0 {
                        self.f.prec = Some(p as usize);
                    } else {
                        self.f.prec = None;
                        self.buf.push_str("%!(BADPREC)");
                    }
                    after_index = false;
                } else {
                    let (p, present, ni) = parse_num(format, i);
                    i = ni;
                    self.f.prec = Some(if present { p } else { 0 });
                }
            }
            if !after_index {
                (i, _) = st.arg_number(format, i, args.len());
            }
            if i >= end {
                self.buf.push_str("%!(NOVERB)");
                break;
            }
            let verb = format[i..].chars().next().unwrap_or('?');
            i += verb.len_utf8();
            if verb == '%' {
                self.buf.push('%');
            } else if !st.good_arg_num {
                self.buf.push_str("%!");
                self.buf.push(verb);
                self.buf.push_str("(BADINDEX)");
            } else if st.arg_num >= args.len() {
                self.buf.push_str("%!");
                self.buf.push(verb);
                self.buf.push_str("(MISSING)");
            } else {
                if verb == 'v' {
                    self.set_v_flags();
                }
                self.print_arg(&args[st.arg_num], verb);
                st.arg_num += 1;
            }
        }
        if !st.reordered && st.arg_num < args.len() {
            self.f = Flags::default();
            self.buf.push_str("%!(EXTRA ");
            for (k, a) in args[st.arg_num..].iter().enumerate() {
                if k > 0 {
                    self.buf.push_str(", ");
                }
                if a.is_nil() {
                    self.buf.push_str("<nil>");
                } else {
                    self.buf.push_str(&a.type_name());
                    self.buf.push('=');
                    self.print_arg(a, 'v');
                }
            }
            self.buf.push(')');
        }
    }

    fn set_v_flags(&mut self) {
        self.f.sharp_v = self.f.sharp;
        self.f.sharp = false;
        self.f.plus_v = self.f.plus;
        self.f.plus = false;
    }
}

struct PrintfState {
    arg_num: usize,
    reordered: bool,
    good_arg_num: bool,
}

impl PrintfState {
    /// Go's `argNumber`: handles an explicit `[n]`; returns (new index, found).
    fn arg_number(&mut self, s: &str, i: usize, num_args: usize) -> (usize, bool) {
        let b = s.as_bytes();
        if i >= b.len() || b[i] != b'[' {
            return (i, false);
        }
        self.reordered = true;
        let (index, wid, ok) = parse_arg_number(&s[i..]);
        if ok && index >= 0 && (index as usize) < num_args {
            self.arg_num = index as usize;
            return (i + wid, true);
        }
        self.good_arg_num = false;
        (i + wid, ok)
    }

    /// Go's `intFromArg`.
    fn int_from_arg(&mut self, args: &[Value<'_>]) -> (i64, bool) {
        if self.arg_num >= args.len() {
            return (0, false);
        }
        let n = match &args[self.arg_num] {
            Value::Int(i) | Value::Int64(i) => Some(*i),
            _ => None,
        };
        self.arg_num += 1;
        match n {
            Some(n) if (-1_000_000..=1_000_000).contains(&n) => (n, true),
            _ => (0, false),
        }
    }
}

fn parse_arg_number(format: &str) -> (i64, usize, bool) {
    let b = format.as_bytes();
    if b.len() < 3 {
        return (0, 1, false);
    }
    for i in 1..b.len() {
        if b[i] == b']' {
            let (width, ok, newi) = parse_num(&format[..i], 1);
            if !ok || newi != i {
                return (0, i + 1, false);
            }
            return (width as i64 - 1, i + 1, true);
        }
    }
    (0, 1, false)
}

/// Parses a decimal number at `i`: (value, present, new index).
fn parse_num(s: &str, mut i: usize) -> (usize, bool, usize) {
    let b = s.as_bytes();
    let start = i;
    let mut n = 0usize;
    while i < b.len() && b[i].is_ascii_digit() {
        if n > 1_000_000 {
            return (0, false, b.len());
        }
        n = n * 10 + usize::from(b[i] - b'0');
        i += 1;
    }
    (n, i > start, i)
}

// ---- strconv.FormatFloat -------------------------------------------------------------------

/// Decimal digits of a finite positive float and the decimal point position.
struct Digits {
    d: Vec<u8>,
    dp: i32,
}

fn parse_sci(s: &str) -> Digits {
    // s like "1.2345e6" or "1e-7"
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut d: Vec<u8> = mant
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|c| c - b'0')
        .collect();
    while d.len() > 1 && d.last() == Some(&0) {
        d.pop();
    }
    if d == [0] {
        return Digits {
            d: Vec::new(),
            dp: 0,
        };
    }
    Digits { d, dp: exp + 1 }
}

fn shortest_digits(x: f64) -> Digits {
    parse_sci(&format!("{x:e}"))
}

/// More significant digits than any `f64` has in its exact decimal form (767): asking for
/// more only adds zeros, which the callers pad. Rust's formatter refuses precisions above
/// 65 535, which Go's accepts.
const EXACT_DIGITS: usize = 800;

/// More decimal places than any `f64` has in its exact decimal form (1 074).
const EXACT_PLACES: usize = 1_100;

/// Digits rounded to `n` significant digits (trailing zeros trimmed, as Go's decimal does).
fn rounded_digits(x: f64, n: usize) -> Digits {
    let n = n.min(EXACT_DIGITS);
    parse_sci(&format!("{:.*e}", n.saturating_sub(1), x))
}

/// `x` with `places` decimal places, as Go's `%.Nf` prints it.
fn fixed_places(x: f64, places: usize) -> String {
    let exact = places.min(EXACT_PLACES);
    let mut s = format!("{x:.exact$}");
    s.extend(std::iter::repeat_n('0', places - exact));
    s
}

fn digits_str(d: &Digits) -> String {
    d.d.iter().map(|c| (b'0' + c) as char).collect()
}

fn fmt_e(neg: bool, d: &Digits, prec: usize, fmt: char) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    let ds = digits_str(d);
    let first = ds.chars().next().unwrap_or('0');
    s.push(first);
    if prec > 0 {
        s.push('.');
        let mut rest: String = ds.chars().skip(1).take(prec).collect();
        while rest.len() < prec {
            rest.push('0');
        }
        s.push_str(&rest);
    }
    s.push(fmt);
    let exp = if d.d.is_empty() { 0 } else { d.dp - 1 };
    s.push(if exp < 0 { '-' } else { '+' });
    let e = exp.unsigned_abs();
    if e < 10 {
        s.push('0');
    }
    s.push_str(&e.to_string());
    s
}

fn fmt_f(neg: bool, d: &Digits, prec: usize) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    let digit = |i: i32| -> char {
        if i >= 0 && (i as usize) < d.d.len() {
            (b'0' + d.d[i as usize]) as char
        } else {
            '0'
        }
    };
    if d.dp > 0 {
        for i in 0..d.dp {
            s.push(digit(i));
        }
    } else {
        s.push('0');
    }
    if prec > 0 {
        s.push('.');
        for i in 1..=prec as i32 {
            s.push(digit(d.dp + i - 1));
        }
    }
    s
}

/// Go's `strconv.FormatFloat(x, verb, prec, 64)` (`prec` `None` = shortest).
pub(crate) fn format_float(x: f64, verb: char, prec: Option<usize>) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "+Inf".to_owned()
        } else {
            "-Inf".to_owned()
        };
    }
    let neg = x.is_sign_negative();
    let a = x.abs();
    match verb {
        'b' => {
            let bits = a.to_bits();
            let mut exp = ((bits >> 52) & 0x7FF) as i64;
            let mut mant = bits & ((1u64 << 52) - 1);
            if exp == 0 {
                exp += 1;
            } else {
                mant |= 1u64 << 52;
            }
            exp -= 1023 + 52;
            format!(
                "{}{}p{}{}",
                if neg { "-" } else { "" },
                mant,
                if exp >= 0 { "+" } else { "" },
                exp
            )
        }
        'x' | 'X' => format_hex_float(neg, a, prec, verb),
        'e' | 'E' => {
            let d = match prec {
                None => shortest_digits(a),
                Some(p) => rounded_digits(a, p + 1),
            };
            let p = prec.unwrap_or_else(|| d.d.len().saturating_sub(1));
            fmt_e(neg, &d, p, verb)
        }
        'f' => match prec {
            None => {
                let d = shortest_digits(a);
                let p = (d.d.len() as i32 - d.dp).max(0) as usize;
                fmt_f(neg, &d, p)
            }
            Some(p) => {
                let s = fixed_places(a, p);
                if neg { format!("-{s}") } else { s }
            }
        },
        _ => {
            // 'g' / 'G'
            let shortest = prec.is_none();
            let (d, mut prec) = match prec {
                None => {
                    let d = shortest_digits(a);
                    let n = d.d.len();
                    (d, n)
                }
                Some(p) => {
                    let p = if p == 0 { 1 } else { p };
                    (rounded_digits(a, p), p)
                }
            };
            let nd = d.d.len();
            let mut eprec = prec as i32;
            if eprec > nd as i32 && nd as i32 >= d.dp {
                eprec = nd as i32;
            }
            if shortest {
                eprec = 6;
            }
            let exp = if nd == 0 { 0 } else { d.dp - 1 };
            let e_char = if verb == 'G' { 'E' } else { 'e' };
            if exp < -4 || exp >= eprec {
                if prec > nd {
                    prec = nd;
                }
                return fmt_e(neg, &d, prec.saturating_sub(1), e_char);
            }
            if prec as i32 > d.dp {
                prec = nd;
            }
            fmt_f(neg, &d, (prec as i32 - d.dp).max(0) as usize)
        }
    }
}

fn format_hex_float(neg: bool, a: f64, prec: Option<usize>, verb: char) -> String {
    let upper = verb == 'X';
    let sign = if neg { "-" } else { "" };
    if a == 0.0 {
        let mut s = format!("{sign}0x0");
        if let Some(p) = prec.filter(|p| *p > 0) {
            s.push('.');
            s.push_str(&"0".repeat(p));
        }
        s.push_str("p+00");
        return if upper { s.to_uppercase() } else { s };
    }
    let bits = a.to_bits();
    let mut exp = ((bits >> 52) & 0x7FF) as i32;
    let mut mant = bits & ((1u64 << 52) - 1);
    if exp == 0 {
        // subnormal: normalize
        exp = -1022;
        while mant & (1u64 << 52) == 0 {
            mant <<= 1;
            exp -= 1;
        }
        mant &= (1u64 << 52) - 1;
    } else {
        exp -= 1023;
    }
    // 52 fraction bits = 13 hex digits
    let mut frac = mant;
    let mut ndig = 13usize;
    if let Some(p) = prec {
        if p < 13 {
            let shift = (13 - p) * 4;
            let full = frac | (1u64 << 52);
            let mut r = full >> shift;
            let rem = full & ((1u64 << shift) - 1);
            let half = 1u64 << (shift - 1);
            if rem > half || rem == half && r & 1 == 1 {
                r += 1;
            }
            if r >> (52 - shift) >= 2 {
                r >>= 1;
                exp += 1;
            }
            frac = (r << shift) & ((1u64 << 52) - 1);
        }
        ndig = p;
    } else {
        while ndig > 0 && frac & 0xF == 0 {
            frac >>= 4;
            ndig -= 1;
        }
        frac <<= (13 - ndig) * 4;
    }
    let mut s = format!("{sign}0x1");
    if ndig > 0 {
        s.push('.');
        let hex = format!("{frac:013x}");
        let mut h: String = hex.chars().take(ndig.min(13)).collect();
        while h.len() < ndig {
            h.push('0');
        }
        s.push_str(&h);
    }
    s.push('p');
    s.push(if exp < 0 { '-' } else { '+' });
    let e = exp.unsigned_abs();
    if e < 10 {
        s.push('0');
    }
    s.push_str(&e.to_string());
    if upper { s.to_uppercase() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precisions_beyond_rusts_formatter_print_as_go_does() {
        // Found by the template fuzz target: Rust's formatter panics above 65 535.
        let e = sprintf("%.70000e", &[Value::Float(0.5)]);
        assert_eq!(e.len(), "5.".len() + 70_000 + "e-01".len());
        assert!(
            e.starts_with("5.000") && e.ends_with("0e-01"),
            "{}",
            &e[..20]
        );
        let f = sprintf("%.70000f", &[Value::Float(0.5)]);
        assert_eq!(f.len(), "0.".len() + 70_000);
        assert!(f.starts_with("0.5000") && f.ends_with('0'));
        let g = sprintf("%.70000g", &[Value::Float(0.1)]);
        assert!(
            g.starts_with("0.1000000000000000055511151231257827"),
            "{}",
            &g[..40]
        );
        // The exact digits of a tiny value run far past 17.
        let tiny = sprintf("%.1080f", &[Value::Float(5e-324)]);
        assert!(tiny.contains("494065645841246544"), "exact digits kept");
    }
}
