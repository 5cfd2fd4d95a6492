//! Validation errors in the original muster's wording (`step 0 (a): tool is required`), which
//! users and scripts match, instead of bare field paths (`spec.steps[0].tool`).
//!
//! Each violation becomes `<section>: <place>: <rule>`: the section is `steps`, `onFailure`,
//! `args` or `output`; a step is `step <i> (<id>)` (`step <i>` while its id is empty), a
//! sub-step of a forEach or parallel group `sub-step <j> (<id>)`, an argument
//! `argument <name>`; what is left of the path (`forEach.items`, `condition`) comes before
//! the rule.

use muster_core::ValidationErrors;
use muster_core::resource::workflow::{Step, WorkflowSpec};

/// The violations of `spec` joined with `; `, each in the original's wording.
pub(super) fn describe(spec: &WorkflowSpec, errors: &ValidationErrors) -> String {
    errors
        .violations()
        .iter()
        .map(|v| violation(spec, &v.path, &v.rule))
        .collect::<Vec<_>>()
        .join("; ")
}

fn violation(spec: &WorkflowSpec, path: &str, rule: &str) -> String {
    let path = path.strip_prefix("spec.").unwrap_or(path);
    let (section, rest) = split_section(path);
    let place = match section {
        "steps" => steps_place(&spec.steps, rest, "step"),
        "onFailure" => steps_place(&spec.on_failure, rest, "step"),
        "args" => args_place(rest, rule),
        _ => vec![rest.trim_start_matches('.').to_owned()],
    };
    let mut parts = vec![section.to_owned()];
    parts.extend(place.into_iter().filter(|p| !p.is_empty()));
    parts.push(rule.to_owned());
    parts.join(": ")
}

/// `steps[0].forEach` → (`steps`, `[0].forEach`).
fn split_section(path: &str) -> (&str, &str) {
    let end = path.find(['.', '[']).unwrap_or(path.len());
    (&path[..end], &path[end..])
}

/// `[i]<rest>` over `steps` → `step i (id)` followed by the places inside it.
fn steps_place(steps: &[Step], rest: &str, noun: &str) -> Vec<String> {
    let Some((index, after)) = leading_index(rest) else {
        return vec![rest.trim_start_matches('.').to_owned()];
    };
    let step = steps.get(index);
    let id = step.map(|s| s.id.as_str()).unwrap_or_default();
    let mut place = vec![if id.is_empty() {
        format!("{noun} {index}")
    } else {
        format!("{noun} {index} ({id})")
    }];
    let after = after.trim_start_matches('.');
    let (inner, sub_rest) = if let Some(r) = after.strip_prefix("forEach.steps") {
        (
            step.and_then(|s| s.for_each.as_ref())
                .map(|f| f.steps.as_slice()),
            r,
        )
    } else if let Some(r) = after.strip_prefix("parallel") {
        (step.and_then(|s| s.parallel.as_deref()), r)
    } else {
        (None, after)
    };
    match inner {
        Some(subs) if leading_index(sub_rest).is_some() => {
            place.extend(steps_place(subs, sub_rest, "sub-step"));
        }
        _ if after == "id" => {}
        _ => place.push(after.to_owned()),
    }
    place
}

/// `.<name>.type` → `argument <name>`, leaving out a field the rule already names.
fn args_place(rest: &str, rule: &str) -> Vec<String> {
    let rest = rest.trim_start_matches('.');
    let (name, field) = rest.split_once('.').unwrap_or((rest, ""));
    let mut place = vec![format!("argument {name}")];
    if !field.is_empty() && !rule.starts_with(field) {
        place.push(field.to_owned());
    }
    place
}

/// `[12].x` → (12, `.x`).
fn leading_index(path: &str) -> Option<(usize, &str)> {
    let inner = path.strip_prefix('[')?;
    let (number, after) = inner.split_once(']')?;
    Some((number.parse().ok()?, after))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec() -> WorkflowSpec {
        serde_json::from_value(json!({
            "args": {"env": {}},
            "steps": [
                {"id": "a"},
                {"id": ""},
                {"id": "loop", "forEach": {"items": "{{ .x }}", "steps": [{"id": "inner"}, {"id": ""}]}},
                {"id": "fan", "parallel": [{"id": "p"}]}
            ],
            "onFailure": [{"id": "cleanup"}]
        }))
        .unwrap()
    }

    fn worded(path: &str, rule: &str) -> String {
        let mut errors = ValidationErrors::new();
        errors.push(path, rule);
        describe(&spec(), &errors)
    }

    #[test]
    fn steps_are_named_by_index_and_id() {
        assert_eq!(
            worded(
                "spec.steps[0]",
                "one of tool, forEach, or parallel is required"
            ),
            "steps: step 0 (a): one of tool, forEach, or parallel is required"
        );
        assert_eq!(
            worded("spec.steps[1].id", "id is required"),
            "steps: step 1: id is required"
        );
        assert_eq!(
            worded(
                "spec.steps[2].forEach.items",
                "items is required and must be a template string"
            ),
            "steps: step 2 (loop): forEach.items: items is required and must be a template string"
        );
        assert_eq!(
            worded("spec.steps[2].forEach.steps[0].tool", "tool is required"),
            "steps: step 2 (loop): sub-step 0 (inner): tool: tool is required"
        );
        assert_eq!(
            worded("spec.steps[2].forEach.steps[1].id", "id is required"),
            "steps: step 2 (loop): sub-step 1: id is required"
        );
        assert_eq!(
            worded("spec.steps[3].parallel[0]", "tool is required"),
            "steps: step 3 (fan): sub-step 0 (p): tool is required"
        );
        assert_eq!(
            worded("spec.steps", "workflow must have at least one step"),
            "steps: workflow must have at least one step"
        );
        assert_eq!(
            worded(
                "spec.onFailure[0].condition",
                "condition requires exactly one of template, tool, or fromStep"
            ),
            "onFailure: step 0 (cleanup): condition: condition requires exactly one of template, tool, or fromStep"
        );
    }

    #[test]
    fn arguments_are_named() {
        assert_eq!(
            worded("spec.args.env.type", "type is required"),
            "args: argument env: type is required"
        );
        let mut errors = ValidationErrors::new();
        errors.push("spec.steps[0]", "x");
        errors.push("spec.args.env.default", "must be of type string");
        assert_eq!(
            describe(&spec(), &errors),
            "steps: step 0 (a): x; args: argument env: default: must be of type string"
        );
    }
}
