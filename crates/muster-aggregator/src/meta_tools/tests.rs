use std::sync::Arc;

use futures::future::BoxFuture;
use muster_core::tool::{Catalog, Revision, ToolCall, ToolError, ToolProvider};
use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptResult, JsonObject, Prompt, PromptArgument,
    PromptMessage, ReadResourceResult, Resource, ResourceContents, Role, Tool,
};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::*;
use crate::registry::{BackendNaming, LABELS_META_KEY};

/// A provider with a fixed catalog. Its tools answer `<tool> <arguments>`; the tool `fail`
/// answers with `isError`, `boom` fails the call, `structured` returns structured content.
#[derive(Debug)]
struct Fixed {
    name: String,
    catalog: Arc<Catalog>,
    revision: watch::Sender<Revision>,
}

impl Fixed {
    fn provider(name: &str, catalog: Catalog) -> Arc<dyn ToolProvider> {
        Arc::new(Self {
            name: name.to_owned(),
            catalog: Arc::new(catalog),
            revision: watch::channel(Revision::default()).0,
        })
    }
}

impl ToolProvider for Fixed {
    fn name(&self) -> &str {
        &self.name
    }
    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog)
    }
    fn revisions(&self) -> watch::Receiver<Revision> {
        self.revision.subscribe()
    }
    fn service(&self) -> ToolService {
        ToolService::new(tower::service_fn(|call: ToolCall| async move {
            let args = Value::Object(call.arguments_or_empty()?);
            match call.name.as_str() {
                "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("it failed")])),
                "boom" => Err(ToolError::failed("backend exploded")),
                "structured" => Ok(CallToolResult::structured(json!({"answer": 42}))),
                name => Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                    "{name} {args}"
                ))])),
            }
        }))
    }
    fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> BoxFuture<'static, Result<GetPromptResult, ToolError>> {
        let name = name.to_owned();
        Box::pin(async move {
            if name != "greet" {
                return Err(ToolError::UnknownTool { name });
            }
            let who = arguments
                .as_ref()
                .and_then(|a| a.get("who"))
                .and_then(Value::as_str)
                .unwrap_or("nobody")
                .to_owned();
            Ok(GetPromptResult::new(vec![
                PromptMessage::new_text(Role::User, format!("Hello {who}")),
                PromptMessage::new(Role::Assistant, ContentBlock::image("AAAA", "image/png")),
            ]))
        })
    }
    fn read_resource(
        &self,
        uri: &str,
    ) -> BoxFuture<'static, Result<ReadResourceResult, ToolError>> {
        let uri = uri.to_owned();
        Box::pin(async move {
            match uri.as_str() {
                "notes" => Ok(ReadResourceResult::new(vec![
                    ResourceContents::text("line one", "notes"),
                    ResourceContents::blob("AAAAAA==", "notes"),
                ])),
                _ => Err(ToolError::UnknownTool { name: uri }),
            }
        })
    }
}

fn tool(name: &str, description: &str) -> Tool {
    let schema = match json!({"type": "object", "properties": {"value": {"type": "string"}}}) {
        Value::Object(m) => m,
        _ => unreachable!(),
    };
    Tool::new(name.to_owned(), description.to_owned(), schema)
}

fn args(v: Value) -> Option<JsonObject> {
    match v {
        Value::Object(m) => Some(m),
        Value::Null => None,
        _ => panic!("arguments must be an object"),
    }
}

