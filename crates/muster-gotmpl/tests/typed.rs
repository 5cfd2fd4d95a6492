//! Typed rendering (`render_value`, `render_tree`) and the error contract of templates.

use muster_gotmpl::{MissingKey, Template, TemplateError, TemplateTree, render_tree};
use serde_json::{Value, json};

fn data() -> Value {
    json!({
        "input": {
            "env": "production", "name": "web", "padded": "08", "version": "1.20",
            "count": 3, "ratio": 1.5, "big": 12345678901234567890u64, "nothing": null,
            "tags": ["a", "b"], "secret": "hunter2", "creds": {"password": "hunter2"}
        },
        "results": {
            "pods": {"items": [{"metadata": {"name": "pod-a"}}, {"metadata": {"name": "pod-b"}}]},
            "events": {"items": [1, 2, 3]},
            "my-step": {"items": [{"name": "dashed"}]}
        },
        "vars": {"item": {"name": "x"}}
    })
}

fn value(src: &str) -> Value {
    Template::parse(src)
        .expect("parses")
        .render_value(&data())
        .expect("renders")
}

#[test]
fn bare_reference_paths_keep_their_json_type() {
    let d = data();
    assert_eq!(
        value("{{ .results.pods.items }}"),
        d["results"]["pods"]["items"]
    );
    assert_eq!(value("{{ .results }}"), d["results"]);
    assert_eq!(value("{{ .input.count }}"), json!(3));
    assert_eq!(value("{{ .input.ratio }}"), json!(1.5));
    assert_eq!(value("{{ .input.big }}"), json!(12345678901234567890u64));
    assert_eq!(value("{{ .input.nothing }}"), Value::Null);
    assert_eq!(value("{{.vars.item.name}}"), json!("x"));
    assert_eq!(value("  {{ .input.tags }}  "), json!(["a", "b"]));
}

#[test]
fn reference_paths_accept_dashes_and_indices() {
    assert_eq!(
        value("{{ .results.my-step.items[0].name }}"),
        json!("dashed")
    );
    assert_eq!(
        value("{{ .results.pods.items[1].metadata.name }}"),
        json!("pod-b")
    );
    // Go cannot parse such a path: text rendering reports the parse error.
    let t = Template::parse("{{ .results.my-step.items }}").expect("reference path");
    assert!(matches!(
        t.render(&data()),
        Err(TemplateError::Parse { .. })
    ));
    // A navigation error falls through to the engine.
    let t = Template::parse("{{ .results.pods.items[7] }}").expect("reference path");
    assert!(t.render_value(&data()).is_err());
}

#[test]
fn single_actions_keep_the_type_of_their_value() {
    assert_eq!(value("{{ len .results.events.items }}"), json!(3));
    assert_eq!(value("{{ eq .input.env \"production\" }}"), json!(true));
    assert_eq!(value("{{ add 1 2 }}"), json!(3));
    assert_eq!(value("{{ addf 0.1 0.2 }}"), json!(0.3));
    assert_eq!(
        value("{{ index .results.pods.items 0 }}"),
        json!({"metadata": {"name": "pod-a"}})
    );
    assert_eq!(
        value("{{ list 1 \"a\" .input.nothing }}"),
        json!([1, "a", null])
    );
    assert_eq!(
        value("{{ dict \"a\" 1 \"b\" (list true) }}"),
        json!({"a": 1, "b": [true]})
    );
    assert_eq!(value("{{- .input.name -}}"), json!("web"));
    assert_eq!(value("{{ .input.tags | len }}"), json!(2));
    assert_eq!(
        value("{{ toDate \"2006-01-02\" \"2024-01-15\" }}"),
        json!("2024-01-15T00:00:00Z")
    );
    assert_eq!(value("{{ index .input \"missing\" }}"), Value::Null);
}

#[test]
fn computed_strings_keep_their_exact_form() {
    assert_eq!(value("{{ .input.padded }}"), json!("08"));
    assert_eq!(value("{{ printf \"%02d\" 8 }}"), json!("08"));
    assert_eq!(value("{{ .input.version }}"), json!("1.20"));
    assert_eq!(value("{{ printf \"%s\" .input.version }}"), json!("1.20"));
    assert_eq!(value("{{ printf \"%d\" 42 }}"), json!("42"));
    assert_eq!(value("{{ toString .input.count }}"), json!("3"));
    assert_eq!(value("{{ toJson .input.tags }}"), json!("[\"a\",\"b\"]"));
    assert_eq!(value("{{ \"true\" }}"), json!("true"));
}

