//! The jq step: any program text compiles or is refused with an error; fixed programs of the
//! kinds workflows use run over any JSON result without a panic.
//!
//! Fuzzed programs are compiled but not run: a jq program can loop forever by design
//! (`repeat(.)`), which the engine's time budget bounds, not the compiler.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use muster_workflow::query::Query;
use serde_json::{Value, json};

static PROGRAMS: LazyLock<Vec<Query>> = LazyLock::new(|| {
    [
        ".",
        ".items | length",
        "[.[]?] | map(tostring) | join(\",\")",
        "paths | tostring",
        "tojson | fromjson",
        "[.. | numbers] | add",
        "to_entries? // []",
        "{input: $input, vars: $vars, data: .}",
        "[splits(\"a\")?]",
        "walk(if type == \"string\" then ascii_downcase else . end)",
        "(.a // .b // .c) | @base64? // .",
        "[limit(5; .[]?)]",
        "getpath([\"a\", 0, \"b\"])?",
    ]
    .iter()
    .map(|source| Query::compile(source).expect("a fixed program compiles"))
    .collect()
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Query::compile(text);
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let input = json!({"name": "fuzz"});
        let vars = json!({"n": 1});
        for program in PROGRAMS.iter() {
            let _ = program.run(&value, &input, &vars);
        }
    }
});