fn meta_tools() -> MetaTools {
    let registry = Registry::new();
    let obs = Catalog {
        tools: vec![
            tool(
                "query_metrics",
                "Query metrics from a Prometheus-style backend.\nFULLDETAILONLY this second line documents every edge case.",
            ),
            tool(
                "long_summary",
                "This is a deliberately long single-line tool description written specifically to verify that the discovery tier truncates the one-line summary at its configured rune cap before the marker TAILMARKER appears.",
            ),
        ],
        ..Catalog::default()
    };
    registry.upsert_backend(
        "discovery-obs",
        BackendNaming::default(),
        Fixed::provider("obs", obs),
    );
    let pages = Catalog {
        tools: ["a", "b", "c", "d", "e", "f"]
            .iter()
            .map(|p| {
                tool(
                    &format!("page_{p}"),
                    &format!("Paged discovery tool {}.", p.to_uppercase()),
                )
            })
            .collect(),
        ..Catalog::default()
    };
    registry.upsert_backend(
        "pageserver",
        BackendNaming::default(),
        Fixed::provider("pages", pages),
    );
    let rank = Catalog {
        tools: vec![
            tool(
                "prometheus_query_range",
                "Query Prometheus metrics over a time range.",
            ),
            tool("metrics_overview", "Show a metrics summary."),
            tool("service_restart", "Restart a running service."),
            tool("grafana_dashboard", "Fetch a Grafana monitoring dashboard."),
        ],
        ..Catalog::default()
    };
    registry.upsert_backend(
        "rank",
        BackendNaming::default(),
        Fixed::provider("rank", rank),
    );
    let misc = Catalog {
        tools: vec![
            tool("echo", "Echo"),
            tool("fail", "Fails"),
            tool("boom", "Explodes"),
            tool("structured", "Structured"),
        ],
        prompts: vec![Prompt::new(
            "greet",
            Some("Greets"),
            Some(vec![
                PromptArgument::new("who")
                    .with_description("Whom")
                    .with_required(true),
            ]),
        )],
        resources: vec![
            Resource::new("notes", "notes").with_mime_type("text/plain"),
            Resource::new("file:///x", "x").with_description("The x file"),
        ],
        ..Catalog::default()
    };
    registry.upsert_backend(
        "misc",
        BackendNaming::default(),
        Fixed::provider("misc", misc),
    );
    let mut workflow = tool("workflow_lct-sample", "A sample workflow.");
    let mut meta = rmcp::model::MetaObject::default();
    meta.insert(LABELS_META_KEY.into(), json!({"category": "obs"}));
    workflow.meta = Some(meta);
    let core = Catalog {
        tools: vec![
            tool("core_service_list", "List services"),
            tool("core_workflow_list", "List workflows"),
            workflow,
        ],
        ..Catalog::default()
    };
    registry.set_core(Fixed::provider("core", core));
    MetaTools::new(registry)
}

async fn call(meta: &MetaTools, name: &str, arguments: Value) -> CallToolResult {
    meta.call(name, args(arguments), CallContext::anonymous())
        .await
        .expect("a meta-tool")
}

fn text(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "one content item");
    &result.content[0].as_text().expect("text content").text
}

fn json_of(result: &CallToolResult) -> Value {
    serde_json::from_str(text(result)).expect("JSON text")
}

fn ok(result: &CallToolResult) -> bool {
    result.is_error != Some(true)
}

#[test]
fn definitions_are_the_eleven_in_fixed_order_with_exact_schemas() {
    let names: Vec<&str> = definitions().iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, META_TOOL_NAMES);
    assert!(is_meta_tool("call_tool") && !is_meta_tool("x_git_status"));

    let schema = |name: &str| {
        let tool = definitions().iter().find(|t| t.name == name).unwrap();
        serde_json::to_string(&*tool.input_schema).unwrap()
    };
    assert_eq!(
        schema("list_tools"),
        r#"{"type":"object","properties":{},"required":[]}"#
    );
    assert_eq!(
        schema("call_tool"),
        r#"{"type":"object","properties":{"name":{"type":"string","description":"Name of the tool to call"},"arguments":{"type":"object","description":"Arguments to pass to the tool (as JSON object)"}},"required":["name"]}"#
    );
    assert_eq!(
        schema("list_core_tools"),
        r#"{"type":"object","properties":{"include_schema":{"type":"boolean","description":"Whether to include full tool specifications with input schemas (default: true)","default":true}},"required":[]}"#
    );
    let filter: Value = serde_json::from_str(&schema("filter_tools")).unwrap();
    let props: Vec<&String> = filter["properties"].as_object().unwrap().keys().collect();
    assert_eq!(
        props,
        [
            "pattern",
            "description_filter",
            "query",
            "labels",
            "case_sensitive",
            "include_schema",
            "limit",
            "offset"
        ]
    );
    assert_eq!(filter["properties"]["limit"]["default"], json!(5));
    assert_eq!(filter["properties"]["offset"]["default"], json!(0));
    assert_eq!(filter["required"], json!([]));
    assert_eq!(
        schema("get_prompt"),
        r#"{"type":"object","properties":{"name":{"type":"string","description":"Name of the prompt to get"},"arguments":{"type":"object","description":"Arguments to pass to the prompt (as JSON object with string values)"}},"required":["name"]}"#
    );
}

