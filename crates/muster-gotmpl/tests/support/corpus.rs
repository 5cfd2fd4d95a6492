//! The oracle corpus: `templates/corpus.json` (the cases) beside `templates/golden.json` (what
//! Go produced for each; see `oracle/README.md`).

// Each test binary uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// One case with Go's result.
pub(crate) struct Case {
    /// The case's name.
    pub(crate) name: String,
    /// The template text.
    pub(crate) template: String,
    /// `"missingkey-error"` (muster's option) or `"string"` (Go's default).
    pub(crate) mode: String,
    /// The data rendered against.
    pub(crate) data: Value,
    /// What Go rendered, or `Err(message)` where Go failed.
    pub(crate) go: Result<String, String>,
}

fn load(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("templates")
        .join(name);
    let text = std::fs::read_to_string(path).expect("read fixture");
    serde_json::from_str(&text).expect("parse fixture")
}

/// Every case of the corpus with Go's result, in corpus order.
pub(crate) fn cases() -> Vec<Case> {
    let corpus = load("corpus.json");
    let golden = load("golden.json");
    let cases = corpus.as_array().expect("corpus is a list");
    let expected = golden.as_array().expect("golden is a list");
    assert_eq!(
        cases.len(),
        expected.len(),
        "golden.json is stale: regenerate it"
    );
    cases
        .iter()
        .zip(expected)
        .map(|(case, want)| {
            let name = case["name"].as_str().expect("name").to_owned();
            assert_eq!(
                want["name"].as_str(),
                Some(name.as_str()),
                "golden.json is stale: regenerate it"
            );
            // A case's data: inline JSON, or `"@name"` for the shared fixture `name.json`.
            let data = match case.get("data") {
                None => Value::Object(Default::default()),
                Some(Value::String(r)) if r.starts_with('@') => load(&format!("{}.json", &r[1..])),
                Some(v) => v.clone(),
            };
            let go = if want.get("error").and_then(Value::as_bool) == Some(true) {
                Err(want["message"].as_str().unwrap_or("").to_owned())
            } else {
                Ok(want["output"].as_str().expect("output").to_owned())
            };
            Case {
                name,
                template: case["template"].as_str().expect("template").to_owned(),
                mode: case["mode"]
                    .as_str()
                    .unwrap_or("missingkey-error")
                    .to_owned(),
                data,
                go,
            }
        })
        .collect()
}

/// Whether `got` matches Go: the same text, or an error where Go failed (error texts are not
/// compared).
pub(crate) fn matches(got: &Result<String, String>, go: &Result<String, String>) -> bool {
    match (got, go) {
        (Ok(out), Ok(want)) => out == want,
        (Err(_), Err(_)) => true,
        _ => false,
    }
}
