//! Golden tests of the template engine against Go's `text/template` + sprig.
//!
//! `tests/templates/corpus.json` lists the cases; `tests/templates/golden.json` holds what Go
//! produced for each (see `tests/oracle/README.md` to regenerate it). Every case must match:
//! the same text, or an error where Go failed (error texts are not compared).

use std::path::PathBuf;

use chrono::{Local, Offset, TimeZone};
use muster_workflow::template::{MissingKey, Template};
use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("templates")
}

fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(dir().join(name)).expect("read fixture");
    serde_json::from_str(&text).expect("parse fixture")
}

/// A case's data: inline JSON, or `"@name"` for the shared fixture `name.json`.
fn data_of(case: &Value) -> Value {
    match case.get("data") {
        None => Value::Object(Default::default()),
        Some(Value::String(r)) if r.starts_with('@') => load(&format!("{}.json", &r[1..])),
        Some(v) => v.clone(),
    }
}

/// Whether the case's output depends on the local time zone (the oracle runs in UTC).
fn zone_dependent(template: &str) -> bool {
    ["date", "toDate", "htmlDate", "unixEpoch"]
        .iter()
        .any(|f| template.contains(f))
}

fn render(template: &str, mode: &str, data: &Value) -> Result<String, String> {
    let t = Template::parse(template).map_err(|e| e.to_string())?;
    let t = match mode {
        "string" => t.with_missing_key(MissingKey::Default),
        "missingkey-error" => t,
        other => panic!("unknown mode {other}"),
    };
    t.render(data).map_err(|e| e.to_string())
}

#[test]
fn every_corpus_case_matches_go() {
    let corpus = load("corpus.json");
    let golden = load("golden.json");
    let cases = corpus.as_array().expect("corpus is a list");
    let expected = golden.as_array().expect("golden is a list");
    assert_eq!(
        cases.len(),
        expected.len(),
        "golden.json is stale: regenerate it"
    );
    let local_is_utc = Local
        .timestamp_opt(0, 0)
        .single()
        .map(|t| t.offset().fix().local_minus_utc())
        == Some(0);

    let mut failures = Vec::new();
    let mut passed = 0;
    let mut skipped = 0;
    for (case, want) in cases.iter().zip(expected) {
        let name = case["name"].as_str().expect("name");
        assert_eq!(
            want["name"].as_str(),
            Some(name),
            "golden.json is stale: regenerate it"
        );
        let template = case["template"].as_str().expect("template");
        if !local_is_utc && zone_dependent(template) {
            skipped += 1;
            continue;
        }
        let mode = case["mode"].as_str().unwrap_or("missingkey-error");
        let got = render(template, mode, &data_of(case));
        let want_error = want.get("error").and_then(Value::as_bool).unwrap_or(false);
        let ok = match (&got, want_error) {
            (Err(_), true) => true,
            (Ok(out), false) => Some(out.as_str()) == want["output"].as_str(),
            _ => false,
        };
        if ok {
            passed += 1;
        } else {
            failures.push(format!(
                "{name}: template {template:?}\n    go:   {}\n    rust: {got:?}",
                if want_error {
                    format!("error ({})", want["message"].as_str().unwrap_or(""))
                } else {
                    format!("{:?}", want["output"].as_str().unwrap_or(""))
                }
            ));
        }
    }
    eprintln!(
        "template corpus: {passed} passed, {} failed, {skipped} skipped",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} cases differ from Go:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
