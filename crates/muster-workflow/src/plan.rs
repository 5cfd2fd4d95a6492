//! Planning: a workflow spec compiled once, before anything runs.
//!
//! [`Plan::compile`] runs the structural validation of `muster-core`, parses every template
//! (arguments, conditions, loop items, the output template) and compiles every jq program.
//! It is pure: the same spec always gives the same plan or the same errors, and every error
//! names its field path.

use std::sync::Arc;

use muster_core::ValidationErrors;
use muster_core::resource::workflow::{
    ArgDefinition, Expectation, Paginate, Step, StepAction, StepCondition, WorkflowSpec,
};
use serde_json::Value;

use crate::query::Query;
use crate::template::Template;
use crate::value_tree::{LeafError, Node};

/// Most iterations of a loop run at once.
pub const MAX_PARALLELISM: usize = 50;

/// A compiled workflow.
#[derive(Debug)]
pub struct Plan {
    pub(crate) name: String,
    pub(crate) args: Vec<(String, ArgDefinition)>,
    pub(crate) steps: Vec<PlannedStep>,
    pub(crate) on_failure: Vec<PlannedStep>,
    pub(crate) output: Option<Node>,
    pub(crate) tools: Vec<String>,
}

/// One compiled step.
#[derive(Debug)]
pub(crate) struct PlannedStep {
    pub(crate) id: String,
    pub(crate) kind: StepKind,
    pub(crate) condition: Option<PlannedCondition>,
    pub(crate) jq: Option<Arc<Query>>,
    pub(crate) output: bool,
    pub(crate) allow_failure: bool,
}

/// What a step does.
#[derive(Debug)]
pub(crate) enum StepKind {
    /// Call a tool.
    Tool {
        tool: String,
        args: Node,
        paginate: Option<Paginate>,
    },
    /// Run a body once per item.
    ForEach {
        items: Template,
        items_source: String,
        var: String,
        parallelism: usize,
        body: Vec<PlannedStep>,
    },
    /// Run sub-steps concurrently.
    Parallel(Vec<PlannedStep>),
}

/// A compiled condition.
#[derive(Debug)]
pub(crate) struct PlannedCondition {
    pub(crate) source: ConditionSource,
    pub(crate) expect: Option<PlannedExpectation>,
    pub(crate) expect_not: Option<PlannedExpectation>,
}

/// Where a condition's verdict comes from.
#[derive(Debug)]
pub(crate) enum ConditionSource {
    /// A boolean template.
    Template(Template),
    /// A tool call.
    Tool { tool: String, args: Node },
    /// An earlier step's result.
    FromStep(String),
}

/// A compiled expectation.
#[derive(Debug)]
pub(crate) struct PlannedExpectation {
    pub(crate) success: Option<bool>,
    /// (path or template key, compiled key template when it has `{{`, expected value tree).
    pub(crate) json_path: Vec<(String, Option<Template>, Node)>,
}

impl Plan {
    /// Validates and compiles `spec` for the workflow `name`.
    pub fn compile(name: &str, spec: &WorkflowSpec) -> Result<Plan, ValidationErrors> {
        let mut errs = match spec.validate() {
            Ok(()) => ValidationErrors::new(),
            Err(e) => e,
        };
        let mut c = Compiler { errs: &mut errs };
        let steps = c.steps(&spec.steps, "spec.steps");
        let on_failure = c.steps(&spec.on_failure, "spec.onFailure");
        let output = spec.output.as_ref().and_then(|o| {
            Node::compile_map(o)
                .map_err(|e| c.leaf_errors("spec.output", e))
                .ok()
        });
        let plan = Plan {
            name: name.to_owned(),
            args: spec
                .args
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            steps,
            on_failure,
            output,
            tools: availability_tools(spec),
        };
        errs.into_result(plan)
    }

    /// The workflow's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tools the workflow needs to be available: those of steps, loop bodies, parallel
    /// groups and `onFailure` (not condition tools), in first-seen order.
    pub fn required_tools(&self) -> &[String] {
        &self.tools
    }
}

fn availability_tools(spec: &WorkflowSpec) -> Vec<String> {
    fn walk(step: &Step, out: &mut Vec<String>) {
        if let Some(t) = &step.tool
            && !out.contains(t)
        {
            out.push(t.clone());
        }
        for child in step.children() {
            walk(child, out);
        }
    }
    let mut out = Vec::new();
    for step in spec.steps.iter().chain(&spec.on_failure) {
        walk(step, &mut out);
    }
    out
}

