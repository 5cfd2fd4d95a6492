//! Every structural rule of the Workflow spec, checked at once.

use std::collections::HashSet;

use serde_json::Value;

use super::{ArgType, Expectation, ForEach, Paginate, Step, StepCondition, WorkflowSpec};
use crate::resource::validate::{
    ARG_NAME_PATTERN, STEP_ID_PATTERN, ValidationErrors, char_len, is_arg_name, is_step_id,
};

const MAX_WORKFLOW_DESCRIPTION: usize = 1000;
const MAX_STEP_DESCRIPTION: usize = 500;
const MAX_STEP_ID: usize = 63;

/// Where a step sits; each level allows different actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// `spec.steps`: tool, forEach or parallel.
    Top,
    /// A `forEach` body: tool or a nested forEach.
    LoopBody,
    /// A nested loop's body: tool only.
    NestedBody,
    /// A `parallel` group: tool only.
    Parallel,
    /// `spec.onFailure`: tool only.
    OnFailure,
}

struct Checker<'a> {
    errs: ValidationErrors,
    /// Every step id seen so far, across all levels.
    seen_ids: HashSet<&'a str>,
    /// Ids of the steps that have finished before the step being checked starts: the ones a
    /// `fromStep` condition may name. A step is not earlier than itself, than its own
    /// sub-steps, or than a sibling in the same parallel group.
    finished_ids: HashSet<&'a str>,
}

pub(super) fn validate(spec: &WorkflowSpec) -> ValidationErrors {
    let mut c = Checker {
        errs: ValidationErrors::new(),
        seen_ids: HashSet::new(),
        finished_ids: HashSet::new(),
    };
    if let Some(d) = &spec.description
        && char_len(d) > MAX_WORKFLOW_DESCRIPTION
    {
        c.errs.push(
            "spec.description",
            format!("must be at most {MAX_WORKFLOW_DESCRIPTION} characters"),
        );
    }
    for (name, def) in &spec.args {
        c.arg(name, def);
    }
    if spec.steps.is_empty() {
        c.errs
            .push("spec.steps", "workflow must have at least one step");
    }
    for (i, step) in spec.steps.iter().enumerate() {
        c.step(step, &format!("spec.steps[{i}]"), Level::Top, None);
    }
    for (i, step) in spec.on_failure.iter().enumerate() {
        c.step(
            step,
            &format!("spec.onFailure[{i}]"),
            Level::OnFailure,
            None,
        );
    }
    c.errs
}

pub(super) fn warnings(spec: &WorkflowSpec) -> Vec<String> {
    let mut out = Vec::new();
    for (i, step) in spec.steps.iter().enumerate() {
        step_warnings(spec, step, &format!("spec.steps[{i}]"), &mut out);
    }
    out
}

/// The warnings of `step` and of its sub-steps at every depth (a nested loop's body too).
fn step_warnings(spec: &WorkflowSpec, step: &Step, path: &str, out: &mut Vec<String>) {
    if step.store.is_some() && step.output.is_none() {
        out.push(format!(
            "{path} ({}): store is deprecated, use output",
            step.id
        ));
    }
    if spec.output.is_some() && (step.store.is_some() || step.output.is_some()) {
        out.push(format!(
            "{path} ({}): output/store has no effect because the workflow declares an \
             output template",
            step.id
        ));
    }
    for (j, child) in step.children().enumerate() {
        let child_path = format!("{path}.{}[{j}]", child_field(step));
        step_warnings(spec, child, &child_path, out);
    }
}

fn child_field(step: &Step) -> &'static str {
    if step.for_each.is_some() {
        "forEach.steps"
    } else {
        "parallel"
    }
}

impl<'a> Checker<'a> {
    fn arg(&mut self, name: &str, def: &super::ArgDefinition) {
        let path = format!("spec.args.{name}");
        if !is_arg_name(name) {
            self.errs.push(
                path.clone(),
                format!("argument name must match {ARG_NAME_PATTERN}"),
            );
        }
        match def.type_.as_deref() {
            None | Some("") => self.errs.push(format!("{path}.type"), "type is required"),
            Some(t) => match ArgType::parse(t) {
                None => self.errs.push(
                    format!("{path}.type"),
                    "must be one of string, integer, boolean, number, object, array",
                ),
                Some(ty) => {
                    if let Some(default) = def.default.as_ref().filter(|d| !d.is_null())
                        && !ty.accepts(default)
                    {
                        self.errs
                            .push(format!("{path}.default"), format!("must be of type {t}"));
                    }
                }
            },
        }
        if let Some(d) = &def.description
            && char_len(d) > MAX_STEP_DESCRIPTION
        {
            self.errs.push(
                format!("{path}.description"),
                format!("must be at most {MAX_STEP_DESCRIPTION} characters"),
            );
        }
    }

