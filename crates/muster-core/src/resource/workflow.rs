//! The `Workflow` kind: a multi-step process exposed as the tool `workflow_<name>`.
//!
//! The types mirror the CRD field for field. A [`Step`] is used at every level (top-level
//! steps, `forEach` bodies, `parallel` groups, `onFailure`); [`WorkflowSpec::validate`]
//! enforces which fields each level allows, and [`Step::action`] gives the one action a valid
//! step has as an enum.
//!
//! The tools that create workflows also accept the original's snake_case spellings
//! (`allow_failure`, `from_step`, `expect_not`, `json_path`, `for_each`, `on_failure`).

mod status;
mod validation;

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use status::WorkflowStatus;

use super::{Kind, ValidationErrors};

/// The `Workflow` kind marker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Workflow;

impl Kind for Workflow {
    const KIND: &'static str = "Workflow";
    const PLURAL: &'static str = "workflows";
    type Spec = WorkflowSpec;
    type Status = WorkflowStatus;
}

/// `spec` of a Workflow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowSpec {
    /// Human-readable description, at most 1000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Argument schema, by argument name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, ArgDefinition>,
    /// The steps, at least one.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Best-effort cleanup steps run when the workflow fails on a step that does not allow
    /// failure.
    #[serde(default, alias = "on_failure", skip_serializing_if = "Vec::is_empty")]
    pub on_failure: Vec<Step>,
    /// Output template rendered after all steps, returned in place of the default response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Map<String, Value>>,
}

impl WorkflowSpec {
    /// Checks every structural rule and returns every violation, with paths under `spec.`.
    ///
    /// jq programs and templates are compiled by the engine (`muster-workflow`), which adds
    /// its own violations; here they are only checked to be present where required.
    pub fn validate(&self) -> Result<(), ValidationErrors> {
        validation::validate(self).into_result(())
    }

    /// Authoring warnings that do not make the workflow invalid: the deprecated `store` used
    /// without `output`, and per-step flags made inert by a workflow-level output template.
    pub fn warnings(&self) -> Vec<String> {
        validation::warnings(self)
    }

    /// Every tool the workflow names (steps, sub-steps, conditions, `onFailure`), sorted.
    pub fn referenced_tools(&self) -> Vec<String> {
        let mut tools = BTreeSet::new();
        for step in self.steps.iter().chain(&self.on_failure) {
            step.collect_tools(&mut tools);
        }
        tools.into_iter().collect()
    }

    /// The status a reconciler writes for this spec.
    pub fn computed_status(&self) -> WorkflowStatus {
        let errors = validation::validate(self);
        WorkflowStatus {
            valid: errors.is_empty(),
            validation_errors: errors.messages(),
            referenced_tools: self.referenced_tools(),
            step_count: u32::try_from(self.steps.len()).unwrap_or(u32::MAX),
            conditions: Vec::new(),
        }
    }
}

/// The JSON type of a workflow argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgType {
    /// A string.
    String,
    /// A whole number.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// Any number.
    Number,
    /// A JSON object.
    Object,
    /// A JSON array.
    Array,
}

impl ArgType {
    /// Every type, in the order the CRD lists them.
    pub const ALL: [ArgType; 6] = [
        Self::String,
        Self::Integer,
        Self::Boolean,
        Self::Number,
        Self::Object,
        Self::Array,
    ];

    /// The spelling in `args.<name>.type`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::Number => "number",
            Self::Object => "object",
            Self::Array => "array",
        }
    }

    /// Parses the spelling in `args.<name>.type`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Whether `value` has this type.
    pub fn accepts(self, value: &Value) -> bool {
        match self {
            Self::String => value.is_string(),
            Self::Integer => {
                value.is_i64()
                    || value.is_u64()
                    || value
                        .as_f64()
                        .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
            }
            Self::Boolean => value.is_boolean(),
            Self::Number => value.is_number(),
            Self::Object => value.is_object(),
            Self::Array => value.is_array(),
        }
    }
}

/// One argument of a workflow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArgDefinition {
    /// `string`, `integer`, `boolean`, `number`, `object` or `array`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Whether the caller must pass it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// The value used when the caller passes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Human-readable description, at most 500 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl ArgDefinition {
    /// The parsed type, when it is one of the six.
    pub fn arg_type(&self) -> Option<ArgType> {
        self.type_.as_deref().and_then(ArgType::parse)
    }
}

