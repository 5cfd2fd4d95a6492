//! The read-only view templates see: `.input`, `.results`, `.vars` and `.context`.
//!
//! Templates read borrowed [`Roots`], so a render never copies the data. The results are
//! kept in two layers: a frozen, shared base and the results of the current branch; a loop
//! freezes its scope once, so each iteration starts from a cheap copy. Only the executor
//! changes a scope (by merging a finished step's results or binding loop variables).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::template::Roots;

/// What a step's templates can read.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    input: Arc<Value>,
    /// Results recorded before the current branch, shared by its copies.
    base: Arc<Map<String, Value>>,
    /// Results recorded in the current branch; they win over `base`.
    overlay: Map<String, Value>,
    vars: Map<String, Value>,
}

impl Scope {
    pub(crate) fn new(input: Value) -> Self {
        Self {
            input: Arc::new(input),
            base: Arc::default(),
            overlay: Map::new(),
            vars: Map::new(),
        }
    }

    /// The template data.
    pub(crate) fn roots(&self) -> Roots<'_> {
        let results = vec![&*self.base, &self.overlay];
        Roots::new()
            .with("input", &self.input)
            .with_maps("results", results.clone())
            .with_maps("context", results)
            .with_maps("vars", vec![&self.vars])
    }

    /// The same data with `.result` added (jsonPath keys of conditions).
    pub(crate) fn roots_with_result<'a>(&'a self, result: &'a Value) -> Roots<'a> {
        self.roots().with("result", result)
    }

    pub(crate) fn input(&self) -> &Value {
        &self.input
    }

    /// The input, shared (for evaluations on other threads).
    pub(crate) fn input_shared(&self) -> Arc<Value> {
        Arc::clone(&self.input)
    }

    pub(crate) fn result(&self, key: &str) -> Option<&Value> {
        self.overlay.get(key).or_else(|| self.base.get(key))
    }

    /// The loop variables as a JSON object (for jq's `$vars`).
    pub(crate) fn vars(&self) -> Value {
        Value::Object(self.vars.clone())
    }

    /// Binds a loop variable.
    pub(crate) fn bind(&mut self, name: String, value: Value) {
        self.vars.insert(name, value);
    }

    /// Records finished steps' results (later keys overwrite earlier ones).
    pub(crate) fn merge(&mut self, results: &[(String, Value)]) {
        for (k, v) in results {
            self.overlay.insert(k.clone(), v.clone());
        }
    }

    /// Moves the branch's results into the shared base, so copies of the scope are cheap.
    pub(crate) fn freeze(&mut self) {
        if !self.overlay.is_empty() {
            let mut base = (*self.base).clone();
            base.extend(std::mem::take(&mut self.overlay));
            self.base = Arc::new(base);
        }
    }
}