    fn step(&mut self, step: &'a Step, path: &str, level: Level, outer_as: Option<&str>) {
        self.id(step, path);
        // Before the sub-steps: a condition is evaluated before its step (and so before any
        // of the step's sub-steps) runs.
        if let Some(cond) = &step.condition {
            self.condition(cond, &format!("{path}.condition"));
        }
        self.action(step, path, level, outer_as);
        if let Some(tool) = &step.tool
            && tool.trim().is_empty()
        {
            self.errs.push(format!("{path}.tool"), "must not be empty");
        }
        if let Some(p) = &step.paginate {
            if step.tool.is_none() {
                self.errs
                    .push(format!("{path}.paginate"), "is allowed on tool steps only");
            }
            self.paginate(p, path);
        }
        if let Some(jq) = &step.jq
            && jq.trim().is_empty()
        {
            self.errs.push(format!("{path}.jq"), "must not be empty");
        }
        if let Some(d) = &step.description
            && char_len(d) > MAX_STEP_DESCRIPTION
        {
            self.errs.push(
                format!("{path}.description"),
                format!("must be at most {MAX_STEP_DESCRIPTION} characters"),
            );
        }
        if !step.id.is_empty() {
            self.finished_ids.insert(step.id.as_str());
        }
    }

    fn id(&mut self, step: &'a Step, path: &str) {
        let id = step.id.as_str();
        if id.is_empty() {
            self.errs.push(format!("{path}.id"), "id is required");
            return;
        }
        if !is_step_id(id) {
            self.errs.push(
                format!("{path}.id"),
                format!("must match {STEP_ID_PATTERN}"),
            );
        }
        if char_len(id) > MAX_STEP_ID {
            self.errs.push(
                format!("{path}.id"),
                format!("must be at most {MAX_STEP_ID} characters"),
            );
        }
        if !self.seen_ids.insert(id) {
            // The original's wording differs between top-level steps and sub-steps; ids are
            // unique across the whole workflow either way.
            let rule = if path.starts_with("spec.steps[") && !path.contains("].") {
                format!("duplicate step ID '{id}' found")
            } else {
                format!("duplicate sub-step id '{id}' (step ids are unique across the workflow)")
            };
            self.errs.push(format!("{path}.id"), rule);
        }
    }

    fn action(&mut self, step: &'a Step, path: &str, level: Level, outer_as: Option<&str>) {
        let (tool, for_each, parallel) = (
            step.tool.is_some(),
            step.for_each.as_ref(),
            step.parallel.as_ref(),
        );
        match level {
            Level::Top => match (tool, for_each.is_some(), parallel.is_some()) {
                (false, false, false) => {
                    self.errs
                        .push(path, "one of tool, forEach, or parallel is required");
                }
                (true, true, _) | (true, _, true) => {
                    self.errs
                        .push(path, "tool is mutually exclusive with forEach/parallel");
                }
                (false, true, true) => {
                    self.errs
                        .push(path, "forEach and parallel are mutually exclusive");
                }
                _ => {}
            },
            Level::LoopBody => {
                if tool == for_each.is_some() {
                    self.errs
                        .push(path, "exactly one of tool or forEach is required");
                }
                if parallel.is_some() {
                    self.errs.push(
                        format!("{path}.parallel"),
                        "is not allowed in a forEach body",
                    );
                }
            }
            Level::NestedBody | Level::Parallel | Level::OnFailure => {
                let place = match level {
                    Level::NestedBody => "a nested forEach body (loops nest one level deep)",
                    Level::Parallel => "a parallel group",
                    _ => "onFailure",
                };
                if !tool {
                    self.errs.push(format!("{path}.tool"), "tool is required");
                }
                if for_each.is_some() {
                    self.errs.push(
                        format!("{path}.forEach"),
                        format!("is not allowed in {place}"),
                    );
                }
                if parallel.is_some() {
                    self.errs.push(
                        format!("{path}.parallel"),
                        format!("is not allowed in {place}"),
                    );
                }
            }
        }
        if let Some(f) = for_each {
            let nested = level == Level::LoopBody;
            self.for_each(
                f,
                &format!("{path}.forEach"),
                nested.then_some(outer_as).flatten(),
            );
        }
        if let Some(group) = parallel {
            if group.is_empty() {
                self.errs.push(
                    format!("{path}.parallel"),
                    "must contain at least one sub-step",
                );
            }
            // The group's sub-steps run at once: none finishes before a sibling starts.
            let mut group_ids = Vec::with_capacity(group.len());
            for (j, sub) in group.iter().enumerate() {
                self.step(sub, &format!("{path}.parallel[{j}]"), Level::Parallel, None);
                if self.finished_ids.remove(sub.id.as_str()) {
                    group_ids.push(sub.id.as_str());
                }
            }
            self.finished_ids.extend(group_ids);
        }
    }

