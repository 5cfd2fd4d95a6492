//! `x-kubernetes-validations`: CEL rules compiled with the `cel` crate when a CRD is written,
//! and run with `self` (and `oldSelf` for transition rules) bound, as kube-apiserver does.
//!
//! Besides the CEL standard library and its strings, lists and math extensions, the
//! Kubernetes URL library is provided in a simplified form: `isURL(s)`, and `url(s)` whose
//! result answers `getScheme()`, `getHost()`, `getHostname()`, `getPort()`,
//! `getEscapedPath()` and `getQuery()` (here `url(s)` is the string itself).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cel::extractors::This;
use cel::objects::{Key, Map as CelMap};
use cel::{Context, Env, Program};
use regex::Regex;
use serde_json::{Value, json};

use super::status::{FieldError, FieldErrorKind};

/// Whether a rule compares with the old value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transition {
    /// No `oldSelf`: runs on every write.
    None,
    /// Uses `oldSelf`: runs only on updates where the old value exists.
    Required,
}

/// One compiled rule.
pub(crate) struct Rule {
    program: Program,
    rule: String,
    message: Option<String>,
    message_expression: Option<Program>,
    field_path: Option<String>,
    reason: Option<String>,
    pub(crate) transition: Transition,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule")
            .field("rule", &self.rule)
            .finish_non_exhaustive()
    }
}

/// The rules of one schema, by the JSON pointer of the schema node that declares them.
#[derive(Debug, Default)]
pub(crate) struct CompiledRules {
    by_pointer: HashMap<String, Vec<Rule>>,
}

fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // extensions Kubernetes enables; a failure leaves the standard library
        let _ = env.add_extension(cel::extensions::strings);
        let _ = env.add_extension(cel::extensions::lists);
        let _ = env.add_extension(cel::extensions::math);
        Arc::new(env)
    })
    .clone()
}

fn old_self_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\boldSelf\b").unwrap_or_else(|_| unreachable!("static regex")))
}

impl CompiledRules {
    /// Compiles every rule of a schema; `base` is the field path of the schema in the CRD, for
    /// the errors of rules that do not compile.
    pub(crate) fn compile(schema: &Value, base: &str) -> Result<Self, Vec<FieldError>> {
        let mut out = Self::default();
        let mut errs = Vec::new();
        out.walk(schema, "", base, &mut errs);
        if errs.is_empty() { Ok(out) } else { Err(errs) }
    }

    fn walk(&mut self, schema: &Value, pointer: &str, path: &str, errs: &mut Vec<FieldError>) {
        if let Some(rules) = schema
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
        {
            for (i, r) in rules.iter().enumerate() {
                let field = format!("{path}.x-kubernetes-validations[{i}]");
                match compile_rule(r) {
                    Ok(rule) => self
                        .by_pointer
                        .entry(pointer.to_owned())
                        .or_default()
                        .push(rule),
                    Err((which, text, e)) => errs.push(FieldError::invalid(
                        format!("{field}.{which}"),
                        json!(text),
                        format!("compilation failed: {e}"),
                    )),
                }
            }
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (k, s) in props {
                self.walk(
                    s,
                    &format!("{pointer}/properties/{k}"),
                    &format!("{path}.properties[{k}]"),
                    errs,
                );
            }
        }
        if let Some(s) = schema.get("items") {
            self.walk(
                s,
                &format!("{pointer}/items"),
                &format!("{path}.items"),
                errs,
            );
        }
        if let Some(s) = schema.get("additionalProperties").filter(|s| s.is_object()) {
            self.walk(
                s,
                &format!("{pointer}/additionalProperties"),
                &format!("{path}.additionalProperties"),
                errs,
            );
        }
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            for (i, s) in all.iter().enumerate() {
                self.walk(
                    s,
                    &format!("{pointer}/allOf/{i}"),
                    &format!("{path}.allOf[{i}]"),
                    errs,
                );
            }
        }
    }

    /// The rules declared at a schema node.
    pub(crate) fn at(&self, pointer: &str) -> &[Rule] {
        self.by_pointer.get(pointer).map_or(&[], Vec::as_slice)
    }
}

fn compile_rule(r: &Value) -> Result<Rule, (&'static str, String, String)> {
    let text = r
        .get("rule")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let program = env()
        .compile(&text)
        .map_err(|e| ("rule", text.clone(), e.to_string()))?;
    let message_expression = match r.get("messageExpression").and_then(Value::as_str) {
        Some(m) => Some(
            env()
                .compile(m)
                .map_err(|e| ("messageExpression", m.to_owned(), e.to_string()))?,
        ),
        None => None,
    };
    let transition = if old_self_re().is_match(&text)
        && r.get("optionalOldSelf").and_then(Value::as_bool) != Some(true)
    {
        Transition::Required
    } else {
        Transition::None
    };
    Ok(Rule {
        program,
        message: r.get("message").and_then(Value::as_str).map(str::to_owned),
        message_expression,
        field_path: r
            .get("fieldPath")
            .and_then(Value::as_str)
            .map(str::to_owned),
        reason: r.get("reason").and_then(Value::as_str).map(str::to_owned),
        rule: text,
        transition,
    })
}

