//! Golden tests of the template engine against Go's `text/template` + sprig.
//!
//! `tests/templates/corpus.json` lists the cases; `tests/templates/golden.json` holds what Go
//! produced for each (see `tests/oracle/README.md` to regenerate it). Every case must match:
//! the same text, or an error where Go failed (error texts are not compared).

#[path = "support/corpus.rs"]
mod corpus;

use std::process::Command;

use chrono::{Local, Offset, TimeZone};
use muster_gotmpl::{MissingKey, Template};

/// Set in the process this test starts to run itself in UTC.
const IN_UTC: &str = "MUSTER_GOTMPL_GOLDEN_IN_UTC";

fn local_is_utc() -> bool {
    Local
        .timestamp_opt(0, 0)
        .single()
        .map(|t| t.offset().fix().local_minus_utc())
        == Some(0)
}

fn render(case: &corpus::Case) -> Result<String, String> {
    let t = Template::parse(&case.template).map_err(|e| e.to_string())?;
    let t = match case.mode.as_str() {
        "string" => t.with_missing_key(MissingKey::Default),
        "missingkey-error" => t,
        other => panic!("unknown mode {other}"),
    };
    t.render(&case.data).map_err(|e| e.to_string())
}

#[test]
fn every_corpus_case_matches_go() {
    // The oracle ran in UTC and dates render in the local zone: elsewhere, the test runs
    // again in a process of its own whose zone is UTC, so that no case is left out.
    if !local_is_utc() {
        assert!(
            std::env::var_os(IN_UTC).is_none(),
            "TZ=UTC did not make the local zone UTC"
        );
        let status = Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "every_corpus_case_matches_go", "--nocapture"])
            .env("TZ", "UTC")
            .env(IN_UTC, "1")
            .status()
            .expect("run the test in UTC");
        assert!(status.success(), "the corpus differs from Go in UTC");
        return;
    }

    let cases = corpus::cases();
    let mut failures = Vec::new();
    for case in &cases {
        let got = render(case);
        if !corpus::matches(&got, &case.go) {
            failures.push(format!(
                "{}: template {:?}\n    go:   {:?}\n    rust: {got:?}",
                case.name, case.template, case.go
            ));
        }
    }
    eprintln!(
        "template corpus: {} passed, {} failed",
        cases.len() - failures.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} cases differ from Go:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
