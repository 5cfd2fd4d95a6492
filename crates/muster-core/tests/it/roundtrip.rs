//! Property tests: valid specs and execution records survive a JSON and a YAML round trip.
//!
//! The generators build valid values only (checked by each property before the round trip),
//! covering every transport and optional field of an MCPServer, every step kind of a Workflow
//! (tool steps with conditions and pagination, loops with a nested level, parallel groups,
//! onFailure) and execution records with step records.

use chrono::{DateTime, Utc};
use muster_core::resource::execution::{
    ExecutionRecord, ExecutionStatus, StepRecord, StepStatus, WORKFLOW_LABEL,
};
use muster_core::resource::mcp_server::{
    AuthType, AuthorizationServer, ClientCredentialsSecretRef, Family, GrantScope, HeaderFrom,
    McpServerAuth, McpServerSpec, RemoteTransport, SecretKeySource, StdioTransport, TokenExchange,
    Transport,
};
use muster_core::resource::workflow::{
    ArgDefinition, Expectation, ForEach, Paginate, Step, StepCondition, WorkflowSpec,
};
use muster_core::{Object, ValidationContext, WorkflowExecution};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Printable ASCII, YAML's special characters included.
fn ascii_text() -> impl Strategy<Value = String> {
    "[ -~]{0,24}"
}

/// Strings a YAML writer must quote or escape to read them back as the same string.
const TRICKY: [&str; 22] = [
    "",
    "null",
    "~",
    "true",
    "False",
    "yes",
    "on",
    "1",
    "-0",
    "0x1f",
    "1e3",
    ".inf",
    "- a",
    "a: b",
    "#c",
    "'q'",
    "\"",
    " lead",
    "trail ",
    "multi\nline",
    "tab\tx",
    "{{ .input.x }}",
];

/// Text: printable ASCII, any script, or a string YAML is picky about.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => ascii_text(),
        1 => "\\PC{0,12}",
        1 => proptest::sample::select(&TRICKY[..]).prop_map(str::to_owned),
    ]
}

fn ident() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_-]{0,10}"
}

fn https_url() -> impl Strategy<Value = String> {
    "https://[a-z]{1,10}\\.example\\.com(/[a-z0-9]{1,8}){0,2}"
}

fn timestamp() -> impl Strategy<Value = DateTime<Utc>> {
    (0i64..4_102_444_800, 0u32..1_000_000_000).prop_map(|(secs, nanos)| {
        DateTime::from_timestamp(secs, nanos).expect("timestamp in range")
    })
}

