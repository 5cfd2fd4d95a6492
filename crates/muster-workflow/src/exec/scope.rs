//! The read-only view templates see: `.input`, `.results`, `.vars` and `.context`.
//!
//! Only the executor changes a scope (by merging a finished step's results); templates read a
//! rendered data snapshot.

use std::sync::Arc;

use serde_json::{Map, Value};

/// What a step's templates can read.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    pub(crate) input: Arc<Value>,
    pub(crate) results: Map<String, Value>,
    pub(crate) vars: Map<String, Value>,
}

impl Scope {
    pub(crate) fn new(input: Value) -> Self {
        Self {
            input: Arc::new(input),
            results: Map::new(),
            vars: Map::new(),
        }
    }

    /// The template data: `.input`, `.results`, `.vars` and `.context` (an alias of results).
    pub(crate) fn data(&self) -> Value {
        let results = Value::Object(self.results.clone());
        let mut root = Map::with_capacity(4);
        root.insert("input".to_owned(), (*self.input).clone());
        root.insert("results".to_owned(), results.clone());
        root.insert("vars".to_owned(), Value::Object(self.vars.clone()));
        root.insert("context".to_owned(), results);
        Value::Object(root)
    }

    /// The same data with `.result` added (jsonPath keys of conditions).
    pub(crate) fn data_with_result(&self, result: &Value) -> Value {
        let mut data = self.data();
        if let Value::Object(m) = &mut data {
            m.insert("result".to_owned(), result.clone());
        }
        data
    }

    pub(crate) fn vars_value(&self) -> Value {
        Value::Object(self.vars.clone())
    }

    pub(crate) fn merge(&mut self, results: &[(String, Value)]) {
        for (k, v) in results {
            self.results.insert(k.clone(), v.clone());
        }
    }
}
