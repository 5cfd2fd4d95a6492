//! The template parser and renderer: any text either parses or is refused with an error, and a
//! parsed template renders (or fails) without panicking, against data shaped like a workflow
//! run's (`.input`, `.results`, `.vars`).

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use muster_workflow::template::Template;
use serde_json::{Value, json};

static DATA: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "input": {"name": "web", "count": 3, "ratio": 0.5, "tags": ["a", "b"], "on": true},
        "results": {"list": {"items": [{"id": 1, "name": "x"}, {"id": 2, "name": "y"}]}},
        "vars": {"empty": "", "nothing": null, "nested": {"deep": {"er": [1, [2, [3]]]}}},
    })
});

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(template) = Template::parse(source) {
        let _ = template.render(&DATA);
        let _ = template.render_value(&DATA);
    }
});