/// A JSON value as CEL sees it: integers are `int`, objects are maps with string keys.
pub(crate) fn to_cel(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => cel::Value::Int(i),
            None => n.as_u64().map_or_else(
                || cel::Value::Float(n.as_f64().unwrap_or(0.0)),
                cel::Value::UInt,
            ),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(a) => cel::Value::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: HashMap<Key, cel::Value> = m
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            cel::Value::Map(CelMap { map: Arc::new(map) })
        }
    }
}

fn parse_url(s: &str) -> Option<url::Url> {
    url::Url::parse(s).ok()
}

fn add_url_library(ctx: &mut Context<'_, '_>) {
    let _ = ctx.add_function("isURL", |s: Arc<String>| {
        parse_url(&s).is_some_and(|u| u.has_host() || u.scheme() == "file")
    });
    let _ = ctx.add_function("url", |s: Arc<String>| s);
    let _ = ctx.add_function("getScheme", |This(s): This<Arc<String>>| {
        parse_url(&s)
            .map(|u| u.scheme().to_owned())
            .unwrap_or_default()
    });
    let _ = ctx.add_function("getHost", |This(s): This<Arc<String>>| {
        parse_url(&s)
            .map(|u| match (u.host_str(), u.port()) {
                (Some(h), Some(p)) => format!("{h}:{p}"),
                (Some(h), None) => h.to_owned(),
                _ => String::new(),
            })
            .unwrap_or_default()
    });
    let _ = ctx.add_function("getHostname", |This(s): This<Arc<String>>| {
        parse_url(&s)
            .and_then(|u| {
                u.host_str()
                    .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned())
            })
            .unwrap_or_default()
    });
    let _ = ctx.add_function("getPort", |This(s): This<Arc<String>>| {
        parse_url(&s)
            .and_then(|u| u.port())
            .map(|p| p.to_string())
            .unwrap_or_default()
    });
    let _ = ctx.add_function("getEscapedPath", |This(s): This<Arc<String>>| {
        parse_url(&s)
            .map(|u| u.path().to_owned())
            .unwrap_or_default()
    });
    let _ = ctx.add_function("getQuery", |This(s): This<Arc<String>>| {
        let mut out: HashMap<Key, cel::Value> = HashMap::new();
        if let Some(u) = parse_url(&s) {
            for (k, v) in u.query_pairs() {
                let entry = out
                    .entry(Key::String(Arc::new(k.into_owned())))
                    .or_insert_with(|| cel::Value::List(Arc::new(Vec::new())));
                if let cel::Value::List(l) = entry {
                    Arc::make_mut(l).push(cel::Value::String(Arc::new(v.into_owned())));
                }
            }
        }
        cel::Value::Map(CelMap { map: Arc::new(out) })
    });
}

impl Rule {
    /// Runs the rule; an error when it fails or cannot be evaluated.
    pub(crate) fn check(
        &self,
        v: &Value,
        old: Option<&Value>,
        path: &str,
        type_name: &str,
    ) -> Option<FieldError> {
        let mut ctx = Context::with_env(env());
        ctx.add_variable_from_value("self", to_cel(v));
        if let Some(o) = old {
            ctx.add_variable_from_value("oldSelf", to_cel(o));
        }
        add_url_library(&mut ctx);
        let field = match &self.field_path {
            Some(fp) if fp.starts_with('[') => format!("{path}{fp}"),
            Some(fp) => {
                let fp = fp.trim_start_matches('.');
                if path.is_empty() {
                    fp.to_owned()
                } else {
                    format!("{path}.{fp}")
                }
            }
            None => path.to_owned(),
        };
        let message = match self.program.execute(&ctx) {
            Ok(cel::Value::Bool(true)) => return None,
            Ok(cel::Value::Bool(false)) => self.message(&ctx),
            Ok(other) => format!(
                "{}: rule evaluated to {other:?}, not a boolean",
                self.rule.trim()
            ),
            Err(e) => format!("{}: {e}", self.rule.trim()),
        };
        Some(match self.reason.as_deref() {
            Some("FieldValueForbidden") => FieldError::forbidden(field, message),
            Some("FieldValueRequired") => FieldError::required(field, message),
            Some("FieldValueDuplicate") => {
                FieldError::new(FieldErrorKind::Duplicate, field, Some(json!(type_name)), "")
            }
            _ => FieldError::invalid(field, json!(type_name), message),
        })
    }

    fn message(&self, ctx: &Context<'_, '_>) -> String {
        if let Some(me) = &self.message_expression
            && let Ok(cel::Value::String(s)) = me.execute(ctx)
            && !s.trim().is_empty()
        {
            return s.trim().to_owned();
        }
        match &self.message {
            Some(m) if !m.trim().is_empty() => m.trim().to_owned(),
            _ => format!("failed rule: {}", self.rule.trim()),
        }
    }
}
