//! What running a step produces: results to merge, response entries, and whether the run must
//! stop.

use muster_core::resource::execution::StepStatus;
use serde_json::{Map, Value};

/// One entry of the response document's `steps[]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) id: String,
    pub(crate) tool: String,
    pub(crate) status: StepStatus,
    pub(crate) condition: Option<ConditionInfo>,
    pub(crate) allow_failure: bool,
    /// The step's result, shown when its output flag is set or in debug mode.
    pub(crate) result: Option<Value>,
    /// Whether the output flag is set.
    pub(crate) output: bool,
    pub(crate) error: Option<String>,
}

/// How a condition was evaluated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConditionInfo {
    pub(crate) passed: bool,
    pub(crate) result: Value,
    pub(crate) tool: String,
}

impl Entry {
    pub(crate) fn to_json(&self, debug: bool) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), Value::String(self.id.clone()));
        m.insert("tool".into(), Value::String(self.tool.clone()));
        m.insert(
            "status".into(),
            Value::String(self.status.as_str().to_owned()),
        );
        if let Some(c) = &self.condition {
            m.insert("condition_evaluation".into(), Value::Bool(c.passed));
            m.insert("condition_result".into(), c.result.clone());
            m.insert("condition_tool".into(), Value::String(c.tool.clone()));
        }
        if self.allow_failure {
            m.insert("allow_failure".into(), Value::Bool(true));
        }
        if let Some(r) = self.result.as_ref().filter(|_| self.output || debug) {
            m.insert("result".into(), r.clone());
        }
        if let Some(e) = &self.error {
            m.insert("error".into(), Value::String(e.clone()));
        }
        Value::Object(m)
    }
}

/// Why a run stops.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Halt {
    /// A step that does not allow failure failed.
    Step { id: String, error: String },
    /// The engine could not go on (template, condition or items errors, cancellation).
    Engine(String),
}

impl Halt {
    pub(crate) fn message(&self) -> String {
        match self {
            Halt::Step { id, error } => format!("step {id} failed: {error}"),
            Halt::Engine(e) => e.clone(),
        }
    }
}

/// The effects of running one step (or a group of them).
#[derive(Debug, Default)]
pub(crate) struct Fragment {
    /// Results to merge, in order (later keys overwrite earlier ones).
    pub(crate) results: Vec<(String, Value)>,
    pub(crate) entries: Vec<Entry>,
    pub(crate) halt: Option<Halt>,
    /// Whether a step of this fragment failed (allowed or not).
    pub(crate) failed: bool,
}

impl Fragment {
    pub(crate) fn halted(halt: Halt) -> Self {
        Self {
            halt: Some(halt),
            failed: true,
            ..Self::default()
        }
    }

    pub(crate) fn absorb(&mut self, other: Fragment) {
        self.results.extend(other.results);
        self.entries.extend(other.entries);
        self.failed |= other.failed;
        if self.halt.is_none() {
            self.halt = other.halt;
        }
    }
}

/// The JSON value a failed call leaves in `.results`.
pub(crate) fn failure_result(error: &str) -> Value {
    serde_json::json!({ "error": error, "success": false, "isError": true })
}