/// A number that prints and parses back exactly: a multiple of a quarter.
fn quarter() -> impl Strategy<Value = Value> {
    (-4000i32..4000).prop_map(|n| Value::from(f64::from(n) / 4.0))
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        quarter(),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 16, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map("[a-zA-Z_.]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A value that is not `null` (an optional value that is `null` reads back as absent).
fn present_value() -> impl Strategy<Value = Value> {
    json_value().prop_filter("not null", |v| !v.is_null())
}

fn json_map() -> impl Strategy<Value = Map<String, Value>> {
    btree_map("[a-zA-Z_][a-zA-Z0-9_]{0,8}", json_value(), 0..4)
        .prop_map(|m| m.into_iter().collect())
}

/// Serializes to JSON and to YAML, parses both back, and checks both equal `value`.
fn assert_round_trips<T>(value: &T) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_string(value)?;
    let from_json: T = serde_json::from_str(&json)?;
    prop_assert_eq!(&from_json, value, "JSON: {}", json);
    let yaml = serde_norway::to_string(value)?;
    let from_yaml: T = serde_norway::from_str(&yaml)?;
    prop_assert_eq!(&from_yaml, value, "YAML:\n{}", yaml);
    Ok(())
}

// --- MCPServer --------------------------------------------------------------------------------

fn secret_ref() -> impl Strategy<Value = ClientCredentialsSecretRef> {
    (
        ident(),
        option::of(ident()),
        option::of(ident()),
        option::of(ident()),
    )
        .prop_map(|(name, namespace, client_id_key, client_secret_key)| {
            ClientCredentialsSecretRef {
                name,
                namespace,
                client_id_key,
                client_secret_key,
            }
        })
}

fn audiences() -> impl Strategy<Value = Vec<String>> {
    vec("[a-z][a-z0-9:/_-]{0,12}", 0..3)
}

fn forward_token_auth() -> impl Strategy<Value = McpServerAuth> {
    (audiences(), vec(ident(), 0..2)).prop_map(|(required_audiences, provider_apps)| {
        McpServerAuth {
            type_: Some(AuthType::Oauth),
            forward_token: true,
            provider_apps,
            required_audiences,
            ..McpServerAuth::default()
        }
    })
}

fn token_exchange_auth() -> impl Strategy<Value = McpServerAuth> {
    (
        any::<bool>(),
        https_url(),
        ident(),
        option::of(https_url()),
        option::of(text()),
        option::of(secret_ref()),
        audiences(),
    )
        .prop_map(
            |(enabled, endpoint, connector, expected, scopes, secret, audiences)| McpServerAuth {
                type_: Some(AuthType::Oauth),
                required_audiences: audiences,
                token_exchange: Some(TokenExchange {
                    enabled,
                    dex_token_endpoint: Some(endpoint),
                    expected_issuer: expected,
                    connector_id: Some(connector),
                    scopes,
                    client_credentials_secret_ref: secret,
                }),
                ..McpServerAuth::default()
            },
        )
}

fn authorization_server_auth() -> impl Strategy<Value = McpServerAuth> {
    let grant_scope = option::of(prop_oneof![
        Just(GrantScope::Session),
        Just(GrantScope::Subject)
    ]);
    (
        https_url(),
        option::of((https_url(), https_url(), option::of(https_url()))),
        option::of(https_url()),
        option::of(secret_ref()),
        grant_scope,
        option::of(text()),
        any::<bool>(),
        audiences(),
    )
        .prop_map(
            |(issuer, endpoints, revocation, secret, grant_scope, scopes, identity, audiences)| {
                let (authorization_endpoint, token_endpoint, expected_issuer) = match endpoints {
                    Some((a, t, e)) => (Some(a), Some(t), e),
                    None => (None, None, None),
                };
                McpServerAuth {
                    type_: Some(AuthType::Oauth),
                    forward_identity: identity,
                    required_audiences: audiences,
                    authorization_server: Some(AuthorizationServer {
                        issuer,
                        authorization_endpoint,
                        token_endpoint,
                        expected_issuer,
                        revocation_endpoint: revocation,
                        client_credentials_secret_ref: secret,
                        grant_scope,
                        scopes,
                    }),
                    ..McpServerAuth::default()
                }
            },
        )
}

fn auth() -> impl Strategy<Value = McpServerAuth> {
    prop_oneof![
        Just(McpServerAuth {
            type_: Some(AuthType::None),
            ..McpServerAuth::default()
        }),
        forward_token_auth(),
        token_exchange_auth(),
        authorization_server_auth(),
    ]
}

fn stdio_transport() -> impl Strategy<Value = Transport> {
    (
        "[a-z/][a-z0-9_./-]{0,15}",
        vec(text(), 0..4),
        btree_map("[A-Z][A-Z0-9_]{0,8}", text(), 0..4),
    )
        .prop_map(|(command, args, env)| Transport::Stdio(StdioTransport { command, args, env }))
}

fn remote_transport() -> impl Strategy<Value = RemoteTransport> {
    let url = prop_oneof![https_url(), "http://localhost:[1-9][0-9]{0,3}/[a-z]{0,6}"];
    let header_from = btree_map("x-[a-z]{1,8}", (ident(), ident()), 0..3);
    (
        url,
        btree_map("x-[a-z]{1,8}", text(), 0..4),
        header_from,
        option::of(auth()),
    )
        .prop_map(|(url, headers, headers_from, auth)| RemoteTransport {
            url,
            headers,
            headers_from: headers_from
                .into_iter()
                .map(|(name, (secret, key))| HeaderFrom {
                    name,
                    value_from: SecretKeySource {
                        type_: "Secret".to_owned(),
                        name: secret,
                        key,
                    },
                })
                .collect(),
            auth,
        })
}

fn mcp_server_spec() -> impl Strategy<Value = McpServerSpec> {
    let transport = prop_oneof![
        stdio_transport(),
        remote_transport().prop_map(Transport::StreamableHttp),
        remote_transport().prop_map(Transport::Sse),
    ];
    let family = ("[a-zA-Z][a-zA-Z0-9_-]{0,10}", "[a-zA-Z][a-zA-Z0-9_]{0,10}")
        .prop_map(|(name, instance_arg)| Family { name, instance_arg });
    (
        transport,
        option::of("[a-zA-Z][a-zA-Z0-9_-]{0,10}"),
        option::of(family),
        option::of(text()),
        any::<bool>(),
        option::of(1u32..=300),
        option::of(0u32..=3600),
        any::<bool>(),
        option::of(timestamp()),
    )
        .prop_map(
            |(
                transport,
                tool_prefix,
                family,
                description,
                auto_start,
                timeout,
                max,
                suspended,
                at,
            )| {
                // The progress budget is at least the timeout (30 s by default).
                let floor = timeout.unwrap_or(30);
                McpServerSpec {
                    transport,
                    tool_prefix,
                    family,
                    description,
                    auto_start,
                    timeout,
                    progress_max_duration: max.map(|m| m.max(floor)),
                    suspended,
                    restart_requested_at: at,
                }
            },
        )
}

// --- Workflow ---------------------------------------------------------------------------------

fn tool_name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,12}"
}