#[tokio::test]
async fn unknown_names_are_not_meta_tools() {
    let meta = meta_tools();
    assert!(
        meta.call("x_misc_echo", None, CallContext::anonymous())
            .await
            .is_none()
    );
}

#[tokio::test]
async fn list_tools_lists_names_and_descriptions_in_catalogue_order() {
    let meta = meta_tools();
    let result = call(&meta, "list_tools", Value::Null).await;
    assert!(ok(&result));
    let listed = json_of(&result);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "x_discovery-obs_query_metrics");
    assert_eq!(
        names[names.len() - 3..],
        [
            "core_service_list",
            "core_workflow_list",
            "workflow_lct-sample"
        ]
    );
    assert_eq!(listed["tools"][0].as_object().unwrap().len(), 2);
    assert!(listed.get("servers_requiring_auth").is_none());
    assert!(text(&result).starts_with("{\n  \"tools\": [\n    {\n      \"name\": "));
}

#[tokio::test]
async fn list_tools_answers_encoded_once_and_the_same_as_its_result() {
    let meta = meta_tools();
    let mut result = call(&meta, "list_tools", Value::Null).await;
    result.result_type = None;
    let Some(Answer::Encoded(first)) = meta
        .answer(
            "list_tools",
            Arguments::Object(None),
            CallContext::anonymous(),
        )
        .await
    else {
        panic!("list_tools answered unencoded");
    };
    assert_eq!(&*first, serde_json::to_string(&result).unwrap());
    let Some(Answer::Encoded(second)) = meta
        .answer(
            "list_tools",
            Arguments::Object(None),
            CallContext::anonymous(),
        )
        .await
    else {
        panic!("list_tools answered unencoded");
    };
    // The same snapshot shares one encoding.
    assert!(Arc::ptr_eq(&first, &second));
    let other = meta
        .answer(
            "list_core_tools",
            Arguments::Object(None),
            CallContext::anonymous(),
        )
        .await;
    assert!(matches!(other, Some(Answer::Result(r)) if ok(&r)));
}

#[tokio::test]
async fn describe_tool_gives_the_full_detail() {
    let meta = meta_tools();
    let result = call(
        &meta,
        "describe_tool",
        json!({"name": "x_discovery-obs_query_metrics"}),
    )
    .await;
    assert!(ok(&result));
    let keys: Vec<String> = json_of(&result)
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["description", "inputSchema", "name"]);
    assert!(text(&result).contains("FULLDETAILONLY"));

    let table = [
        (json!({}), "name argument is required"),
        (json!({"name": ""}), "name argument is required"),
        (json!({"name": 3}), "name argument is required"),
        (json!({"name": "nope"}), "Tool not found: nope"),
    ];
    for (input, expected) in table {
        let result = call(&meta, "describe_tool", input).await;
        assert_eq!((result.is_error, text(&result)), (Some(true), expected));
    }
}

