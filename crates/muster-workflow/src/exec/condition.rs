//! Evaluating a step's condition.

use serde_json::Value;

use super::outcome::{ConditionInfo, Halt};
use super::run::Runner;
use super::scope::Scope;
use crate::path::navigate;
use crate::plan::{ConditionSource, PlannedCondition, PlannedExpectation};
use crate::value_tree::LeafMode;

impl Runner {
    /// Evaluates `cond` for step `step_id`; an error that stops the run is a [`Halt`].
    pub(crate) async fn evaluate_condition(
        &self,
        step_id: &str,
        cond: &PlannedCondition,
        scope: &Scope,
    ) -> Result<ConditionInfo, Halt> {
        let (tool, subject) = match &cond.source {
            ConditionSource::Template(t) => {
                let value = self
                    .within_budget(|| t.render_value_in(&scope.roots()))
                    .map_err(|e| {
                        Halt::Engine(self.explain_budget(format!(
                            "failed to evaluate condition template for step {step_id}: {e}"
                        )))
                    })?;
                let passed = matches!(&value, Value::Bool(true))
                    || matches!(&value, Value::String(s) if s.trim() == "true");
                return Ok(ConditionInfo {
                    passed,
                    result: value,
                    tool: "template".to_owned(),
                });
            }
            ConditionSource::FromStep(from) => {
                let subject = match scope.result(from) {
                    Some(r) => Subject {
                        is_error: r.get("isError") == Some(&Value::Bool(true)),
                        result: Some(r.clone()),
                    },
                    None => {
                        return Err(Halt::Engine(format!(
                            "step {step_id} condition references non-existent step result: {from}"
                        )));
                    }
                };
                (format!("from_step:{from}"), subject)
            }
            ConditionSource::Tool { tool, args } => {
                let args = self
                    .within_budget(|| args.render(&scope.roots(), LeafMode::Arguments))
                    .map_err(|e| {
                        Halt::Engine(self.explain_budget(format!(
                            "failed to resolve condition arguments for step {step_id}: argument '{}': {}",
                            e.path, e.error
                        )))
                    })?;
                match self.call_tool(tool, args).await {
                    // A call that fails outright makes the condition false, whatever it expects.
                    Err(e) => {
                        return Ok(ConditionInfo {
                            passed: false,
                            result: Value::String(e),
                            tool: tool.clone(),
                        });
                    }
                    Ok(r) => (
                        tool.clone(),
                        Subject {
                            is_error: r.is_error,
                            result: Some(r.value),
                        },
                    ),
                }
            }
        };
        let passed = self.expectations_hold(cond, &subject, scope);
        Ok(ConditionInfo {
            passed,
            result: subject.result.unwrap_or(Value::Null),
            tool,
        })
    }

    fn expectations_hold(&self, cond: &PlannedCondition, subject: &Subject, scope: &Scope) -> bool {
        match (&cond.expect, &cond.expect_not) {
            // Without expectations a tool/fromStep condition expects the call to fail.
            (None, None) => subject.is_error,
            (expect, expect_not) => {
                let expect_ok = expect
                    .as_ref()
                    .is_none_or(|e| self.matches(e, subject, scope));
                let expect_not_ok = expect_not
                    .as_ref()
                    .is_none_or(|e| !self.matches(e, subject, scope));
                expect_ok && expect_not_ok
            }
        }
    }

    /// Whether the success clause (when given) and every jsonPath entry hold.
    fn matches(&self, e: &PlannedExpectation, subject: &Subject, scope: &Scope) -> bool {
        if let Some(success) = e.success
            && success == subject.is_error
        {
            return false;
        }
        if e.json_path.is_empty() {
            return true;
        }
        let Some(result) = subject
            .result
            .as_ref()
            .filter(|r| r.is_object() || r.is_array())
        else {
            return false;
        };
        let data = scope.roots_with_result(result);
        e.json_path.iter().all(|(key, key_template, expected)| {
            let actual = match key_template {
                Some(t) => t.render_value_in(&data).ok(),
                None => navigate(result, key).ok().cloned(),
            };
            let expected = expected.render(&scope.roots(), LeafMode::Arguments).ok();
            matches!((actual, expected), (Some(a), Some(b)) if loosely_equal(&a, &b))
        })
    }
}

/// What an expectation is checked against.
struct Subject {
    is_error: bool,
    result: Option<Value>,
}

/// `==`, or equal renderings (`1`, `"1"` and `1.0` are equal), as the original compares.
pub(crate) fn loosely_equal(a: &Value, b: &Value) -> bool {
    a == b || render(a) == render(b)
}

fn render(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            Some(f) => f.to_string(),
            None => n.to_string(),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::loosely_equal;

    #[test]
    fn loose_equality() {
        assert!(loosely_equal(&json!(1), &json!("1")));
        assert!(loosely_equal(&json!(1.0), &json!(1)));
        assert!(loosely_equal(&json!(true), &json!("true")));
        assert!(!loosely_equal(&json!("connected"), &json!("disconnected")));
    }
}
