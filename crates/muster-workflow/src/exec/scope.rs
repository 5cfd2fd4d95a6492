//! The read-only view templates see: `.input`, `.results`, `.vars` and `.context`.
//!
//! The template data is kept as one JSON object and updated in place as steps finish, so a
//! render never copies the results gathered so far. Only the executor changes a scope (by
//! merging a finished step's results or binding loop variables); templates read it.

use serde_json::{Map, Value};

const INPUT: &str = "input";
const RESULTS: &str = "results";
const VARS: &str = "vars";
const CONTEXT: &str = "context";

/// What a step's templates can read.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    /// `{"input": …, "results": {…}, "vars": {…}, "context": {…}}`; `context` mirrors
    /// `results`.
    data: Value,
}

impl Scope {
    pub(crate) fn new(input: Value) -> Self {
        let mut root = Map::with_capacity(4);
        root.insert(INPUT.to_owned(), input);
        root.insert(RESULTS.to_owned(), Value::Object(Map::new()));
        root.insert(VARS.to_owned(), Value::Object(Map::new()));
        root.insert(CONTEXT.to_owned(), Value::Object(Map::new()));
        Self {
            data: Value::Object(root),
        }
    }

    /// The template data.
    pub(crate) fn data(&self) -> &Value {
        &self.data
    }

    /// The same data with `.result` added (jsonPath keys of conditions).
    pub(crate) fn data_with_result(&self, result: &Value) -> Value {
        let mut data = self.data.clone();
        if let Value::Object(m) = &mut data {
            m.insert("result".to_owned(), result.clone());
        }
        data
    }

    pub(crate) fn input(&self) -> &Value {
        self.data.get(INPUT).unwrap_or(&Value::Null)
    }

    pub(crate) fn result(&self, key: &str) -> Option<&Value> {
        self.data.get(RESULTS).and_then(|r| r.get(key))
    }

    pub(crate) fn vars(&self) -> &Value {
        self.data.get(VARS).unwrap_or(&Value::Null)
    }

    fn section(&mut self, key: &str) -> Option<&mut Map<String, Value>> {
        self.data.as_object_mut()?.get_mut(key)?.as_object_mut()
    }

    /// Binds a loop variable.
    pub(crate) fn bind(&mut self, name: String, value: Value) {
        if let Some(vars) = self.section(VARS) {
            vars.insert(name, value);
        }
    }

    /// Records finished steps' results (later keys overwrite earlier ones).
    pub(crate) fn merge(&mut self, results: &[(String, Value)]) {
        for (k, v) in results {
            if let Some(context) = self.section(CONTEXT) {
                context.insert(k.clone(), v.clone());
            }
            if let Some(r) = self.section(RESULTS) {
                r.insert(k.clone(), v.clone());
            }
        }
    }
}