#[tokio::test]
async fn filter_tools_discovery_tier() {
    let meta = meta_tools();
    let result = call(
        &meta,
        "filter_tools",
        json!({"pattern": "x_discovery-obs_*"}),
    )
    .await;
    let body = json_of(&result);
    assert_eq!(body["total"], 2);
    assert_eq!(body["filtered_count"], 2);
    assert_eq!(body["truncated"], false);
    assert_eq!(
        body["filters"],
        json!({"pattern": "x_discovery-obs_*", "case_sensitive": false, "include_schema": false,
               "limit": 5, "offset": 0})
    );
    let t = text(&result);
    assert!(t.contains("Query metrics from a Prometheus-style backend."));
    assert!(t.contains("..."));
    for absent in [
        "FULLDETAILONLY",
        "TAILMARKER",
        "inputSchema",
        "\"description\"",
    ] {
        assert!(!t.contains(absent), "{absent}");
    }
    assert_eq!(
        body["tools"][0],
        json!({"name": "x_discovery-obs_query_metrics",
               "summary": "Query metrics from a Prometheus-style backend."})
    );

    let result = call(
        &meta,
        "filter_tools",
        json!({"pattern": "x_discovery-obs_*", "include_schema": true}),
    )
    .await;
    let t = text(&result);
    for present in ["FULLDETAILONLY", "TAILMARKER", "inputSchema"] {
        assert!(t.contains(present), "{present}");
    }
    assert!(!t.contains("\"summary\""));
}

#[tokio::test]
async fn filter_tools_pagination() {
    let meta = meta_tools();
    // (limit, offset, filtered_count, truncated, first name)
    let table = [
        (
            json!({"limit": 2, "offset": 0}),
            2,
            true,
            Some("x_pageserver_page_a"),
        ),
        (
            json!({"limit": 2, "offset": 4}),
            2,
            false,
            Some("x_pageserver_page_e"),
        ),
        (json!({"limit": 50}), 6, false, Some("x_pageserver_page_a")),
        (json!({}), 5, true, Some("x_pageserver_page_a")),
        (json!({"offset": 10}), 0, false, None),
    ];
    for (mut input, count, truncated, first) in table {
        input["pattern"] = json!("x_pageserver_*");
        let body = json_of(&call(&meta, "filter_tools", input.clone()).await);
        assert_eq!(body["total"], 6, "{input}");
        assert_eq!(body["filtered_count"], count, "{input}");
        assert_eq!(body["truncated"], truncated, "{input}");
        assert_eq!(body["tools"][0]["name"].as_str(), first, "{input}");
    }
}

#[tokio::test]
async fn filter_tools_query_ranking() {
    let meta = meta_tools();
    let result = call(
        &meta,
        "filter_tools",
        json!({"query": "prometheus metrics query", "pattern": "x_rank_*"}),
    )
    .await;
    let body = json_of(&result);
    assert_eq!(body["total"], 2);
    assert_eq!(body["tools"][0]["name"], "x_rank_prometheus_query_range");
    assert_eq!(body["tools"][1]["name"], "x_rank_metrics_overview");
    assert!(
        body["tools"][0]["score"].as_f64().unwrap() > body["tools"][1]["score"].as_f64().unwrap()
    );
    assert_eq!(body["filters"]["query"], "prometheus metrics query");
    let t = text(&result);
    assert!(!t.contains("x_rank_service_restart") && !t.contains("x_rank_grafana_dashboard"));
}