#[test]
fn non_finite_numbers_stay_strings() {
    assert_eq!(value("{{ float64 \"NaN\" }}"), json!("NaN"));
    assert_eq!(value("{{ float64 \"Inf\" }}"), json!("+Inf"));
    assert_eq!(value("{{ float64 \"-Inf\" }}"), json!("-Inf"));
    assert_eq!(value("{{ list (float64 \"NaN\") 1 }}"), json!(["NaN", 1]));
}

#[test]
fn single_action_detection() {
    let single = |src: &str| Template::parse(src).expect("parses").is_single_action();
    assert!(single("{{ .results.pods.items }}"));
    assert!(single(" {{- len .input.tags -}} "));
    assert!(single("{{ .results.my-step.items[0] }}"));
    assert!(!single("v{{ .input.version }}"));
    assert!(!single("{{ $x := 1 }}"));
    assert!(!single("{{ .a }}{{ .b }}"));
    assert!(!single("plain"));
}

#[test]
fn text_around_actions_renders_a_string() {
    assert_eq!(value("v{{ .input.version }}"), json!("v1.20"));
    assert_eq!(
        value("{{ .input.name }}{{ .input.env }}"),
        json!("webproduction")
    );
    assert_eq!(
        value("{{ .results.events.items }} items"),
        json!("[1 2 3] items")
    );
    assert_eq!(value("{{ $x := 1 }}"), json!(""));
    assert_eq!(value("{{ if true }}true{{ end }}"), json!("true"));
}

#[test]
fn strings_without_actions_are_returned_as_they_are() {
    assert_eq!(value("plain }} text"), json!("plain }} text"));
    assert_eq!(value(""), json!(""));
    assert!(Template::parse("no actions").expect("parses").is_literal());
}

#[test]
fn render_tree_renders_every_leaf() {
    let tree = json!({
        "cluster": "{{ .input.name }}",
        "notRunning": "{{ .results.pods.items }}",
        "backoffCount": "{{ len .results.events.items }}",
        "nested": {"list": ["{{ .input.count }}", "literal", 5, null, true]},
        "label": "v{{ .input.version }}",
        "padded": "{{ .input.padded }}"
    });
    let out = render_tree(&tree, &data()).expect("renders");
    assert_eq!(
        out,
        json!({
            "cluster": "web",
            "notRunning": data()["results"]["pods"]["items"],
            "backoffCount": 3,
            "nested": {"list": [3, "literal", 5, null, true]},
            "label": "v1.20",
            "padded": "08"
        })
    );
    let compiled = TemplateTree::parse(&tree).expect("parses");
    assert_eq!(compiled.templates().len(), 6);
    assert_eq!(compiled.render(&data()).expect("renders"), out);
}

#[test]
fn render_tree_errors_name_the_leaf() {
    let err = render_tree(&json!({"a": {"b": ["x", "{{ .input.missing }}"]}}), &data())
        .expect_err("missing key");
    assert_eq!(err.name(), "a.b[1]");
    assert!(err.to_string().contains("a.b[1]"), "{err}");
    let err = TemplateTree::parse(&json!({"k": "{{ nosuch }}"})).expect_err("unknown function");
    assert!(matches!(err, TemplateError::Parse { .. }));
    assert_eq!(err.name(), "k");
}

#[test]
fn missing_keys_are_errors_naming_the_key() {
    for src in [
        "{{ .input.missing }}",
        "{{ .input.missing | default \"x\" }}",
        "{{ default \"x\" .input.missing }}",
        "{{ with .input }}{{ .missing }}{{ end }}",
    ] {
        let t = Template::parse(src).expect("parses");
        let err = t.render(&data()).expect_err(src);
        assert!(err.to_string().contains("\"missing\""), "{src}: {err}");
        assert!(t.render_value(&data()).is_err(), "{src}");
    }
    let t = Template::parse("[{{ .input.missing }}]").expect("parses");
    assert_eq!(
        t.with_missing_key(MissingKey::Default)
            .render(&data())
            .expect("renders"),
        "[<no value>]"
    );
}

