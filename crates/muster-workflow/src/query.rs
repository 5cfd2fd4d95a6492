//! jq programs (via jaq) that reshape step results before they are stored.
//!
//! A program is compiled once at planning time with `$input` and `$vars` declared, then run
//! against each result. It must yield exactly one value.
//!
//! Evaluation honours the thread's evaluation deadline (see [`crate::budget`]): the `range`
//! generator and the loop over the outputs check it, so `last(range(1e9))` stops at the
//! budget instead of running for minutes.

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Native, Vars, data::JustLut};
use jaq_json::{Num, Val};
use serde_json::Value;

type Filter = jaq_core::compile::Filter<Native<JustLut<Val>>>;

/// Why a jq program could not be compiled or run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The program does not parse or compile.
    #[error("jq program does not compile: {0}")]
    Compile(String),
    /// The program raised an error.
    #[error("jq program failed: {0}")]
    Run(String),
    /// The program yielded no value or more than one.
    #[error("jq program must yield exactly one value, it yielded {0}")]
    Arity(usize),
}

/// A compiled jq program. `Send + Sync`; share it in an `Arc`.
pub struct Query {
    source: String,
    filter: Filter,
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("source", &self.source)
            .finish()
    }
}

impl Query {
    /// Compiles `source` with the jq standard library and the globals `$input` and `$vars`.
    pub fn compile(source: &str) -> Result<Self, QueryError> {
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let funs = jaq_core::funs()
            .filter(|(name, args, _)| !(*name == "range" && args.len() == 3))
            .chain([budgeted_range()])
            .chain(jaq_std::funs())
            .chain(jaq_json::funs());
        let arena = Arena::default();
        let modules = Loader::new(defs)
            .load(
                &arena,
                File {
                    code: source,
                    path: (),
                },
            )
            .map_err(|errs| QueryError::Compile(describe_load_errors(&errs)))?;
        let filter = Compiler::default()
            .with_funs(funs)
            .with_global_vars(["$input", "$vars"])
            .compile(modules)
            .map_err(|errs| {
                let names: Vec<String> = errs
                    .iter()
                    .flat_map(|(_, es)| es.iter().map(|(e, _)| format!("{e:?}")))
                    .collect();
                QueryError::Compile(format!("undefined or invalid: {}", names.join(", ")))
            })?;
        Ok(Self {
            source: source.to_owned(),
            filter,
        })
    }

    /// The program text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Runs the program on `data` with `$input` and `$vars` bound; exactly one value must come
    /// out.
    pub fn run(&self, data: &Value, input: &Value, vars: &Value) -> Result<Value, QueryError> {
        let vars = Vars::new([to_val(input), to_val(vars)]);
        let ctx = Ctx::<JustLut<Val>>::new(&self.filter.lut, vars);
        let mut out = Vec::with_capacity(1);
        for item in self
            .filter
            .id
            .run((ctx, to_val(data)))
            .map(jaq_core::unwrap_valr)
        {
            if crate::budget::expired() {
                return Err(QueryError::Run(crate::budget::BUDGET_EXCEEDED.to_owned()));
            }
            match item {
                Ok(v) => out.push(from_val(&v)),
                Err(e) => return Err(QueryError::Run(e.to_string())),
            }
            if out.len() > 1 {
                break;
            }
        }
        match out.len() {
            1 => Ok(out.remove(0)),
            n => Err(QueryError::Arity(n)),
        }
    }
}

/// `range/3` as jaq defines it (`range/1` and `range/2` are defined through it), checking the
/// evaluation deadline every few thousand values.
fn budgeted_range<D: jaq_core::DataT>() -> jaq_core::native::Fun<D>
where
    for<'a> D::V<'a>: jaq_core::ValT,
{
    use jaq_core::native::{run, v};
    run(("range", v(3), |mut cv| {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let by = cv.0.pop_var();
        let to = cv.0.pop_var();
        let from = cv.0.pop_var();
        let cmp = by.partial_cmp(&0isize.into()).unwrap_or(Equal);
        let mut next = Some(Ok(from));
        let mut produced: u32 = 0;
        Box::new(std::iter::from_fn(move || {
            produced = produced.wrapping_add(1);
            if produced.is_multiple_of(4096) && crate::budget::expired() {
                next = None;
                let e = jaq_core::Error::str(crate::budget::BUDGET_EXCEEDED);
                return Some(Err(jaq_core::Exn::from(e)));
            }
            match next.take()? {
                Ok(x) => {
                    let more = match cmp {
                        Greater => x < to,
                        Less => x > to,
                        Equal => x != to,
                    };
                    if !more {
                        return None;
                    }
                    next = Some((x.clone() + by.clone()).map_err(jaq_core::Exn::from));
                    Some(Ok(x))
                }
                Err(e) => Some(Err(e)),
            }
        }))
    }))
}