#[tokio::test]
async fn filter_tools_filters() {
    let meta = meta_tools();
    // (arguments, expected names)
    let table: [(Value, Vec<&str>); 7] = [
        (
            json!({"description_filter": "PAGED DISCOVERY TOOL F"}),
            vec!["x_pageserver_page_f"],
        ),
        (
            json!({"description_filter": "PAGED DISCOVERY TOOL F", "case_sensitive": true}),
            vec![],
        ),
        (json!({"pattern": "X_MISC_E*"}), vec!["x_misc_echo"]),
        (
            json!({"pattern": "X_MISC_E*", "case_sensitive": true}),
            vec![],
        ),
        (
            json!({"labels": {"category": "obs"}}),
            vec!["workflow_lct-sample"],
        ),
        (json!({"labels": {"category": "other"}}), vec![]),
        (
            json!({"pattern": "x_misc_[bf]*"}),
            vec!["x_misc_fail", "x_misc_boom"],
        ),
    ];
    for (input, expected) in table {
        let body = json_of(&call(&meta, "filter_tools", input.clone()).await);
        let names: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, expected, "{input}");
    }
    let body = json_of(
        &call(
            &meta,
            "filter_tools",
            json!({"labels": {"category": "obs"}}),
        )
        .await,
    );
    assert_eq!(body["tools"][0]["labels"], json!({"category": "obs"}));
    assert_eq!(body["filters"]["labels"], json!({"category": "obs"}));

    let result = call(&meta, "filter_tools", json!({"pattern": "x_["})).await;
    assert_eq!(
        (result.is_error, text(&result)),
        (
            Some(true),
            r#"Invalid pattern "x_[": syntax error in pattern"#
        )
    );
    let result = call(&meta, "filter_tools", json!({"limit": 0})).await;
    assert_eq!(text(&result), "limit must be at least 1");

    let empty = MetaTools::new(Registry::new());
    let result = call(&empty, "filter_tools", json!({})).await;
    assert_eq!(
        (result.is_error, text(&result)),
        (Some(false), "No tools available to filter")
    );
}

#[tokio::test]
async fn list_core_tools_is_full_detail_and_core_only() {
    let meta = meta_tools();
    let result = call(&meta, "list_core_tools", json!({})).await;
    let body = json_of(&result);
    assert_eq!(body["truncated"], false);
    assert_eq!(
        body["filters"],
        json!({"pattern": "core*", "case_sensitive": false, "include_schema": true, "limit": 0, "offset": 0})
    );
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["core_service_list", "core_workflow_list"]);
    assert_eq!(body["tools"][0]["description"], "List services");
    assert!(body["tools"][0]["inputSchema"].is_object());
    assert!(!text(&result).contains("workflow_lct-sample"));

    let result = call(&meta, "list_core_tools", json!({"include_schema": false})).await;
    assert!(!text(&result).contains("inputSchema"));
    assert!(text(&result).contains("core_workflow_list"));
}

#[tokio::test]
async fn call_tool_wraps_every_outcome_in_the_envelope() {
    let meta = meta_tools();
    // (arguments, outer isError, envelope text)
    let table = [
        (
            json!({"name": "x_misc_echo", "arguments": {"a": 1}}),
            false,
            r#"{"isError":false,"content":[{"text":"echo {\"a\":1}","type":"text"}]}"#,
        ),
        (
            json!({"name": "x_misc_echo", "arguments": null}),
            false,
            r#"{"isError":false,"content":[{"text":"echo {}","type":"text"}]}"#,
        ),
        (
            json!({"name": "x_misc_echo"}),
            false,
            r#"{"isError":false,"content":[{"text":"echo {}","type":"text"}]}"#,
        ),
        (
            json!({"name": "x_misc_fail"}),
            true,
            r#"{"isError":true,"content":[{"text":"it failed","type":"text"}]}"#,
        ),
        (
            json!({"name": "x_misc_boom"}),
            true,
            r#"{"isError":true,"content":[{"text":"Tool execution failed: backend exploded","type":"text"}]}"#,
        ),
        (
            json!({"name": "nope"}),
            true,
            r#"{"isError":true,"content":[{"text":"Tool execution failed: tool not found: nope","type":"text"}]}"#,
        ),
        (
            json!({"name": "list_tools"}),
            true,
            r#"{"isError":true,"content":[{"text":"Tool execution failed: tool not found: list_tools","type":"text"}]}"#,
        ),
        (
            json!({"name": "core_service_list", "arguments": {}}),
            false,
            r#"{"isError":false,"content":[{"text":"core_service_list {}","type":"text"}]}"#,
        ),
    ];
    for (input, is_error, envelope) in table {
        let result = call(&meta, "call_tool", input.clone()).await;
        assert_eq!(result.is_error, Some(is_error), "{input}");
        assert_eq!(text(&result), envelope, "{input}");
    }

    let result = call(&meta, "call_tool", json!({"name": "x_misc_structured"})).await;
    assert_eq!(result.structured_content, Some(json!({"answer": 42})));
    assert_eq!(json_of(&result)["structuredContent"], json!({"answer": 42}));

    // Argument errors are plain meta-tool errors, not envelopes.
    let table = [
        (json!({}), "name argument is required"),
        (json!({"name": ""}), "name argument is required"),
        (json!({"name": 1}), "name argument is required"),
        (
            json!({"name": "x_misc_echo", "arguments": [1]}),
            "arguments must be a JSON object",
        ),
        (
            json!({"name": "x_misc_echo", "arguments": "a=1"}),
            "arguments must be a JSON object",
        ),
    ];
    for (input, expected) in table {
        let result = call(&meta, "call_tool", input).await;
        assert_eq!((result.is_error, text(&result)), (Some(true), expected));
    }
}