    fn for_each(&mut self, f: &'a ForEach, path: &str, outer_as: Option<&str>) {
        match &f.items {
            Some(Value::String(s)) if !s.trim().is_empty() => {}
            _ => self.errs.push(
                format!("{path}.items"),
                "items is required and must be a template string",
            ),
        }
        if let Some(v) = &f.as_
            && !is_arg_name(v)
        {
            self.errs.push(
                format!("{path}.as"),
                format!("must match {ARG_NAME_PATTERN}"),
            );
        }
        if let Some(outer) = outer_as
            && f.variable() == outer
        {
            self.errs.push(
                format!("{path}.as"),
                format!("must differ from the outer loop's ({outer})"),
            );
        }
        if let Some(p) = f.parallelism
            && !(1..=50).contains(&p)
        {
            self.errs
                .push(format!("{path}.parallelism"), "must be between 1 and 50");
        }
        if f.steps.is_empty() {
            self.errs.push(
                format!("{path}.steps"),
                "steps is required and must contain at least one sub-step",
            );
        }
        let level = if outer_as.is_some() {
            Level::NestedBody
        } else {
            Level::LoopBody
        };
        for (j, sub) in f.steps.iter().enumerate() {
            self.step(
                sub,
                &format!("{path}.steps[{j}]"),
                level,
                Some(f.variable()),
            );
        }
    }

    fn paginate(&mut self, p: &Paginate, path: &str) {
        if let Some(m) = p.max_pages
            && !(1..=1000).contains(&m)
        {
            self.errs.push(
                format!("{path}.paginate.maxPages"),
                "must be between 1 and 1000",
            );
        }
        for (field, value) in [
            ("itemsField", &p.items_field),
            ("tokenField", &p.token_field),
            ("tokenArg", &p.token_arg),
        ] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                self.errs
                    .push(format!("{path}.paginate.{field}"), "must not be empty");
            }
        }
    }

    fn condition(&mut self, cond: &StepCondition, path: &str) {
        let sources = [
            cond.template.is_some(),
            cond.tool.is_some(),
            cond.from_step.is_some(),
        ];
        match sources.iter().filter(|s| **s).count() {
            0 => self.errs.push(
                path,
                "condition requires exactly one of template, tool, or fromStep",
            ),
            1 => {}
            _ if cond.template.is_some() => {
                self.errs.push(
                    path,
                    "condition.template is mutually exclusive with tool/fromStep",
                );
            }
            _ => self.errs.push(
                path,
                "condition: tool and fromStep are mutually exclusive (set exactly one of \
                 template, tool, or fromStep)",
            ),
        }
        if cond.template.is_none() && (cond.tool.is_some() || cond.from_step.is_some()) {
            if cond.expect.is_none() && cond.expect_not.is_none() {
                self.errs.push(
                    path,
                    "a tool or fromStep condition requires expect or expectNot",
                );
            }
            for (field, e) in [("expect", &cond.expect), ("expectNot", &cond.expect_not)] {
                if let Some(e) = e {
                    self.expectation(e, &format!("{path}.{field}"));
                }
            }
        }
        if let Some(from) = &cond.from_step {
            if from.is_empty() {
                self.errs
                    .push(format!("{path}.fromStep"), "must not be empty");
            } else if !self.finished_ids.contains(from.as_str()) {
                self.errs.push(
                    format!("{path}.fromStep"),
                    format!("must name an earlier step, '{from}' is not one"),
                );
            }
        }
        if cond.tool.as_deref().is_some_and(|t| t.trim().is_empty()) {
            self.errs.push(format!("{path}.tool"), "must not be empty");
        }
    }

    fn expectation(&mut self, e: &Expectation, path: &str) {
        if e.success.is_none() && e.json_path.is_none() {
            self.errs
                .push(path, "either success or jsonPath must be provided");
        }
    }
}
