//! sprig's numeric functions and conversions.

use std::collections::HashMap;

use super::cast::{to_float64, to_int64};
use super::{FResult, Func, Param, fixed, variadic};
use crate::gofmt::sprint_one;
use crate::strconv::{atoi, parse_int_base};
use crate::value::{Elem, Value};

use Param::{Any, Float, Int, Str};

fn int_arg(v: &Value<'_>) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        _ => 0,
    }
}

pub(super) fn register(m: &mut HashMap<&'static str, Func>) {
    m.insert(
        "add1",
        fixed(&[Any], |a| {
            Ok(Value::Int64(to_int64(&a[0]).wrapping_add(1)))
        }),
    );
    m.insert(
        "add",
        variadic(&[], Any, |a| {
            Ok(Value::Int64(
                a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))),
            ))
        }),
    );
    m.insert(
        "sub",
        fixed(&[Any, Any], |a| {
            Ok(Value::Int64(to_int64(&a[0]).wrapping_sub(to_int64(&a[1]))))
        }),
    );
    m.insert(
        "div",
        fixed(&[Any, Any], |a| {
            let d = to_int64(&a[1]);
            if d == 0 {
                return Err("runtime error: integer divide by zero".to_owned());
            }
            Ok(Value::Int64(to_int64(&a[0]).wrapping_div(d)))
        }),
    );
    m.insert(
        "mod",
        fixed(&[Any, Any], |a| {
            let d = to_int64(&a[1]);
            if d == 0 {
                return Err("runtime error: integer divide by zero".to_owned());
            }
            Ok(Value::Int64(to_int64(&a[0]).wrapping_rem(d)))
        }),
    );
    m.insert(
        "mul",
        variadic(&[Any], Any, |a| {
            Ok(Value::Int64(
                a.iter()
                    .skip(1)
                    .fold(to_int64(&a[0]), |acc, v| acc.wrapping_mul(to_int64(v))),
            ))
        }),
    );
    for name in ["max", "biggest"] {
        m.insert(
            name,
            variadic(&[Any], Any, |a| {
                Ok(Value::Int64(
                    a.iter()
                        .skip(1)
                        .map(to_int64)
                        .fold(to_int64(&a[0]), i64::max),
                ))
            }),
        );
    }
    m.insert(
        "min",
        variadic(&[Any], Any, |a| {
            Ok(Value::Int64(
                a.iter()
                    .skip(1)
                    .map(to_int64)
                    .fold(to_int64(&a[0]), i64::min),
            ))
        }),
    );
    m.insert(
        "maxf",
        variadic(&[Any], Any, |a| {
            Ok(Value::Float(
                a.iter()
                    .skip(1)
                    .map(to_float64)
                    .fold(to_float64(&a[0]), go_max),
            ))
        }),
    );
    m.insert(
        "minf",
        variadic(&[Any], Any, |a| {
            Ok(Value::Float(
                a.iter()
                    .skip(1)
                    .map(to_float64)
                    .fold(to_float64(&a[0]), go_min),
            ))
        }),
    );
    m.insert(
        "floor",
        fixed(&[Any], |a| Ok(Value::Float(to_float64(&a[0]).floor()))),
    );
    m.insert(
        "ceil",
        fixed(&[Any], |a| Ok(Value::Float(to_float64(&a[0]).ceil()))),
    );
    m.insert("round", variadic(&[Any, Int], Float, round));
    m.insert(
        "add1f",
        fixed(&[Any], |a| {
            Ok(Value::Float(decimal_op(&a[0], &[Value::Int(1)], Op::Add)))
        }),
    );
    m.insert(
        "addf",
        variadic(&[], Any, |a| {
            Ok(Value::Float(decimal_op(&Value::Float(0.0), &a, Op::Add)))
        }),
    );
    m.insert(
        "subf",
        variadic(&[Any], Any, |a| {
            Ok(Value::Float(decimal_op(&a[0], &a[1..], Op::Sub)))
        }),
    );
    m.insert(
        "mulf",
        variadic(&[Any], Any, |a| {
            Ok(Value::Float(decimal_op(&a[0], &a[1..], Op::Mul)))
        }),
    );
    m.insert(
        "divf",
        variadic(&[Any], Any, |a| {
            for d in &a[1..] {
                if to_float64(d) == 0.0 {
                    return Err("decimal division by 0".to_owned());
                }
            }
            Ok(Value::Float(decimal_op(&a[0], &a[1..], Op::Div)))
        }),
    );
    m.insert("int", fixed(&[Any], |a| Ok(Value::Int(to_int64(&a[0])))));
    m.insert(
        "int64",
        fixed(&[Any], |a| Ok(Value::Int64(to_int64(&a[0])))),
    );
    m.insert(
        "float64",
        fixed(&[Any], |a| Ok(Value::Float(to_float64(&a[0])))),
    );
    m.insert(
        "atoi",
        fixed(&[Str], |a| {
            Ok(Value::Int(atoi(a[0].as_str().unwrap_or("")).unwrap_or(0)))
        }),
    );
    m.insert(
        "toDecimal",
        fixed(&[Any], |a| {
            Ok(Value::Int64(
                parse_int_base(&sprint_one(&a[0]), 8).unwrap_or(0),
            ))
        }),
    );
    m.insert("seq", variadic(&[], Int, seq));
    m.insert(
        "until",
        fixed(&[Int], |a| {
            let n = int_arg(&a[0]);
            Ok(int_list(until_step(0, n, if n < 0 { -1 } else { 1 })?))
        }),
    );
    m.insert(
        "untilStep",
        fixed(&[Int, Int, Int], |a| {
            Ok(int_list(until_step(
                int_arg(&a[0]),
                int_arg(&a[1]),
                int_arg(&a[2]),
            )?))
        }),
    );
    m.insert(
        "randInt",
        fixed(&[Int, Int], |a| {
            let (lo, hi) = (int_arg(&a[0]), int_arg(&a[1]));
            if hi <= lo {
                return Err("invalid argument to Intn".to_owned());
            }
            let span = (hi - lo) as u64;
            Ok(Value::Int(lo + (super::misc::random_u64() % span) as i64))
        }),
    );
}