#[test]
fn errors_never_contain_data_values() {
    for src in [
        "{{ .input.creds.nope }}",
        "{{ .input.secret.x }}",
        "{{ range .input.secret }}{{ end }}",
        "{{ range .input.creds.password }}{{ end }}",
        "{{ upper .input.creds }}",
        "{{ len .input.count }}",
        "{{ index .input.creds 3 }}",
        "{{ eq .input.creds .input.creds }}",
        "{{ lt .input.secret 1 }}",
        "{{ .input.creds.password.deeper }}",
        "{{ fromJson .input.secret | first }}",
    ] {
        let err = Template::parse(src)
            .expect("parses")
            .render(&data())
            .expect_err(src);
        let text = err.to_string();
        assert!(!text.contains("hunter2"), "{src}: {text}");
        assert!(text.contains("template"), "{src}: {text}");
    }
}

#[test]
fn error_display_names_template_and_problem() {
    let err = Template::parse_named("args.namespace", "{{ .input.nope }}")
        .expect("parses")
        .render(&data())
        .expect_err("missing");
    let text = err.to_string();
    assert!(
        text.starts_with("template \"args.namespace\" execution failed:"),
        "{text}"
    );
    assert!(text.contains("map has no entry for key \"nope\""), "{text}");
    let err = Template::parse_named("cond", "{{ if }}").expect_err("bad syntax");
    assert!(
        err.to_string().starts_with("invalid template \"cond\":"),
        "{err}"
    );
    assert_eq!(err.name(), "cond");
}

#[test]
fn newer_go_syntax_is_supported() {
    // `else with` (Go 1.23) and ranging over an integer (Go 1.22).
    let t =
        Template::parse("{{ with .input.missing2 }}a{{ else with .input.name }}{{ . }}{{ end }}");
    let t = t.expect("parses").with_missing_key(MissingKey::Default);
    assert_eq!(t.render(&data()).expect("renders"), "web");
    let t = Template::parse("{{ range 3 }}{{ . }}{{ end }}|{{ range $i := 2 }}{{ $i }}{{ end }}");
    assert_eq!(
        t.expect("parses").render(&data()).expect("renders"),
        "012|01"
    );
    let t = Template::parse("{{ range .input.count }}x{{ end }}").expect("parses");
    assert!(
        t.render(&data()).is_err(),
        "JSON numbers are float64: not rangeable"
    );
}

#[test]
fn templates_are_send_sync_and_reusable() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Template>();
    assert_send_sync::<TemplateTree>();
    assert_send_sync::<TemplateError>();
    let t = Template::parse("{{ .input.name }}-{{ len .input.tags }}").expect("parses");
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || t.render(&data()).expect("renders"))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().expect("thread"), "web-2");
    }
}