struct Compiler<'e> {
    errs: &'e mut ValidationErrors,
}

impl Compiler<'_> {
    fn leaf_errors(&mut self, base: &str, errors: Vec<LeafError>) {
        for e in errors {
            let path = if e.path.is_empty() {
                base.to_owned()
            } else {
                format!("{base}.{}", e.path)
            };
            self.errs.push(path, e.error.to_string());
        }
    }

    fn args(&mut self, args: Option<&serde_json::Map<String, Value>>, path: &str) -> Node {
        let empty = serde_json::Map::new();
        Node::compile_map(args.unwrap_or(&empty)).unwrap_or_else(|e| {
            self.leaf_errors(path, e);
            Node::Literal(Value::Object(serde_json::Map::new()))
        })
    }

    fn template(&mut self, source: &str, path: &str) -> Option<Template> {
        Template::parse(source)
            .map_err(|e| self.errs.push(path, e.to_string()))
            .ok()
    }

    fn steps(&mut self, steps: &[Step], base: &str) -> Vec<PlannedStep> {
        steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| self.step(s, &format!("{base}[{i}]")))
            .collect()
    }

    fn step(&mut self, step: &Step, path: &str) -> Option<PlannedStep> {
        let condition = step
            .condition
            .as_ref()
            .and_then(|c| self.condition(c, &format!("{path}.condition")));
        let jq = step.jq.as_deref().and_then(|src| {
            Query::compile(src)
                .map(Arc::new)
                .map_err(|e| self.errs.push(format!("{path}.jq"), e.to_string()))
                .ok()
        });
        let kind = match step.action()? {
            StepAction::Tool(tool) => StepKind::Tool {
                tool: tool.to_owned(),
                args: self.args(step.args.as_ref(), &format!("{path}.args")),
                paginate: step.paginate.clone(),
            },
            StepAction::ForEach(f) => {
                let items_path = format!("{path}.forEach.items");
                let items_source = f.items_template()?.to_owned();
                let items = self.template(&items_source, &items_path)?;
                let parallelism = f
                    .parallelism
                    .and_then(|p| usize::try_from(p).ok())
                    .unwrap_or(1)
                    .clamp(1, MAX_PARALLELISM);
                StepKind::ForEach {
                    items,
                    items_source,
                    var: f.variable().to_owned(),
                    parallelism,
                    body: self.steps(&f.steps, &format!("{path}.forEach.steps")),
                }
            }
            StepAction::Parallel(group) => {
                StepKind::Parallel(self.steps(group, &format!("{path}.parallel")))
            }
        };
        Some(PlannedStep {
            id: step.id.clone(),
            kind,
            condition,
            jq,
            output: step.effective_output(),
            allow_failure: step.allow_failure,
        })
    }

    fn condition(&mut self, c: &StepCondition, path: &str) -> Option<PlannedCondition> {
        let source = if let Some(t) = &c.template {
            ConditionSource::Template(self.template(t, &format!("{path}.template"))?)
        } else if let Some(tool) = &c.tool {
            ConditionSource::Tool {
                tool: tool.clone(),
                args: self.args(c.args.as_ref(), &format!("{path}.args")),
            }
        } else {
            ConditionSource::FromStep(c.from_step.clone()?)
        };
        let is_template = matches!(source, ConditionSource::Template(_));
        let mut expectation = |e: &Option<Expectation>, field: &str| {
            e.as_ref()
                .filter(|_| !is_template)
                .map(|e| self.expectation(e, &format!("{path}.{field}")))
        };
        let expect = expectation(&c.expect, "expect");
        let expect_not = expectation(&c.expect_not, "expectNot");
        Some(PlannedCondition {
            source,
            expect,
            expect_not,
        })
    }

    fn expectation(&mut self, e: &Expectation, path: &str) -> PlannedExpectation {
        let mut json_path = Vec::new();
        for (key, expected) in e.json_path.iter().flatten() {
            let key_template = if key.contains("{{") {
                self.template(key, &format!("{path}.jsonPath[{key}]"))
            } else {
                None
            };
            let expected = Node::compile(expected).unwrap_or_else(|errs| {
                self.leaf_errors(&format!("{path}.jsonPath[{key}]"), errs);
                Node::Literal(Value::Null)
            });
            json_path.push((key.clone(), key_template, expected));
        }
        PlannedExpectation {
            success: e.success,
            json_path,
        }
    }
}