/// A workflow step: a tool call, a loop or a concurrent group.
///
/// The same type describes sub-steps (`forEach` bodies, `parallel`, `onFailure`) and nested
/// loop steps; validation enforces what each level allows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Unique step identifier, `^[a-zA-Z0-9_-]+$`, at most 63 characters.
    #[serde(default)]
    pub id: String,
    /// The tool to call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Tool arguments; string leaves are templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
    /// Execution condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<StepCondition>,
    /// A loop over a list.
    #[serde(default, alias = "for_each", skip_serializing_if = "Option::is_none")]
    pub for_each: Option<ForEach>,
    /// Sub-steps run concurrently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<Vec<Step>>,
    /// Follow the tool's next-page token (tool steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paginate: Option<Paginate>,
    /// jq program reshaping the result before it is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jq: Option<String>,
    /// Include the result in the returned document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<bool>,
    /// Deprecated alias for `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// Continue when the step fails.
    #[serde(
        default,
        alias = "allow_failure",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub allow_failure: bool,
    /// Human-readable documentation, at most 500 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The one action of a valid step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepAction<'a> {
    /// Call this tool.
    Tool(&'a str),
    /// Run a loop.
    ForEach(&'a ForEach),
    /// Run these sub-steps concurrently.
    Parallel(&'a [Step]),
}

impl Step {
    /// A tool step.
    pub fn tool(id: impl Into<String>, tool: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            tool: Some(tool.into()),
            ..Self::default()
        }
    }

    /// The step's action when exactly one of `tool`, `forEach`, `parallel` is set.
    pub fn action(&self) -> Option<StepAction<'_>> {
        match (&self.tool, &self.for_each, &self.parallel) {
            (Some(t), None, None) => Some(StepAction::Tool(t)),
            (None, Some(f), None) => Some(StepAction::ForEach(f)),
            (None, None, Some(p)) => Some(StepAction::Parallel(p)),
            _ => None,
        }
    }

    /// The effective output flag: `output` if set, else the deprecated `store`.
    pub fn effective_output(&self) -> bool {
        self.output.or(self.store).unwrap_or(false)
    }

    /// Sub-steps of a loop body or parallel group.
    pub fn children(&self) -> impl Iterator<Item = &Step> {
        let body = self.for_each.iter().flat_map(|f| f.steps.iter());
        body.chain(self.parallel.iter().flatten())
    }

    fn collect_tools(&self, tools: &mut BTreeSet<String>) {
        if let Some(t) = self.tool.as_deref().filter(|t| !t.is_empty()) {
            tools.insert(t.to_owned());
        }
        if let Some(t) = self.condition.as_ref().and_then(|c| c.tool.as_deref()) {
            tools.insert(t.to_owned());
        }
        for child in self.children() {
            child.collect_tools(tools);
        }
    }
}

/// `forEach`: run a body once per list item.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForEach {
    /// Template resolving to an array, e.g. `{{ .input.clusters }}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Value>,
    /// Loop variable name (default `item`); the index is `<as>_index`.
    #[serde(rename = "as", default, skip_serializing_if = "Option::is_none")]
    pub as_: Option<String>,
    /// Iterations run at once, 1–50; one after another when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i64>,
    /// The body.
    #[serde(default)]
    pub steps: Vec<Step>,
}

impl ForEach {
    /// The default loop variable name.
    pub const DEFAULT_AS: &'static str = "item";

    /// The loop variable name, with its default.
    pub fn variable(&self) -> &str {
        self.as_.as_deref().unwrap_or(Self::DEFAULT_AS)
    }

    /// The items template, when it is a string.
    pub fn items_template(&self) -> Option<&str> {
        self.items.as_ref().and_then(Value::as_str)
    }
}

/// `paginate`: follow a tool's pages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Paginate {
    /// Where a page's list is, a dotted path (default `items`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_field: Option<String>,
    /// Where a page's next-page token is, a dotted path (default `continue`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_field: Option<String>,
    /// The argument the token is passed in (default `continue`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_arg: Option<String>,
    /// The most pages fetched, 1–1000 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pages: Option<i64>,
}

impl Paginate {
    /// `itemsField` with its default.
    pub fn items_field(&self) -> &str {
        self.items_field.as_deref().unwrap_or("items")
    }

    /// `tokenField` with its default.
    pub fn token_field(&self) -> &str {
        self.token_field.as_deref().unwrap_or("continue")
    }

    /// `tokenArg` with its default.
    pub fn token_arg(&self) -> &str {
        self.token_arg.as_deref().unwrap_or("continue")
    }

    /// `maxPages` with its default.
    pub fn max_pages(&self) -> u32 {
        self.max_pages
            .and_then(|m| u32::try_from(m).ok())
            .unwrap_or(10)
    }
}

/// A step's execution condition: exactly one of `template`, `tool`, `fromStep`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepCondition {
    /// A boolean Go-template gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// A tool whose call decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Arguments of the condition tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
    /// An earlier step whose result decides.
    #[serde(default, alias = "from_step", skip_serializing_if = "Option::is_none")]
    pub from_step: Option<String>,
    /// Positive expectations (with tool/fromStep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expectation>,
    /// Negative expectations (with tool/fromStep).
    #[serde(default, alias = "expect_not", skip_serializing_if = "Option::is_none")]
    pub expect_not: Option<Expectation>,
}

/// What a tool or fromStep condition expects of the result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Expectation {
    /// Whether the call should succeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// Path conditions: dotted/bracketed paths or templates over `.result`, to expected values.
    #[serde(default, alias = "json_path", skip_serializing_if = "Option::is_none")]
    pub json_path: Option<Map<String, Value>>,
}