/// `call_tool`'s arguments read from their JSON text answer as the same arguments parsed
/// into an object, errors included; only a string `name` and an object or `null` as
/// `arguments`, each given once, are read without the object.
#[tokio::test]
async fn call_tool_arguments_read_from_json_answer_as_the_object() {
    let meta = meta_tools();
    // (JSON text of the arguments, read without the object)
    let table = [
        (r#"{"name":"x_misc_echo","arguments":{"a":1}}"#, true),
        (r#"{"arguments":{"a":1},"name":"x_misc_echo"}"#, true),
        (r#" {"name":"x_misc_echo","arguments":null}"#, true),
        (r#"{"name":"x_misc_echo","other":[1,{"b":2}]}"#, true),
        (r#"{"name":"x_misc_fail"}"#, true),
        (r#"{"name":"x_misc_structured"}"#, true),
        (r#"{"name":"nope"}"#, true),
        (r#"{}"#, true),
        (r#"{"name":""}"#, true),
        (r#"{"name":null}"#, true),
        (r#"{"name":1}"#, false),
        (r#"{"name":"x_misc_echo","arguments":[1]}"#, false),
        (r#"{"name":"x_misc_echo","arguments":"a=1"}"#, false),
        (r#"{"name":"x_misc_echo","name":"x_misc_fail"}"#, false),
    ];
    for (json, read) in table {
        let arguments = Arguments::read("call_tool", Some(json)).expect("an object");
        assert_eq!(matches!(arguments, Arguments::CallTool(_)), read, "{json}");
        let answer = match meta
            .answer("call_tool", arguments, CallContext::anonymous())
            .await
        {
            Some(Answer::Envelope(inner)) => enveloped(&inner),
            Some(Answer::Result(error)) => error,
            other => panic!("{other:?} for {json}"),
        };
        let object: Value = serde_json::from_str(json).expect("JSON");
        let expected = call(&meta, "call_tool", object).await;
        assert_eq!(answer, expected, "{json}");
    }
    // Not an object: the lean path leaves it to rmcp.
    for json in ["[\"x_misc_echo\", {}]", "1", "\"x\""] {
        assert!(Arguments::read("call_tool", Some(json)).is_none(), "{json}");
        assert!(
            Arguments::read("list_tools", Some(json)).is_none(),
            "{json}"
        );
    }
    // Other meta-tools' arguments stay an object.
    let read = Arguments::read("filter_tools", Some(r#"{"pattern":"x_*"}"#));
    assert!(matches!(read, Some(Arguments::Object(Some(_)))));
    assert!(matches!(
        Arguments::read("call_tool", None),
        Some(Arguments::Object(None))
    ));
    // Read arguments handed to another meta-tool are the object they were read from.
    let read = Arguments::read(
        "call_tool",
        Some(r#"{"name":"x_misc_echo","arguments":{}}"#),
    );
    let Some(Answer::Result(described)) = meta
        .answer(
            "describe_tool",
            read.expect("read"),
            CallContext::anonymous(),
        )
        .await
    else {
        panic!("a result");
    };
    let expected = call(&meta, "describe_tool", json!({"name": "x_misc_echo"})).await;
    assert_eq!(described, expected);
}

#[tokio::test]
async fn resources() {
    let meta = meta_tools();
    let listed = json_of(&call(&meta, "list_resources", Value::Null).await);
    assert_eq!(
        listed,
        json!([
            {"uri": "x_misc_notes", "name": "notes", "description": "notes", "mimeType": "text/plain"},
            {"uri": "file:///x", "name": "x", "description": "The x file"}
        ])
    );
    let described = call(&meta, "describe_resource", json!({"uri": "file:///x"})).await;
    assert_eq!(
        text(&described),
        "{\n  \"description\": \"The x file\",\n  \"mimeType\": \"\",\n  \"name\": \"x\",\n  \"uri\": \"file:///x\"\n}"
    );
    let result = call(&meta, "describe_resource", json!({"uri": "nope"})).await;
    assert_eq!(text(&result), "Resource not found: nope");
    let result = call(&meta, "get_resource", json!({"uri": "x_misc_notes"})).await;
    assert_eq!(text(&result), "line one\n[Binary data: 8 bytes]");
    // A failed read and an unknown URI are errors naming the URI.
    let result = call(&meta, "get_resource", json!({"uri": "file:///x"})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).starts_with("Failed to read resource file:///x: "),
        "{}",
        text(&result)
    );
    let result = call(&meta, "get_resource", json!({"uri": "nope://gone"})).await;
    assert_eq!(
        (result.is_error, text(&result)),
        (Some(true), "Resource not found: nope://gone")
    );
    let result = call(&meta, "get_resource", json!({})).await;
    assert_eq!(text(&result), "uri argument is required");

    let empty = MetaTools::new(Registry::new());
    assert_eq!(
        text(&call(&empty, "list_resources", Value::Null).await),
        "No resources available"
    );
}

#[tokio::test]
async fn prompts() {
    let meta = meta_tools();
    let listed = json_of(&call(&meta, "list_prompts", Value::Null).await);
    assert_eq!(
        listed,
        json!([{"name": "x_misc_greet", "description": "Greets"}])
    );
    let described = call(&meta, "describe_prompt", json!({"name": "x_misc_greet"})).await;
    assert_eq!(
        json_of(&described),
        json!({"arguments": [{"description": "Whom", "name": "who", "required": true}],
               "description": "Greets", "name": "x_misc_greet"})
    );
    let result = call(&meta, "describe_prompt", json!({"name": "nope"})).await;
    assert_eq!(text(&result), "Prompt not found: nope");
    let got = call(
        &meta,
        "get_prompt",
        json!({"name": "x_misc_greet", "arguments": {"who": "Ada"}}),
    )
    .await;
    assert_eq!(
        json_of(&got),
        json!([
            {"role": "user", "content": {"text": "Hello Ada", "type": "text"}},
            {"role": "assistant", "content": {"dataSize": 4, "mimeType": "image/png", "type": "image"}}
        ])
    );
    let result = call(
        &meta,
        "get_prompt",
        json!({"name": "x_misc_greet", "arguments": 1}),
    )
    .await;
    assert_eq!(text(&result), "arguments must be a JSON object");
    let result = call(&meta, "get_prompt", json!({"name": "nope"})).await;
    assert_eq!(
        (result.is_error, text(&result)),
        (Some(true), "Prompt not found: nope")
    );

    let empty = MetaTools::new(Registry::new());
    assert_eq!(
        text(&call(&empty, "list_prompts", Value::Null).await),
        "No prompts available"
    );
}