/// A one-line Go template.
fn template() -> impl Strategy<Value = String> {
    "\\{\\{ \\.(input|results|vars)\\.[a-z]{1,8} \\}\\}"
}

fn expectation() -> impl Strategy<Value = Expectation> {
    prop_oneof![
        (any::<bool>(), option::of(json_map())).prop_map(|(s, json_path)| Expectation {
            success: Some(s),
            json_path
        }),
        json_map().prop_map(|m| Expectation {
            success: None,
            json_path: Some(m)
        }),
    ]
}

/// `expect`, `expectNot` or both.
fn expectations() -> impl Strategy<Value = (Option<Expectation>, Option<Expectation>)> {
    prop_oneof![
        expectation().prop_map(|e| (Some(e), None)),
        expectation().prop_map(|e| (None, Some(e))),
        (expectation(), expectation()).prop_map(|(e, n)| (Some(e), Some(n))),
    ]
}

/// A template or tool condition.
fn condition() -> impl Strategy<Value = StepCondition> {
    prop_oneof![
        template().prop_map(|t| StepCondition {
            template: Some(t),
            ..StepCondition::default()
        }),
        (tool_name(), option::of(json_map()), expectations()).prop_map(
            |(tool, args, (expect, expect_not))| StepCondition {
                tool: Some(tool),
                args,
                expect,
                expect_not,
                ..StepCondition::default()
            }
        ),
    ]
}

/// Marks a `fromStep` condition whose step is chosen once the ids are known.
const EARLIER_STEP: &str = "";

/// A condition of a top-level step: template, tool, or `fromStep` of the step before.
fn top_condition() -> impl Strategy<Value = StepCondition> {
    prop_oneof![
        2 => condition(),
        1 => expectations().prop_map(|(expect, expect_not)| StepCondition {
            from_step: Some(EARLIER_STEP.to_owned()),
            expect,
            expect_not,
            ..StepCondition::default()
        }),
    ]
}

fn paginate() -> impl Strategy<Value = Paginate> {
    let path = || option::of("[a-z]{1,6}(\\.[a-z]{1,6}){0,2}");
    (
        path(),
        path(),
        option::of("[a-z]{1,8}"),
        option::of(1i64..=1000),
    )
        .prop_map(
            |(items_field, token_field, token_arg, max_pages)| Paginate {
                items_field,
                token_field,
                token_arg,
                max_pages,
            },
        )
}