fn go_max(x: f64, y: f64) -> f64 {
    if x.is_infinite() && x > 0.0 || y.is_infinite() && y > 0.0 {
        return f64::INFINITY;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 && y == 0.0 {
        return if x.is_sign_negative() { y } else { x };
    }
    if x > y { x } else { y }
}

fn go_min(x: f64, y: f64) -> f64 {
    if x.is_infinite() && x < 0.0 || y.is_infinite() && y < 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 && y == 0.0 {
        return if x.is_sign_negative() { x } else { y };
    }
    if x < y { x } else { y }
}

fn int_list<'a>(v: Vec<i64>) -> Value<'a> {
    Value::typed_list(Elem::Int, v.into_iter().map(Value::Int).collect())
}

/// The most elements `until`, `untilStep` and `seq` generate (Go has no bound; one here keeps a
/// template from exhausting memory).
pub(crate) const MAX_GENERATED: u64 = 1_000_000;

fn until_step(start: i64, stop: i64, step: i64) -> Result<Vec<i64>, String> {
    let count = generated_len(start, stop, step);
    if count > MAX_GENERATED {
        return Err(format!(
            "a list of {count} numbers exceeds the limit of {MAX_GENERATED} elements"
        ));
    }
    let mut v = Vec::with_capacity(count as usize);
    let mut i = start;
    for _ in 0..count {
        v.push(i);
        i = i.wrapping_add(step);
    }
    Ok(v)
}

/// How many numbers `start, start+step, …` lie before `stop` (Go's `untilStep` rule).
fn generated_len(start: i64, stop: i64, step: i64) -> u64 {
    let (span, step) = match (stop < start, step) {
        (true, s) if s < 0 => (i128::from(start) - i128::from(stop), -i128::from(s)),
        (false, s) if s > 0 => (i128::from(stop) - i128::from(start), i128::from(s)),
        _ => return 0,
    };
    u64::try_from((span + step - 1) / step).unwrap_or(u64::MAX)
}

fn seq(a: Vec<Value<'_>>) -> FResult<'_> {
    let p: Vec<i64> = a.iter().map(int_arg).collect();
    let join = |v: Vec<i64>| v.iter().map(i64::to_string).collect::<Vec<_>>().join(" ");
    Ok(Value::string(match p.len() {
        1 => {
            let (start, end) = (1, p[0]);
            let inc = if end < start { -1 } else { 1 };
            join(until_step(start, end + inc, inc)?)
        }
        2 => {
            let (start, end) = (p[0], p[1]);
            let step = if end < start { -1 } else { 1 };
            join(until_step(start, end + step, step)?)
        }
        3 => {
            let (start, step, end) = (p[0], p[1], p[2]);
            let mut inc = 1;
            if end < start {
                inc = -1;
                if step > 0 {
                    return Ok(Value::string(""));
                }
            }
            join(until_step(start, end + inc, step)?)
        }
        _ => String::new(),
    }))
}

fn round(a: Vec<Value<'_>>) -> FResult<'_> {
    let val = to_float64(&a[0]);
    let places = int_arg(&a[1]) as f64;
    let round_on = match a.get(2) {
        Some(Value::Float(f)) => *f,
        _ => 0.5,
    };
    let pow = go_pow10(places);
    let digit = pow * val;
    let frac = digit.fract();
    let r = if frac >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    Ok(Value::Float(r / pow))
}

fn go_pow10(p: f64) -> f64 {
    if p.fract() == 0.0 && p.abs() <= 22.0 {
        let n = p.abs() as i32;
        let v = (0..n).fold(1.0f64, |acc, _| acc * 10.0);
        return if p < 0.0 { 1.0 / v } else { v };
    }
    10f64.powf(p)
}

// ---- shopspring/decimal arithmetic for addf/subf/mulf/divf ---------------------------------

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// A decimal `m * 10^e`.
#[derive(Clone, Copy, Debug)]
struct Dec {
    m: i128,
    e: i32,
}

impl Dec {
    /// `decimal.NewFromFloat`: the shortest decimal that round-trips.
    fn from_f64(f: f64) -> Option<Dec> {
        if !f.is_finite() {
            return None;
        }
        if f == 0.0 {
            return Some(Dec { m: 0, e: 0 });
        }
        let s = format!("{f:e}");
        let (mant, exp) = s.split_once('e')?;
        let exp: i32 = exp.parse().ok()?;
        let neg = mant.starts_with('-');
        let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
        let m: i128 = digits.parse().ok()?;
        let e = exp - (digits.len() as i32 - 1);
        Some(Dec {
            m: if neg { -m } else { m },
            e,
        })
    }

    fn align(a: Dec, b: Dec) -> Option<(i128, i128, i32)> {
        let e = a.e.min(b.e);
        let am = a.m.checked_mul(10i128.checked_pow((a.e - e) as u32)?)?;
        let bm = b.m.checked_mul(10i128.checked_pow((b.e - e) as u32)?)?;
        Some((am, bm, e))
    }

    fn to_f64(self) -> f64 {
        format!("{}e{}", self.m, self.e).parse().unwrap_or(f64::NAN)
    }

    fn apply(self, op: Op, b: Dec) -> Option<Dec> {
        match op {
            Op::Add => {
                let (x, y, e) = Dec::align(self, b)?;
                Some(Dec {
                    m: x.checked_add(y)?,
                    e,
                })
            }
            Op::Sub => {
                let (x, y, e) = Dec::align(self, b)?;
                Some(Dec {
                    m: x.checked_sub(y)?,
                    e,
                })
            }
            Op::Mul => Some(Dec {
                m: self.m.checked_mul(b.m)?,
                e: self.e + b.e,
            }),
            Op::Div => {
                // DivRound to 16 decimal places, half away from zero.
                if b.m == 0 {
                    return None;
                }
                let prec = 16i32;
                // result = (self.m / b.m) * 10^(self.e - b.e); scale to 10^-prec
                let shift = self.e - b.e + prec;
                let (num, den) = if shift >= 0 {
                    (self.m.checked_mul(10i128.checked_pow(shift as u32)?)?, b.m)
                } else {
                    (
                        self.m,
                        b.m.checked_mul(10i128.checked_pow((-shift) as u32)?)?,
                    )
                };
                let q = num / den;
                let r = num % den;
                let mut q = q;
                if r.unsigned_abs() * 2 >= den.unsigned_abs() {
                    if (num < 0) != (den < 0) {
                        q -= 1;
                    } else {
                        q += 1;
                    }
                }
                Some(Dec { m: q, e: -prec })
            }
        }
    }
}

fn decimal_op(a: &Value<'_>, rest: &[Value<'_>], op: Op) -> f64 {
    let fallback = || {
        rest.iter()
            .map(to_float64)
            .fold(to_float64(a), |acc, x| match op {
                Op::Add => acc + x,
                Op::Sub => acc - x,
                Op::Mul => acc * x,
                Op::Div => acc / x,
            })
    };
    let Some(mut acc) = Dec::from_f64(to_float64(a)) else {
        return fallback();
    };
    for x in rest {
        let Some(d) = Dec::from_f64(to_float64(x)) else {
            return fallback();
        };
        match acc.apply(op, d) {
            Some(r) => acc = r,
            None => return fallback(),
        }
    }
    acc.to_f64()
}