/// Random templates built from template fragments never make the engine panic.
#[test]
fn random_templates_do_not_panic() {
    const PIECES: &[&str] = &[
        "{{",
        "}}",
        "{{-",
        " -}}",
        " ",
        ".",
        ".input",
        ".tags",
        ".name",
        ".results",
        "$",
        "$x",
        ":=",
        "=",
        "|",
        "(",
        ")",
        "\"",
        "`",
        "'a'",
        "\"s\"",
        "1",
        "-2",
        "1.5e3",
        "0x1f",
        "nil",
        "true",
        "if",
        "else",
        "end",
        "range",
        "with",
        "define",
        "template",
        "block",
        "break",
        "continue",
        "len",
        "index",
        "printf",
        "\"%d %s %v %5.2f %x %q\"",
        "upper",
        "toJson",
        "default",
        "dict",
        "list",
        "add",
        "eq",
        "lt",
        "and",
        "or",
        "not",
        "slice",
        "first",
        "date",
        "toDate",
        "\"2006-01-02\"",
        "é",
        "/*",
        "*/",
        "\n",
        "}",
        "{",
        ",",
        "[0]",
        "split",
        "regexFind",
        "\"(\"",
        "b64dec",
        "\"=\"",
        "merge",
        "mul",
        "round",
        "seq",
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let d = data();
    let mut parsed = 0;
    for _ in 0..20_000 {
        let n = (next() % 12) as usize + 1;
        let words: Vec<&str> = (0..n)
            .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
            .collect();
        let src = if n.is_multiple_of(2) {
            words.concat()
        } else {
            // One action of space-separated words: mostly valid syntax.
            format!("{{{{ {} }}}}", words.join(" "))
        };
        if let Ok(t) = Template::parse(&src) {
            parsed += 1;
            let _ = t.render(&d);
            let _ = t.render_value(&d);
            let _ = t.with_missing_key(MissingKey::Default).render(&d);
        }
    }
    assert!(parsed > 1000, "only {parsed} random templates parsed");
}

#[test]
fn runaway_recursion_is_an_error_not_a_crash() {
    let t =
        Template::parse("{{ define \"r\" }}x{{ template \"r\" . }}{{ end }}{{ template \"r\" }}");
    let err = t.expect("parses").render(&data()).expect_err("too deep");
    assert!(err.to_string().contains("maximum template depth"), "{err}");
    let deep = format!("{{{{ {}1{} }}}}", "(".repeat(90), ")".repeat(90));
    assert_eq!(
        Template::parse(&deep)
            .expect("parses")
            .render(&data())
            .expect("renders"),
        "1"
    );
    let deep_ifs = format!("{}x{}", "{{ if true }}".repeat(90), "{{ end }}".repeat(90));
    assert_eq!(
        Template::parse(&deep_ifs)
            .expect("parses")
            .render(&data())
            .expect("renders"),
        "x"
    );
    for n in [101, 5000] {
        let too_deep = format!("{{{{ {}1{} }}}}", "(".repeat(n), ")".repeat(n));
        assert!(Template::parse(&too_deep).is_err());
        let too_deep = format!("{}x{}", "{{ if true }}".repeat(n), "{{ end }}".repeat(n));
        assert!(Template::parse(&too_deep).is_err());
    }
}

#[test]
fn nesting_across_template_calls_is_bounded() {
    let ifs = 90;
    let src = format!(
        "{{{{ define \"r\" }}}}{}{{{{ template \"r\" . }}}}{}{{{{ end }}}}{{{{ template \"r\" 1 }}}}",
        "{{ if true }}".repeat(ifs),
        "{{ end }}".repeat(ifs)
    );
    let err = Template::parse(&src)
        .expect("parses")
        .render(&data())
        .expect_err("too deep");
    assert!(err.to_string().contains("maximum"), "{err}");
}

#[test]
fn clock_and_random_functions() {
    use chrono::Datelike;
    let render = |src: &str| {
        Template::parse(src)
            .expect("parses")
            .render(&data())
            .expect("renders")
    };
    let year = chrono::Local::now().year().to_string();
    assert_eq!(render("{{ now | date \"2006\" }}"), year);
    assert_eq!(
        render("{{ typeOf now }} {{ now.Year | typeOf }}"),
        "time.Time int"
    );
    assert!(render("{{ now }}").starts_with(&year));
    let uuid = render("{{ uuidv4 }}");
    assert_eq!(uuid.len(), 36);
    assert_eq!(uuid.as_bytes()[14], b'4');
    assert_ne!(uuid, render("{{ uuidv4 }}"));
    assert_eq!(render("{{ randAlphaNum 12 | len }}"), "12");
    assert!(
        render("{{ randNumeric 8 }}")
            .bytes()
            .all(|b| b.is_ascii_digit())
    );
    let n: i64 = render("{{ randInt 5 10 }}").parse().expect("number");
    assert!((5..10).contains(&n));
    assert_eq!(render("{{ shuffle \"aab\" | len }}"), "3");
    assert_eq!(render("{{ ago now }}"), "0s");
}

#[test]
fn a_print_that_would_outgrow_its_limit_fails_at_once() {
    // Width 7 000 015 on every value of a map: Go writes about 50 MB; muster refuses.
    let data = serde_json::json!({"a": 1, "b": [1, 2, 3], "c": {"d": "e", "f": 0.5}, "g": true});
    let t = Template::parse(r#"{{ printf "%07000015v" . }}"#).expect("parses");
    let error = t.render(&data).expect_err("too large");
    assert!(
        error.message().contains(&format!(
            "printf: the result exceeds the limit of {} bytes",
            muster_gotmpl::MAX_PRINT_BYTES
        )),
        "{error}"
    );
    // Under the limit the same width prints as Go prints it.
    let small = Template::parse(r#"{{ printf "%05v" .a }}"#).expect("parses");
    assert_eq!(small.render(&data).expect("renders"), "00001");
}

#[test]
fn an_output_past_its_limit_fails_the_render() {
    let items: Vec<String> = (0..80).map(|i| i.to_string()).collect();
    let data = serde_json::json!({ "items": items });
    let t = Template::parse(r#"{{ range .items }}{{ printf "%1000000s" . }}{{ end }}"#)
        .expect("parses");
    let error = t.render(&data).expect_err("too large");
    assert!(
        error.message().contains(&format!(
            "the output exceeds the limit of {} bytes",
            muster_gotmpl::MAX_OUTPUT_BYTES
        )),
        "{error}"
    );
    let few = serde_json::json!({ "items": ["1", "2"] });
    assert_eq!(t.render(&few).expect("renders").len(), 2_000_000);
}