/// A tool step (ids are assigned later).
fn tool_step(condition: BoxedStrategy<StepCondition>) -> impl Strategy<Value = Step> {
    (
        tool_name(),
        option::of(json_map()),
        option::of(condition),
        option::of(paginate()),
        option::of("\\.[a-z]{1,8}"),
        option::of(any::<bool>()),
        option::of(any::<bool>()),
        any::<bool>(),
        option::of(text()),
    )
        .prop_map(
            |(tool, args, condition, paginate, jq, output, store, allow_failure, description)| {
                Step {
                    tool: Some(tool),
                    args,
                    condition,
                    paginate,
                    jq,
                    output,
                    store,
                    allow_failure,
                    description,
                    ..Step::default()
                }
            },
        )
}

fn sub_step() -> impl Strategy<Value = Step> {
    tool_step(condition().boxed())
}

fn items() -> impl Strategy<Value = Value> {
    "\\{\\{ \\.(input|results)\\.[a-z]{1,8} \\}\\}".prop_map(Value::from)
}

/// A loop inside a loop body; its variable (`n_...`) never equals the outer one.
fn nested_loop() -> impl Strategy<Value = Step> {
    (
        items(),
        "n_[a-z]{1,4}",
        option::of(1i64..=50),
        vec(sub_step(), 1..3),
        any::<bool>(),
    )
        .prop_map(|(items, as_, parallelism, steps, allow_failure)| Step {
            for_each: Some(ForEach {
                items: Some(items),
                as_: Some(as_),
                parallelism,
                steps,
            }),
            allow_failure,
            ..Step::default()
        })
}

fn loop_step() -> impl Strategy<Value = Step> {
    let body = vec(prop_oneof![3 => sub_step(), 1 => nested_loop()], 1..3);
    (
        items(),
        option::of("[a-h][a-z0-9_]{0,5}"),
        option::of(1i64..=50),
        body,
        option::of(top_condition()),
        option::of("\\[\\.\\[\\] \\| \\.results\\]"),
        option::of(any::<bool>()),
    )
        .prop_map(
            |(items, as_, parallelism, steps, condition, jq, output)| Step {
                for_each: Some(ForEach {
                    items: Some(items),
                    as_,
                    parallelism,
                    steps,
                }),
                condition,
                jq,
                output,
                ..Step::default()
            },
        )
}

fn parallel_step() -> impl Strategy<Value = Step> {
    (
        vec(sub_step(), 1..4),
        option::of(top_condition()),
        option::of(text()),
    )
        .prop_map(|(group, condition, description)| Step {
            parallel: Some(group),
            condition,
            description,
            ..Step::default()
        })
}

fn top_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => tool_step(top_condition().boxed()),
        1 => loop_step(),
        1 => parallel_step(),
    ]
}

fn arg_definition() -> impl Strategy<Value = ArgDefinition> {
    let typed = prop_oneof![
        (Just("string"), option::of(text().prop_map(Value::from))),
        (
            Just("integer"),
            option::of(any::<i64>().prop_map(Value::from))
        ),
        (
            Just("boolean"),
            option::of(any::<bool>().prop_map(Value::from))
        ),
        (Just("number"), option::of(quarter())),
        (
            Just("object"),
            option::of(json_map().prop_map(Value::Object))
        ),
        (
            Just("array"),
            option::of(vec(json_value(), 0..3).prop_map(Value::Array))
        ),
    ];
    (typed, any::<bool>(), option::of(text())).prop_map(
        |((type_, default), required, description)| ArgDefinition {
            type_: Some(type_.to_owned()),
            required,
            default,
            description,
        },
    )
}

/// Gives every step a unique id, in document order, and points each `fromStep` placeholder at
/// the step before (a first step gets a template instead).
fn assign_ids(spec: &mut WorkflowSpec) {
    fn walk(step: &mut Step, next: &mut usize) {
        step.id = format!("s{next}");
        *next += 1;
        if let Some(f) = &mut step.for_each {
            f.steps.iter_mut().for_each(|s| walk(s, next));
        }
        if let Some(group) = &mut step.parallel {
            group.iter_mut().for_each(|s| walk(s, next));
        }
    }
    let mut next = 0;
    for step in spec.steps.iter_mut().chain(spec.on_failure.iter_mut()) {
        walk(step, &mut next);
    }
    let mut previous: Option<String> = None;
    for step in &mut spec.steps {
        if let Some(c) = &mut step.condition
            && c.from_step.as_deref() == Some(EARLIER_STEP)
        {
            match &previous {
                Some(id) => c.from_step = Some(id.clone()),
                None => {
                    c.from_step = None;
                    c.template = Some("{{ true }}".to_owned());
                }
            }
        }
        previous = Some(step.id.clone());
    }
}

