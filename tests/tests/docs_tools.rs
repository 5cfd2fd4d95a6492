//! `docs/reference/tools.md` against a running `muster serve`: the meta-tools in their order,
//! every core tool, the workflow tools, and every argument of each tool's input schema.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use muster_tests::markdown::{code_spans, read_doc, rows, section};
use muster_tests::{META_TOOLS, MusterConfig};
use serde_json::{Value, json};

const PAGE: &str = "docs/reference/tools.md";

const WORKFLOW: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: hello
spec:
  description: Say hello
  args:
    who:
      type: string
      required: true
  steps:
    - id: say
      tool: x_nowhere_echo
      args:
        message: 'hello {{ .input.who }}'
";

/// The documented rows of a section's tables: tool name -> arguments cell.
fn documented(page: &str, heading: &str) -> Vec<(String, String)> {
    let text = section(page, heading).unwrap_or_else(|| panic!("{PAGE}: no `{heading}` section"));
    rows(text)
        .into_iter()
        .filter_map(|r| {
            let name = code_spans(r.first()?).into_iter().next()?;
            Some((name, r.get(1).cloned().unwrap_or_default()))
        })
        .collect()
}

/// `(name, inputSchema)` of every entry of a `{"tools": [...]}` answer, in order.
fn named_schemas(answer: &Value) -> Vec<(String, Value)> {
    answer["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["inputSchema"].clone(),
            )
        })
        .collect()
}

fn properties(schema: &Value) -> BTreeSet<String> {
    schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Every schema property is named in the arguments cell (or in the cell of a tool it names,
/// as in "the same as `core_workflow_create`"); a tool without arguments says none.
fn check_arguments(
    tool: &str,
    cell: &str,
    schema: &Value,
    cells: &BTreeMap<String, String>,
    problems: &mut Vec<String>,
) {
    let props = properties(schema);
    let mut named: BTreeSet<String> = code_spans(cell).into_iter().collect();
    for other in named.clone().iter().filter_map(|n| cells.get(n)) {
        named.extend(code_spans(other));
    }
    for p in props.iter().filter(|p| !named.contains(*p)) {
        problems.push(format!(
            "{PAGE}: argument `{p}` of `{tool}` is not documented (its arguments cell: {cell})"
        ));
    }
    if props.is_empty() && cell != "none" {
        problems.push(format!(
            "{PAGE}: `{tool}` takes no arguments; its arguments cell should say none"
        ));
    }
}

#[test]
fn tool_reference_matches_the_registered_tools() {
    let page = read_doc(PAGE).unwrap();
    let dir = MusterConfig::new()
        .workflow("hello", WORKFLOW)
        .expect_tool("workflow_hello")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    let mut problems = Vec::new();

    // Meta-tools: the names of tools/list, in order, with their schemas.
    let listed = client.request("tools/list", json!({})).unwrap();
    let meta = named_schemas(&listed);
    let meta_names: Vec<&str> = meta.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(meta_names, META_TOOLS, "tools/list changed");
    let doc_meta = documented(&page, "Meta-tools");
    let doc_meta_names: Vec<&str> = doc_meta.iter().map(|(n, _)| n.as_str()).collect();
    if doc_meta_names != meta_names {
        problems.push(format!(
            "{PAGE} § Meta-tools lists {doc_meta_names:?}; tools/list returns {meta_names:?} \
             (same names, same order)"
        ));
    }
    let doc_meta: BTreeMap<String, String> = doc_meta.into_iter().collect();
    for (name, schema) in &meta {
        if let Some(cell) = doc_meta.get(name) {
            check_arguments(name, cell, schema, &doc_meta, &mut problems);
        }
    }

    // Core tools: what list_core_tools reports, with schemas.
    let core = client.call_tool("list_core_tools", json!({})).unwrap();
    let core: Value = serde_json::from_str(core["content"][0]["text"].as_str().unwrap()).unwrap();
    let core: BTreeMap<String, Value> = named_schemas(&core).into_iter().collect();
    assert!(core.contains_key("core_service_list"), "{core:?}");
    // Every non-backend tool list_tools reports is a core tool or a workflow tool.
    let all = client.call_tool("list_tools", json!({})).unwrap();
    let all: Value = serde_json::from_str(all["content"][0]["text"].as_str().unwrap()).unwrap();
    for name in all["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
    {
        if !core.contains_key(name) && name != "workflow_hello" {
            problems.push(format!(
                "list_tools reports `{name}`, which is neither a core tool nor the workflow \
                 tool of the test's workflow: document it in {PAGE}"
            ));
        }
    }
    let doc_core: BTreeMap<String, String> = documented(&page, "Core tools").into_iter().collect();
    for (name, schema) in &core {
        match doc_core.get(name) {
            None => problems.push(format!(
                "core tool `{name}` is registered but not in {PAGE} § Core tools: add a row with \
                 its arguments, result and errors"
            )),
            Some(cell) => check_arguments(name, cell, schema, &doc_core, &mut problems),
        }
    }
    for name in doc_core.keys().filter(|n| !core.contains_key(*n)) {
        problems.push(format!(
            "{PAGE} documents core tool `{name}`, which muster does not register: remove it or \
             move it under Not there yet"
        ));
    }

    // Workflow tools: one per workflow, arguments from spec.args plus `_debug`.
    let doc_workflow = documented(&page, "Workflow tools");
    assert_eq!(
        doc_workflow
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        ["workflow_<name>"],
        "{PAGE} § Workflow tools"
    );
    let described = client
        .call_tool("describe_tool", json!({"name": "workflow_hello"}))
        .unwrap();
    let described: Value =
        serde_json::from_str(described["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        properties(&described["inputSchema"]),
        BTreeSet::from(["who".to_owned()]),
        "workflow tool schema: {described}"
    );
    assert!(doc_workflow[0].1.contains("`spec.args`") && doc_workflow[0].1.contains("`_debug`"));

    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}