fn describe_load_errors<E: std::fmt::Debug>(errs: &E) -> String {
    // jaq's load errors carry positions only in their Debug form; name the class of problem.
    let text = format!("{errs:?}");
    if text.contains("Lex(") {
        "unbalanced delimiter or invalid token".to_owned()
    } else if text.contains("Parse(") {
        "syntax error".to_owned()
    } else {
        "invalid program".to_owned()
    }
}

fn to_val(v: &Value) -> Val {
    match v {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => {
                isize::try_from(i).map_or(Val::Num(Num::Float(i as f64)), |i| Val::Num(Num::Int(i)))
            }
            (None, Some(f)) => Val::Num(Num::Float(f)),
            (None, None) => Val::Null,
        },
        Value::String(s) => Val::utf8_str(s.clone().into_bytes()),
        Value::Array(a) => a.iter().map(to_val).collect(),
        Value::Object(o) => Val::obj(
            o.iter()
                .map(|(k, v)| (Val::utf8_str(k.clone().into_bytes()), to_val(v)))
                .collect(),
        ),
    }
}

fn from_val(v: &Val) -> Value {
    match v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Num(n) => from_num(n),
        Val::TStr(b) | Val::BStr(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        Val::Arr(a) => Value::Array(a.iter().map(from_val).collect()),
        Val::Obj(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Val::TStr(b) | Val::BStr(b) => String::from_utf8_lossy(b).into_owned(),
                        other => other.to_string(),
                    };
                    (key, from_val(v))
                })
                .collect(),
        ),
    }
}

fn from_num(n: &Num) -> Value {
    match n {
        Num::Int(i) => Value::from(*i as i64),
        Num::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        other => serde_json::from_str(&other.to_string()).unwrap_or(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reshapes_with_globals() {
        let q = Query::compile("[.items[] | {name: .metadata.name, ns: $input.ns}]").unwrap();
        let data = json!({"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]});
        let out = q.run(&data, &json!({"ns": "prod"}), &json!({})).unwrap();
        assert_eq!(
            out,
            json!([{"name": "a", "ns": "prod"}, {"name": "b", "ns": "prod"}])
        );
        // A compiled program runs again with other data.
        let again = q
            .run(&json!({"items": []}), &json!({"ns": "x"}), &json!({}))
            .unwrap();
        assert_eq!(again, json!([]));
    }

    #[test]
    fn vars_numbers_and_strings_round_trip() {
        let q = Query::compile(".[:$vars.limit] | map(. * 2) | {doubled: ., s: \"ok\", f: 1.5}")
            .unwrap();
        let out = q
            .run(&json!([1, 2, 3]), &json!({}), &json!({"limit": 2}))
            .unwrap();
        assert_eq!(out, json!({"doubled": [2, 4], "s": "ok", "f": 1.5}));
    }

    #[test]
    fn range_stops_at_the_evaluation_deadline() {
        let q = Query::compile("last(range(700000000))").unwrap();
        let deadline = crate::budget::deadline_in(std::time::Duration::from_millis(200));
        let started = tokio::time::Instant::now();
        let out = crate::budget::with_deadline(Some(deadline), || {
            q.run(&json!(null), &json!({}), &json!({}))
        });
        assert!(
            matches!(&out, Err(QueryError::Run(m)) if m.contains("time budget")),
            "{out:?}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(3));
        // Without a deadline ranges behave as jq's.
        let q = Query::compile("[[range(5)], [range(1; 10; 3)], [range(3; 0; -1)]]").unwrap();
        assert_eq!(
            q.run(&json!(null), &json!({}), &json!({})).unwrap(),
            json!([[0, 1, 2, 3, 4], [1, 4, 7], [3, 2, 1]])
        );
    }

    #[test]
    fn errors() {
        assert!(matches!(
            Query::compile("[.items["),
            Err(QueryError::Compile(_))
        ));
        assert!(matches!(
            Query::compile("$undefined"),
            Err(QueryError::Compile(_))
        ));
        assert!(matches!(
            Query::compile("nosuchfn(1)"),
            Err(QueryError::Compile(_))
        ));
        let q = Query::compile(".[]").unwrap();
        assert_eq!(
            q.run(&json!([1, 2]), &json!({}), &json!({})),
            Err(QueryError::Arity(2))
        );
        assert_eq!(
            q.run(&json!([]), &json!({}), &json!({})),
            Err(QueryError::Arity(0))
        );
        let q = Query::compile("error(\"boom\")").unwrap();
        assert!(
            matches!(q.run(&json!(1), &json!({}), &json!({})), Err(QueryError::Run(m)) if m.contains("boom"))
        );
    }
}