fn workflow_spec() -> impl Strategy<Value = WorkflowSpec> {
    (
        option::of(text()),
        btree_map("[a-z][a-z0-9_]{0,8}", arg_definition(), 0..3),
        vec(top_step(), 1..5),
        vec(sub_step(), 0..3),
        option::of(json_map()),
    )
        .prop_map(|(description, args, steps, on_failure, output)| {
            let mut spec = WorkflowSpec {
                description,
                args,
                steps,
                on_failure,
                output,
            };
            assign_ids(&mut spec);
            spec
        })
}

// --- WorkflowExecution ------------------------------------------------------------------------

fn step_record() -> impl Strategy<Value = StepRecord> {
    let status = prop_oneof![
        Just(StepStatus::Inprogress),
        Just(StepStatus::Completed),
        Just(StepStatus::Failed),
        Just(StepStatus::Skipped),
    ];
    (
        ident(),
        option::of(tool_name()),
        status,
        timestamp(),
        option::of(timestamp()),
        0i64..10_000_000,
        json_value(),
        option::of(present_value()),
        option::of(text()),
        option::of(ident()),
    )
        .prop_map(
            |(
                step_id,
                tool,
                status,
                started_at,
                completed_at,
                duration_ms,
                input,
                result,
                error,
                stored_as,
            )| {
                StepRecord {
                    step_id,
                    tool,
                    status,
                    started_at,
                    completed_at,
                    duration_ms,
                    input,
                    result,
                    error,
                    stored_as,
                }
            },
        )
}

fn execution_record() -> impl Strategy<Value = ExecutionRecord> {
    let status = prop_oneof![
        Just(ExecutionStatus::Inprogress),
        Just(ExecutionStatus::Completed),
        Just(ExecutionStatus::Failed),
    ];
    (
        ident(),
        status,
        timestamp(),
        option::of(timestamp()),
        0i64..10_000_000,
        json_value(),
        option::of(present_value()),
        option::of(text()),
        any::<bool>(),
        vec(step_record(), 0..4),
    )
        .prop_map(
            |(
                workflow_name,
                status,
                started_at,
                completed_at,
                duration_ms,
                input,
                result,
                error,
                truncated,
                steps,
            )| {
                ExecutionRecord {
                    workflow_name,
                    status,
                    started_at,
                    completed_at,
                    duration_ms,
                    input,
                    result,
                    error,
                    truncated,
                    steps,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn mcp_server_spec_round_trips(spec in mcp_server_spec()) {
        if let Err(errs) = spec.validate(&ValidationContext::filesystem()) {
            return Err(TestCaseError::fail(format!("generated an invalid spec: {errs}")));
        }
        assert_round_trips(&spec)?;
    }

    #[test]
    fn workflow_spec_round_trips(spec in workflow_spec()) {
        if let Err(errs) = spec.validate() {
            return Err(TestCaseError::fail(format!("generated an invalid spec: {errs}")));
        }
        assert_round_trips(&spec)?;
        // The derived status is a function of the spec, so it round trips too.
        assert_round_trips(&spec.computed_status())?;
    }

    #[test]
    fn execution_record_round_trips(record in execution_record()) {
        assert_round_trips(&record)?;
    }

    #[test]
    fn execution_object_round_trips(
        record in execution_record(),
        namespace in "[a-z][a-z0-9-]{0,10}",
        id in ident(),
    ) {
        let mut obj = Object::<WorkflowExecution>::new(id, record.clone()).in_namespace(namespace);
        obj.metadata.labels.insert(WORKFLOW_LABEL.to_owned(), record.workflow_name.clone());
        assert_round_trips(&obj)?;
    }
}
