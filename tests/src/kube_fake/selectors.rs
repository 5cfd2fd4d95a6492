//! Label selectors (`a=b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`) and field
//! selectors (`metadata.name=x`, `!=`), with kube-apiserver's parse errors.

use serde_json::Value;

use super::status::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LabelSelector(Vec<Requirement>);

/// Splits at commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn set_of(s: &str) -> Result<Vec<String>, ApiError> {
    let inner = s
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "unable to parse requirement: found '{s}', expected: '('"
            ))
        })?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect())
}

impl LabelSelector {
    pub(crate) fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            let r = if let Some(k) = part.strip_prefix('!') {
                Requirement::NotExists(k.trim().to_owned())
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEquals(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once("==") {
                Requirement::Equals(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once('=') {
                Requirement::Equals(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once(" notin ") {
                Requirement::NotIn(k.trim().to_owned(), set_of(v)?)
            } else if let Some((k, v)) = part.split_once(" in ") {
                Requirement::In(k.trim().to_owned(), set_of(v)?)
            } else if part.contains(' ') || part.contains('(') {
                return Err(ApiError::bad_request(format!(
                    "unable to parse requirement: <nil>: Invalid value: {part:?}: found '{part}', expected: in, notin, =, ==, !=, gt, lt"
                )));
            } else {
                Requirement::Exists(part.clone())
            };
            reqs.push(r);
        }
        Ok(Self(reqs))
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed field selector.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses a selector, refusing fields the resource does not index (`allowed`, besides
    /// `metadata.name` and `metadata.namespace`).
    pub(crate) fn parse(s: &str, allowed: &[String]) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, eq, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if field != "metadata.name"
                && field != "metadata.namespace"
                && !allowed.iter().any(|a| a == field)
            {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            terms.push((field.to_owned(), eq, value.trim().to_owned()));
        }
        Ok(Self(terms))
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(field, eq, want)| {
            let mut cur = Some(obj);
            for part in field.split('.') {
                cur = cur.and_then(|c| c.get(part));
            }
            let actual = match cur {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                Some(other) => other.to_string(),
            };
            (actual == *want) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn label_selectors_match_like_the_api_server() {
        let obj = json!({"metadata": {"labels": {"app": "muster", "tier": "web"}}});
        for (sel, want) in [
            ("app=muster", true),
            ("app==muster,tier=web", true),
            ("app!=muster", false),
            ("tier in (web, db)", true),
            ("tier notin (web)", false),
            ("app", true),
            ("!app", false),
            ("missing notin (x)", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).expect("parses").matches(&obj),
                want,
                "{sel}"
            );
        }
        assert!(LabelSelector::parse("app in web").is_err());
    }

    #[test]
    fn field_selectors_refuse_unknown_fields() {
        let obj = json!({"metadata": {"name": "a", "namespace": "default"}, "type": "Opaque"});
        let allowed = vec!["type".to_owned()];
        assert!(
            FieldSelector::parse("metadata.name=a,type!=x", &allowed)
                .expect("parses")
                .matches(&obj)
        );
        let e = FieldSelector::parse("spec.x=y", &allowed).expect_err("refused");
        assert_eq!(e.message, "field label not supported: spec.x");
    }
}
