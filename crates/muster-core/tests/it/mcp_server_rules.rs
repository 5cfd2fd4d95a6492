//! Every rule of the MCPServer spec (`McpServerDefinition::validate` and `validate_named`), as
//! tables of cases: one passing and one failing definition per rule.
//!
//! A failing case lists the violations it must produce as (field path, rule fragment) pairs,
//! and nothing else: each listed pair must match a violation, and each violation must match a
//! listed pair, so a case fails for the reason it names and not for another one.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use muster_core::resource::mcp_server::{
    AuthType, GrantScope, McpServerDefinition, McpServerSpec, ServerType, Transport,
};
use muster_core::{ValidationContext, ValidationErrors, Violation};
use serde_json::{Value, json};

use crate::merge;

/// The namespace muster runs in for the Kubernetes-mode cases.
const MUSTER_NS: &str = "muster";

const PREFIX_PATTERN: &str = "must match ^[a-zA-Z][a-zA-Z0-9_-]*$";

enum Expect {
    Ok,
    Violations(Vec<(String, String)>),
}

struct Case {
    name: String,
    def: Value,
    ctx: ValidationContext,
    identity: Option<(String, String)>,
    expect: Expect,
}

impl Case {
    /// Validates with `validate_named(name, namespace, ..)` instead of `validate(..)`.
    fn named(mut self, name: &str, namespace: &str) -> Self {
        self.identity = Some((name.to_owned(), namespace.to_owned()));
        self
    }
}

fn ok(name: impl Into<String>, def: Value, ctx: ValidationContext) -> Case {
    Case {
        name: name.into(),
        def,
        ctx,
        identity: None,
        expect: Expect::Ok,
    }
}

fn fail(
    name: impl Into<String>,
    def: Value,
    ctx: ValidationContext,
    violations: &[(&str, &str)],
) -> Case {
    let violations = violations
        .iter()
        .map(|(p, r)| ((*p).to_owned(), (*r).to_owned()))
        .collect();
    Case {
        name: name.into(),
        def,
        ctx,
        identity: None,
        expect: Expect::Violations(violations),
    }
}

fn fs() -> ValidationContext {
    ValidationContext::filesystem()
}

fn k8s() -> ValidationContext {
    ValidationContext::kubernetes(MUSTER_NS)
}

fn stdio() -> Value {
    json!({ "type": "stdio", "command": "npx" })
}

fn remote() -> Value {
    json!({ "type": "streamable-http", "url": "https://mcp.example.com/mcp" })
}

fn sse() -> Value {
    json!({ "type": "sse", "url": "https://mcp.example.com/sse" })
}

fn with(base: Value, patch: Value) -> Value {
    merge(base, patch)
}

/// A remote server with this `auth`.
fn auth(auth: Value) -> Value {
    with(remote(), json!({ "auth": auth }))
}

/// A remote server with `type: oauth` and an `authorizationServer` with these fields over a
/// valid issuer.
fn auth_server(fields: Value) -> Value {
    let server = with(
        json!({ "issuer": "https://github.com/login/oauth" }),
        fields,
    );
    auth(json!({ "type": "oauth", "authorizationServer": server }))
}

/// A remote server with `type: oauth` and an enabled `tokenExchange` with these fields over a
/// valid configuration.
fn token_exchange(fields: Value) -> Value {
    let te = with(
        json!({
            "enabled": true,
            "dexTokenEndpoint": "https://dex.remote.example.com/token",
            "connectorId": "local-dex",
        }),
        fields,
    );
    auth(json!({ "type": "oauth", "tokenExchange": te }))
}

/// A `clientCredentialsSecretRef` field naming this Secret and namespace.
fn secret_ref(name: &str, namespace: &str) -> Value {
    json!({ "clientCredentialsSecretRef": { "name": name, "namespace": namespace } })
}

fn header_from(name: &str) -> Value {
    let value_from = json!({ "type": "Secret", "name": "tokens", "key": "authorization" });
    json!({ "name": name, "valueFrom": value_from })
}

fn chars(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

fn parse(def: &Value) -> McpServerDefinition {
    serde_json::from_value(def.clone()).expect("definition parses")
}

fn matches(v: &Violation, path: &str, fragment: &str) -> bool {
    v.path == path && v.rule.contains(fragment)
}

/// Runs every case and reports all that did not behave as expected.
fn run(cases: Vec<Case>) {
    let mut names = HashSet::new();
    let mut failures = Vec::new();
    for case in &cases {
        assert!(
            names.insert(case.name.clone()),
            "duplicate case name: {}",
            case.name
        );
        let def: McpServerDefinition = match serde_json::from_value(case.def.clone()) {
            Ok(def) => def,
            Err(e) => {
                failures.push(format!("{}: does not parse: {e}", case.name));
                continue;
            }
        };
        let result = match &case.identity {
            Some((name, ns)) => def.validate_named(name, ns, &case.ctx),
            None => def.validate(&case.ctx),
        };
        match (&case.expect, result) {
            (Expect::Ok, Ok(_)) => {}
            (Expect::Ok, Err(errs)) => {
                failures.push(format!("{}: expected Ok, got: {errs}", case.name));
            }
            (Expect::Violations(_), Ok(_)) => {
                failures.push(format!("{}: expected violations, got Ok", case.name));
            }
            (Expect::Violations(expected), Err(errs)) => {
                check_violations(&case.name, expected, &errs, &mut failures);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn check_violations(
    name: &str,
    expected: &[(String, String)],
    errs: &ValidationErrors,
    failures: &mut Vec<String>,
) {
    for (path, fragment) in expected {
        if !errs.contains(path, fragment) {
            failures.push(format!(
                "{name}: missing `{path}: ..{fragment}..`; got: {errs}"
            ));
        }
    }
    for v in errs.violations() {
        if !expected.iter().any(|(p, f)| matches(v, p, f)) {
            failures.push(format!("{name}: unexpected violation `{v}`"));
        }
    }
}

#[test]
fn server_type() {
    run(vec![
        ok("stdio in filesystem mode", stdio(), fs()),
        ok("streamable-http in filesystem mode", remote(), fs()),
        ok("streamable-http in kubernetes mode", remote(), k8s()),
        ok("sse in kubernetes mode", sse(), k8s()),
        fail(
            "type missing",
            json!({ "command": "npx" }),
            fs(),
            &[("spec.type", "type is required")],
        ),
        fail(
            "type empty",
            json!({ "type": "", "command": "npx" }),
            fs(),
            &[("spec.type", "type is required")],
        ),
        fail(
            "type unsupported",
            json!({ "type": "foo", "command": "npx" }),
            fs(),
            &[(
                "spec.type",
                "unsupported MCP server type: foo (supported: stdio, streamable-http, sse)",
            )],
        ),
        fail(
            "type is case-sensitive",
            json!({ "type": "STDIO", "command": "npx" }),
            fs(),
            &[("spec.type", "unsupported MCP server type: STDIO")],
        ),
        fail(
            "stdio refused in kubernetes mode",
            stdio(),
            k8s(),
            &[
                (
                    "spec.type",
                    "stdio servers are not supported in Kubernetes mode",
                ),
                ("spec.type", "streamable-http or sse"),
            ],
        ),
    ]);
}

#[test]
fn tool_prefix_and_org_rule() {
    let prefixed = |p: &str| with(remote(), json!({ "toolPrefix": p }));
    run(vec![
        ok(
            "toolPrefix of letters, digits, _ and -",
            prefixed("remote_k8s-2"),
            fs(),
        ),
        ok("toolPrefix of one letter", prefixed("k"), fs()),
        fail(
            "toolPrefix starting with a digit",
            prefixed("9lives"),
            fs(),
            &[("spec.toolPrefix", PREFIX_PATTERN)],
        ),
        fail(
            "toolPrefix starting with -",
            prefixed("-x"),
            fs(),
            &[("spec.toolPrefix", PREFIX_PATTERN)],
        ),
        fail(
            "toolPrefix with a dot",
            prefixed("a.b"),
            fs(),
            &[("spec.toolPrefix", PREFIX_PATTERN)],
        ),
        fail(
            "toolPrefix empty",
            prefixed(""),
            fs(),
            &[("spec.toolPrefix", PREFIX_PATTERN)],
        ),
        fail(
            "toolPrefix non-ASCII",
            prefixed("kübe"),
            fs(),
            &[("spec.toolPrefix", PREFIX_PATTERN)],
        ),
        fail(
            "name org- in muster's namespace",
            remote(),
            k8s(),
            &[(
                "metadata.name",
                "must not start with org- in muster's namespace",
            )],
        )
        .named("org-tools", MUSTER_NS),
        fail(
            "toolPrefix org- in muster's namespace",
            prefixed("org-tools"),
            k8s(),
            &[(
                "spec.toolPrefix",
                "must not start with org- in muster's namespace",
            )],
        )
        .named("tools", MUSTER_NS),
        fail(
            "name and toolPrefix org- in muster's namespace",
            prefixed("org-a"),
            k8s(),
            &[
                ("metadata.name", "must not start with org-"),
                ("spec.toolPrefix", "must not start with org-"),
            ],
        )
        .named("org-b", MUSTER_NS),
        ok(
            "name org- outside muster's namespace",
            prefixed("org-a"),
            k8s(),
        )
        .named("org-b", "team-a"),
        ok(
            "toolPrefix org- outside muster's namespace",
            prefixed("org-a"),
            k8s(),
        )
        .named("tools", "team-a"),
        ok(
            "org- rule needs the server's identity",
            prefixed("org-a"),
            k8s(),
        ),
        fail(
            "name org- in muster's namespace, filesystem mode",
            stdio(),
            fs(),
            &[("metadata.name", "must not start with org-")],
        )
        .named("org-tools", "default"),
        ok(
            "name org- in another namespace, filesystem mode",
            stdio(),
            fs(),
        )
        .named("org-tools", "team-a"),
        ok("name containing org- later", remote(), k8s()).named("my-org-tools", MUSTER_NS),
    ]);
}

#[test]
fn family_and_description() {
    let family = |f: Value| with(remote(), json!({ "family": f }));
    run(vec![
        ok(
            "family with name and instanceArg",
            family(json!({ "name": "kubernetes", "instanceArg": "management_cluster" })),
            fs(),
        ),
        ok(
            "family name with - and _",
            family(json!({ "name": "k8s-mc_2", "instanceArg": "mc2" })),
            fs(),
        ),
        fail(
            "family name missing",
            family(json!({ "instanceArg": "management_cluster" })),
            fs(),
            &[("spec.family.name", "is required when family is set")],
        ),
        fail(
            "family instanceArg missing",
            family(json!({ "name": "kubernetes" })),
            fs(),
            &[("spec.family.instanceArg", "is required when family is set")],
        ),
        fail(
            "family empty",
            family(json!({})),
            fs(),
            &[
                ("spec.family.name", "is required when family is set"),
                ("spec.family.instanceArg", "is required when family is set"),
            ],
        ),
        fail(
            "family name pattern",
            family(json!({ "name": "1kubernetes", "instanceArg": "cluster" })),
            fs(),
            &[("spec.family.name", PREFIX_PATTERN)],
        ),
        fail(
            "family instanceArg pattern refuses -",
            family(json!({ "name": "kubernetes", "instanceArg": "management-cluster" })),
            fs(),
            &[(
                "spec.family.instanceArg",
                "must match ^[a-zA-Z][a-zA-Z0-9_]*$",
            )],
        ),
        fail(
            "family instanceArg pattern refuses a leading digit",
            family(json!({ "name": "kubernetes", "instanceArg": "1cluster" })),
            fs(),
            &[(
                "spec.family.instanceArg",
                "must match ^[a-zA-Z][a-zA-Z0-9_]*$",
            )],
        ),
        ok(
            "description empty",
            with(remote(), json!({ "description": "" })),
            fs(),
        ),
        ok(
            "description of 500 characters",
            with(remote(), json!({ "description": chars('d', 500) })),
            fs(),
        ),
        fail(
            "description of 501 characters",
            with(remote(), json!({ "description": chars('d', 501) })),
            fs(),
            &[("spec.description", "must be at most 500 characters")],
        ),
        ok(
            "description of 500 two-byte characters",
            with(remote(), json!({ "description": chars('é', 500) })),
            fs(),
        ),
        fail(
            "description of 501 two-byte characters",
            with(remote(), json!({ "description": chars('é', 501) })),
            fs(),
            &[("spec.description", "must be at most 500 characters")],
        ),
    ]);
}

#[test]
fn stdio_fields() {
    let remote_only = "only for streamable-http and sse servers";
    let auth_refused =
        "auth configuration is only supported for remote server types (streamable-http or sse)";
    run(vec![
        ok(
            "stdio with args, env and autoStart",
            with(
                stdio(),
                json!({ "args": ["-y", "server"], "env": { "LOG": "debug" }, "autoStart": true }),
            ),
            fs(),
        ),
        fail(
            "stdio without command",
            json!({ "type": "stdio" }),
            fs(),
            &[("spec.command", "command is required for stdio type")],
        ),
        fail(
            "stdio with a blank command",
            json!({ "type": "stdio", "command": "  " }),
            fs(),
            &[("spec.command", "command is required for stdio type")],
        ),
        ok(
            "url on stdio is ignored",
            with(stdio(), json!({ "url": "https://mcp.example.com/mcp" })),
            fs(),
        ),
        fail(
            "headers on stdio",
            with(stdio(), json!({ "headers": { "X-A": "1" } })),
            fs(),
            &[("spec.headers", remote_only)],
        ),
        ok(
            "empty headers on stdio",
            with(stdio(), json!({ "headers": {} })),
            fs(),
        ),
        fail(
            "headersFrom on stdio",
            with(
                stdio(),
                json!({ "headersFrom": [header_from("Authorization")] }),
            ),
            fs(),
            &[("spec.headersFrom", remote_only)],
        ),
        ok(
            "empty headersFrom on stdio",
            with(stdio(), json!({ "headersFrom": [] })),
            fs(),
        ),
        fail(
            "auth oauth on stdio",
            with(stdio(), json!({ "auth": { "type": "oauth" } })),
            fs(),
            &[("spec.auth", auth_refused)],
        ),
        fail(
            "auth forwardToken on stdio",
            with(stdio(), json!({ "auth": { "forwardToken": true } })),
            fs(),
            &[("spec.auth", auth_refused)],
        ),
        fail(
            "auth none with forwardToken on stdio",
            with(
                stdio(),
                json!({ "auth": { "type": "none", "forwardToken": true } }),
            ),
            fs(),
            &[("spec.auth", auth_refused)],
        ),
        ok(
            "auth type none on stdio",
            with(stdio(), json!({ "auth": { "type": "none" } })),
            fs(),
        ),
        ok(
            "empty auth on stdio",
            with(stdio(), json!({ "auth": {} })),
            fs(),
        ),
        fail(
            "every remote-only field on stdio",
            with(
                json!({ "type": "stdio" }),
                json!({
                    "url": "https://x.example.com",
                    "headers": { "X-A": "1" },
                    "headersFrom": [header_from("Authorization")],
                    "auth": { "type": "oauth" },
                }),
            ),
            fs(),
            &[
                ("spec.command", "command is required for stdio type"),
                ("spec.headers", remote_only),
                ("spec.headersFrom", remote_only),
                ("spec.auth", auth_refused),
            ],
        ),
    ]);
}

#[test]
fn remote_url() {
    let url = |u: &str| json!({ "type": "streamable-http", "url": u });
    let base = "https://mcp.example.com/";
    let url_2048 = format!("{base}{}", chars('a', 2048 - base.len()));
    let url_2049 = format!("{base}{}", chars('a', 2049 - base.len()));
    let userinfo = "must not contain a user name or password";
    run(vec![
        fail(
            "streamable-http without url",
            json!({ "type": "streamable-http" }),
            fs(),
            &[(
                "spec.url",
                "url is required for streamable-http and sse types",
            )],
        ),
        fail(
            "sse without url",
            json!({ "type": "sse" }),
            k8s(),
            &[(
                "spec.url",
                "url is required for streamable-http and sse types",
            )],
        ),
        fail(
            "blank url",
            url("  "),
            fs(),
            &[(
                "spec.url",
                "url is required for streamable-http and sse types",
            )],
        ),
        ok("url of 2048 characters", url(&url_2048), k8s()),
        fail(
            "url of 2049 characters",
            url(&url_2049),
            k8s(),
            &[("spec.url", "must be at most 2048 characters")],
        ),
        ok("http url", url("http://localhost:8080/mcp"), fs()),
        fail(
            "ftp url",
            url("ftp://mcp.example.com/mcp"),
            fs(),
            &[("spec.url", "must be an http:// or https:// URL")],
        ),
        fail(
            "relative url",
            url("/mcp"),
            fs(),
            &[("spec.url", "must be a valid absolute URL")],
        ),
        fail(
            "user and password in url, kubernetes mode",
            url("https://user:secret@mcp.example.com/mcp"),
            k8s(),
            &[("spec.url", userinfo)],
        ),
        fail(
            "user name in url, kubernetes mode",
            url("https://user@mcp.example.com/mcp"),
            k8s(),
            &[("spec.url", userinfo)],
        ),
        fail(
            "password only in url, kubernetes mode",
            url("https://:secret@mcp.example.com/mcp"),
            k8s(),
            &[("spec.url", userinfo)],
        ),
        ok(
            "user and password in url, filesystem mode",
            url("https://user:secret@mcp.example.com/mcp"),
            fs(),
        ),
    ]);
}

#[test]
fn stdio_only_fields_on_remote() {
    let stdio_only = "only for stdio servers";
    let env_refused = "refused on a remote server";
    run(vec![
        ok(
            "command on remote is ignored",
            with(remote(), json!({ "command": "npx" })),
            fs(),
        ),
        fail(
            "args on remote",
            with(remote(), json!({ "args": ["-v"] })),
            fs(),
            &[("spec.args", stdio_only)],
        ),
        ok(
            "empty args on remote",
            with(remote(), json!({ "args": [] })),
            fs(),
        ),
        fail(
            "env on remote, filesystem mode",
            with(remote(), json!({ "env": { "TOKEN": "x" } })),
            fs(),
            &[("spec.env", env_refused)],
        ),
        fail(
            "env on remote, kubernetes mode",
            with(remote(), json!({ "env": { "TOKEN": "x" } })),
            k8s(),
            &[("spec.env", env_refused)],
        ),
        fail(
            "env on sse, filesystem mode points at headers",
            with(sse(), json!({ "env": { "LOG": "debug" } })),
            fs(),
            &[("spec.env", "send credentials in spec.headers")],
        ),
        fail(
            "env on sse, kubernetes mode points at headersFrom",
            with(sse(), json!({ "env": { "LOG": "debug" } })),
            k8s(),
            &[(
                "spec.env",
                "put credentials in a Secret referenced by headersFrom",
            )],
        ),
        ok(
            "empty env on remote",
            with(remote(), json!({ "env": {} })),
            k8s(),
        ),
        ok(
            "autoStart on remote",
            with(remote(), json!({ "autoStart": true })),
            k8s(),
        ),
    ]);
}

#[test]
fn url_credentials_next_to_an_authorization_header() {
    let basic_wins = "would be sent as Basic authentication in its place";
    run(vec![
        fail(
            "user:password@ and an Authorization header",
            with(
                remote(),
                json!({
                    "url": "https://bot:pw@mcp.example.com/mcp",
                    "headers": { "Authorization": "Bearer t0ken" }
                }),
            ),
            fs(),
            &[(
                "spec.url",
                "when spec.headers.Authorization sets an Authorization header",
            )],
        ),
        fail(
            "user@ and an authorization header in any case",
            with(
                remote(),
                json!({
                    "url": "https://bot@mcp.example.com/mcp",
                    "headers": { "authorization": "Bearer t0ken" }
                }),
            ),
            fs(),
            &[("spec.url", basic_wins)],
        ),
        ok(
            "user:password@ alone",
            with(
                remote(),
                json!({ "url": "https://bot:pw@mcp.example.com/mcp" }),
            ),
            fs(),
        ),
        ok(
            "an Authorization header alone",
            with(
                remote(),
                json!({ "headers": { "Authorization": "Bearer t0ken" } }),
            ),
            fs(),
        ),
    ]);
}

#[test]
fn headers() {
    let headers = |h: Value| with(remote(), json!({ "headers": h }));
    let many = |n: usize| {
        let map: serde_json::Map<String, Value> = (0..n)
            .map(|i| (format!("X-Header-{i:02}"), json!("v")))
            .collect();
        headers(Value::Object(map))
    };
    let mut cases = vec![
        ok("32 headers", many(32), k8s()),
        fail(
            "33 headers",
            many(33),
            k8s(),
            &[("spec.headers", "must have at most 32 entries")],
        ),
        ok(
            "plain headers in kubernetes mode",
            headers(json!({ "X-MCP-Toolsets": "repos", "Accept": "text/event-stream" })),
            k8s(),
        ),
        fail(
            "header names differing only in case",
            headers(json!({ "Accept": "a", "accept": "b" })),
            fs(),
            &[(
                "spec.headers.accept",
                "header names must be unique (case-insensitive)",
            )],
        ),
        fail(
            "empty header name",
            headers(json!({ "": "x" })),
            fs(),
            &[("spec.headers", "header names must not be empty")],
        ),
    ];
    for name in [
        "Authorization",
        "authorization",
        "AUTHORIZATION",
        "Proxy-Authorization",
        "proxy-authorization",
        "Cookie",
        "COOKIE",
        "X-API-Key",
        "x-api-key",
        "X-Api-Key",
    ] {
        let path = format!("spec.headers.{name}");
        cases.push(fail(
            format!("credential header {name} with a value, kubernetes mode"),
            headers(json!({ name: "Bearer abc" })),
            k8s(),
            &[(&path, "must not carry a credential")],
        ));
        cases.push(ok(
            format!("credential header {name} with an empty value, kubernetes mode"),
            headers(json!({ name: "" })),
            k8s(),
        ));
        cases.push(ok(
            format!("credential header {name} with a value, filesystem mode"),
            headers(json!({ name: "Bearer abc" })),
            fs(),
        ));
    }
    cases.push(ok(
        "credential header with a blank value, kubernetes mode",
        headers(json!({ "Authorization": "   " })),
        k8s(),
    ));
    cases.push(fail(
        "credential header on sse, kubernetes mode",
        with(sse(), json!({ "headers": { "Cookie": "session=1" } })),
        k8s(),
        &[("spec.headers.Cookie", "must not carry a credential")],
    ));
    run(cases);
}

#[test]
fn headers_from() {
    let list = |l: Value| with(remote(), json!({ "headersFrom": l }));
    let many = |n: usize| {
        list(
            (0..n)
                .map(|i| header_from(&format!("X-Header-{i}")))
                .collect(),
        )
    };
    let value_from = |v: Value| list(json!([{ "name": "Authorization", "valueFrom": v }]));
    run(vec![
        ok(
            "one headersFrom entry",
            list(json!([header_from("Authorization")])),
            k8s(),
        ),
        ok("32 headersFrom entries", many(32), k8s()),
        fail(
            "33 headersFrom entries",
            many(33),
            k8s(),
            &[("spec.headersFrom", "must have at most 32 entries")],
        ),
        ok(
            "name of 256 characters",
            list(json!([header_from(&chars('h', 256))])),
            k8s(),
        ),
        fail(
            "name of 257 characters",
            list(json!([header_from(&chars('h', 257))])),
            k8s(),
            &[("spec.headersFrom[0].name", "must be 1 to 256 characters")],
        ),
        fail(
            "empty name",
            list(json!([header_from("")])),
            k8s(),
            &[("spec.headersFrom[0].name", "must be 1 to 256 characters")],
        ),
        fail(
            "names differing only in case",
            list(json!([
                header_from("Authorization"),
                header_from("authorization")
            ])),
            k8s(),
            &[("spec.headersFrom[1].name", "must be unique in the list")],
        ),
        fail(
            "valueFrom.type ConfigMap",
            value_from(json!({ "type": "ConfigMap", "name": "cm", "key": "k" })),
            k8s(),
            &[("spec.headersFrom[0].valueFrom.type", "must be Secret")],
        ),
        fail(
            "valueFrom.type lower-case secret",
            value_from(json!({ "type": "secret", "name": "s", "key": "k" })),
            k8s(),
            &[("spec.headersFrom[0].valueFrom.type", "must be Secret")],
        ),
        fail(
            "valueFrom.type missing",
            value_from(json!({ "name": "s", "key": "k" })),
            k8s(),
            &[("spec.headersFrom[0].valueFrom.type", "must be Secret")],
        ),
        fail(
            "valueFrom.name missing",
            value_from(json!({ "type": "Secret", "key": "k" })),
            k8s(),
            &[("spec.headersFrom[0].valueFrom.name", "is required")],
        ),
        fail(
            "valueFrom.key missing",
            value_from(json!({ "type": "Secret", "name": "s" })),
            k8s(),
            &[("spec.headersFrom[0].valueFrom.key", "is required")],
        ),
        fail(
            "valueFrom missing",
            list(json!([{ "name": "Authorization" }])),
            k8s(),
            &[
                ("spec.headersFrom[0].valueFrom.type", "must be Secret"),
                ("spec.headersFrom[0].valueFrom.name", "is required"),
                ("spec.headersFrom[0].valueFrom.key", "is required"),
            ],
        ),
        ok(
            "headersFrom entry of the same name as a headers entry",
            with(
                list(json!([header_from("X-Tenant")])),
                json!({ "headers": { "X-Tenant": "public" } }),
            ),
            k8s(),
        ),
    ]);
}

#[test]
fn timeout_and_progress() {
    let timed = |t: Value, max: Option<i64>| {
        let mut def = with(remote(), json!({ "timeout": t }));
        if let Some(max) = max {
            def = with(def, json!({ "progress": { "maxDuration": max } }));
        }
        def
    };
    let progress = |max: i64| with(remote(), json!({ "progress": { "maxDuration": max } }));
    let timeout_rule = "must be between 1 and 300 seconds";
    run(vec![
        fail(
            "timeout 0",
            timed(json!(0), None),
            fs(),
            &[("spec.timeout", timeout_rule)],
        ),
        fail(
            "timeout 301",
            timed(json!(301), None),
            fs(),
            &[("spec.timeout", timeout_rule)],
        ),
        fail(
            "timeout negative",
            timed(json!(-5), None),
            fs(),
            &[("spec.timeout", timeout_rule)],
        ),
        ok("timeout 1", timed(json!(1), None), fs()),
        ok("timeout 300", timed(json!(300), None), fs()),
        ok(
            "timeout on stdio",
            with(stdio(), json!({ "timeout": 5 })),
            fs(),
        ),
        fail(
            "maxDuration below timeout",
            timed(json!(60), Some(59)),
            fs(),
            &[(
                "spec.progress.maxDuration",
                "must be between timeout (60) and 3600 seconds",
            )],
        ),
        ok(
            "maxDuration equal to timeout",
            timed(json!(60), Some(60)),
            fs(),
        ),
        ok("maxDuration 3600", timed(json!(60), Some(3600)), fs()),
        fail(
            "maxDuration 3601",
            timed(json!(60), Some(3601)),
            fs(),
            &[(
                "spec.progress.maxDuration",
                "must be between timeout (60) and 3600 seconds",
            )],
        ),
        fail(
            "maxDuration below the default timeout",
            progress(29),
            fs(),
            &[(
                "spec.progress.maxDuration",
                "must be between timeout (30) and 3600 seconds",
            )],
        ),
        ok(
            "maxDuration equal to the default timeout",
            progress(30),
            fs(),
        ),
        ok(
            "progress without maxDuration",
            with(remote(), json!({ "progress": {} })),
            fs(),
        ),
        fail(
            "invalid timeout: maxDuration measured against the default",
            timed(json!(0), Some(10)),
            fs(),
            &[
                ("spec.timeout", timeout_rule),
                (
                    "spec.progress.maxDuration",
                    "must be between timeout (30) and 3600 seconds",
                ),
            ],
        ),
    ]);
}

#[test]
fn auth_forwarding_and_exclusions() {
    let issuer = json!({ "issuer": "https://github.com/login/oauth" });
    run(vec![
        ok(
            "forwardIdentity with type oauth and authorizationServer",
            auth(
                json!({ "type": "oauth", "authorizationServer": issuer, "forwardIdentity": true }),
            ),
            k8s(),
        ),
        fail(
            "forwardIdentity without authorizationServer",
            auth(json!({ "type": "oauth", "forwardIdentity": true })),
            k8s(),
            &[(
                "spec.auth.forwardIdentity",
                "requires type: oauth and authorizationServer",
            )],
        ),
        fail(
            "forwardIdentity without type",
            auth(json!({ "authorizationServer": issuer, "forwardIdentity": true })),
            k8s(),
            &[
                (
                    "spec.auth.forwardIdentity",
                    "requires type: oauth and authorizationServer",
                ),
                ("spec.auth.authorizationServer", "requires type: oauth"),
            ],
        ),
        fail(
            "forwardIdentity with type none",
            auth(json!({ "type": "none", "authorizationServer": issuer, "forwardIdentity": true })),
            k8s(),
            &[
                (
                    "spec.auth.forwardIdentity",
                    "requires type: oauth and authorizationServer",
                ),
                ("spec.auth.authorizationServer", "requires type: oauth"),
            ],
        ),
        ok(
            "forwardToken with type oauth",
            auth(json!({ "type": "oauth", "forwardToken": true })),
            k8s(),
        ),
        ok("auth type none", auth(json!({ "type": "none" })), k8s()),
        fail(
            "forwardToken with authorizationServer",
            auth(json!({ "type": "oauth", "authorizationServer": issuer, "forwardToken": true })),
            k8s(),
            &[(
                "spec.auth.forwardToken",
                "is mutually exclusive with authorizationServer",
            )],
        ),
        fail(
            "tokenExchange enabled with authorizationServer",
            with(
                token_exchange(json!({})),
                json!({ "auth": { "authorizationServer": issuer } }),
            ),
            k8s(),
            &[(
                "spec.auth.tokenExchange.enabled",
                "is mutually exclusive with authorizationServer",
            )],
        ),
        ok(
            "tokenExchange disabled with authorizationServer",
            auth(json!({
                "type": "oauth",
                "authorizationServer": issuer,
                "tokenExchange": { "enabled": false },
            })),
            k8s(),
        ),
        fail(
            "authorizationServer without type",
            auth(json!({ "authorizationServer": issuer })),
            k8s(),
            &[("spec.auth.authorizationServer", "requires type: oauth")],
        ),
        fail(
            "authorizationServer with type none",
            auth(json!({ "type": "none", "authorizationServer": issuer })),
            k8s(),
            &[("spec.auth.authorizationServer", "requires type: oauth")],
        ),
    ]);
}

#[test]
fn auth_provider_apps_and_audiences() {
    let audiences =
        |a: Value| auth(json!({ "type": "oauth", "forwardToken": true, "requiredAudiences": a }));
    let aud_rule = "must be non-empty and contain no whitespace";
    run(vec![
        ok(
            "providerApps with forwardToken in muster's namespace",
            auth(json!({ "type": "oauth", "forwardToken": true, "providerApps": ["github"] })),
            k8s(),
        )
        .named("portal", MUSTER_NS),
        ok(
            "providerApps with forwardIdentity in muster's namespace",
            auth(json!({
                "type": "oauth",
                "authorizationServer": { "issuer": "https://github.com/login/oauth" },
                "forwardIdentity": true,
                "providerApps": ["github", "gitlab"],
            })),
            k8s(),
        )
        .named("portal", MUSTER_NS),
        fail(
            "providerApps without forwarding",
            auth(json!({ "type": "oauth", "providerApps": ["github"] })),
            k8s(),
            &[(
                "spec.auth.providerApps",
                "requires forwardToken or forwardIdentity",
            )],
        )
        .named("portal", MUSTER_NS),
        fail(
            "providerApps outside muster's namespace",
            auth(json!({ "type": "oauth", "forwardToken": true, "providerApps": ["github"] })),
            k8s(),
            &[(
                "spec.auth.providerApps",
                "is allowed only in muster's namespace",
            )],
        )
        .named("portal", "team-a"),
        ok(
            "requiredAudiences without whitespace",
            audiences(json!(["dex-k8s-authenticator", "a:b/c"])),
            k8s(),
        ),
        fail(
            "requiredAudiences with a space",
            audiences(json!(["has space"])),
            k8s(),
            &[("spec.auth.requiredAudiences[0]", aud_rule)],
        ),
        fail(
            "requiredAudiences with a tab in the second entry",
            audiences(json!(["ok", "tab\there"])),
            k8s(),
            &[("spec.auth.requiredAudiences[1]", aud_rule)],
        ),
        fail(
            "requiredAudiences with a newline",
            audiences(json!(["aud\n"])),
            k8s(),
            &[("spec.auth.requiredAudiences[0]", aud_rule)],
        ),
        fail(
            "requiredAudiences with an empty entry",
            audiences(json!([""])),
            k8s(),
            &[("spec.auth.requiredAudiences[0]", aud_rule)],
        ),
    ]);
}

#[test]
fn auth_token_exchange() {
    let base = "spec.auth.tokenExchange";
    let secret_ns = "an MCPServer outside muster's namespace may name only its own namespace";
    run(vec![
        ok(
            "tokenExchange enabled",
            token_exchange(json!({ "scopes": "openid groups" })),
            k8s(),
        ),
        ok(
            "tokenExchange disabled without fields",
            auth(json!({ "type": "oauth", "tokenExchange": { "enabled": false } })),
            k8s(),
        ),
        fail(
            "tokenExchange without dexTokenEndpoint",
            token_exchange(json!({ "dexTokenEndpoint": null })),
            k8s(),
            &[(
                &format!("{base}.dexTokenEndpoint"),
                "is required when enabled",
            )],
        ),
        fail(
            "tokenExchange with an empty dexTokenEndpoint",
            token_exchange(json!({ "dexTokenEndpoint": "" })),
            k8s(),
            &[(
                &format!("{base}.dexTokenEndpoint"),
                "is required when enabled",
            )],
        ),
        fail(
            "tokenExchange with an http dexTokenEndpoint",
            token_exchange(json!({ "dexTokenEndpoint": "http://dex.remote.example.com/token" })),
            k8s(),
            &[(
                &format!("{base}.dexTokenEndpoint"),
                "must be an https:// URL",
            )],
        ),
        fail(
            "tokenExchange with a relative dexTokenEndpoint",
            token_exchange(json!({ "dexTokenEndpoint": "dex/token" })),
            k8s(),
            &[(
                &format!("{base}.dexTokenEndpoint"),
                "must be a valid absolute https:// URL",
            )],
        ),
        fail(
            "tokenExchange without connectorId",
            token_exchange(json!({ "connectorId": null })),
            k8s(),
            &[(&format!("{base}.connectorId"), "is required when enabled")],
        ),
        fail(
            "tokenExchange with an empty connectorId",
            token_exchange(json!({ "connectorId": "" })),
            k8s(),
            &[(&format!("{base}.connectorId"), "is required when enabled")],
        ),
        ok(
            "tokenExchange with an https expectedIssuer",
            token_exchange(json!({ "expectedIssuer": "https://dex.internal.example.com" })),
            k8s(),
        ),
        fail(
            "tokenExchange with an http expectedIssuer",
            token_exchange(json!({ "expectedIssuer": "http://dex.internal.example.com" })),
            k8s(),
            &[(&format!("{base}.expectedIssuer"), "must be an https:// URL")],
        ),
        ok(
            "secret ref in the server's namespace by default",
            token_exchange(json!({ "clientCredentialsSecretRef": { "name": "creds" } })),
            k8s(),
        )
        .named("remote", "team-a"),
        ok(
            "secret ref naming the server's own namespace",
            token_exchange(
                json!({ "clientCredentialsSecretRef": { "name": "creds", "namespace": "team-a" } }),
            ),
            k8s(),
        )
        .named("remote", "team-a"),
        fail(
            "secret ref naming another namespace outside muster's namespace",
            token_exchange(secret_ref("creds", MUSTER_NS)),
            k8s(),
            &[(
                &format!("{base}.clientCredentialsSecretRef.namespace"),
                secret_ns,
            )],
        )
        .named("remote", "team-a"),
        ok(
            "secret ref naming another namespace in muster's namespace",
            token_exchange(secret_ref("creds", "secrets")),
            k8s(),
        )
        .named("remote", MUSTER_NS),
        ok(
            "secret ref namespace rule needs the server's identity",
            token_exchange(secret_ref("creds", "secrets")),
            k8s(),
        ),
        fail(
            "secret ref without name",
            token_exchange(json!({ "clientCredentialsSecretRef": { "clientIdKey": "id" } })),
            k8s(),
            &[(
                &format!("{base}.clientCredentialsSecretRef.name"),
                "is required",
            )],
        ),
    ]);
}

#[test]
fn auth_authorization_server() {
    let base = "spec.auth.authorizationServer";
    let issuer = |i: &str| auth(json!({ "type": "oauth", "authorizationServer": { "issuer": i } }));
    let https = "must be an https:// URL";
    let shape = "must have no trailing slash, query or fragment";
    let together = "authorizationEndpoint and tokenEndpoint must be set together";
    let authz = "https://github.com/login/oauth/authorize";
    let token = "https://github.com/login/oauth/access_token";
    run(vec![
        ok(
            "issuer only",
            issuer("https://github.com/login/oauth"),
            k8s(),
        ),
        ok(
            "every field, as for a GitHub App",
            auth_server(json!({
                "issuer": "https://github.com/apps/muster",
                "authorizationEndpoint": authz,
                "tokenEndpoint": token,
                "expectedIssuer": "https://github.com/login/oauth",
                "revocationEndpoint": "https://github.com/login/oauth/revoke",
                "clientCredentialsSecretRef": { "name": "github-app" },
                "grantScope": "subject",
                "scopes": "",
            })),
            k8s(),
        ),
        fail(
            "issuer missing",
            auth(json!({ "type": "oauth", "authorizationServer": {} })),
            k8s(),
            &[(&format!("{base}.issuer"), "is required")],
        ),
        fail(
            "issuer over http",
            issuer("http://github.com/login/oauth"),
            k8s(),
            &[(&format!("{base}.issuer"), https)],
        ),
        fail(
            "issuer not a URL",
            issuer("github"),
            k8s(),
            &[(
                &format!("{base}.issuer"),
                "must be a valid absolute https:// URL",
            )],
        ),
        fail(
            "issuer with a trailing slash",
            issuer("https://github.com/login/oauth/"),
            k8s(),
            &[(&format!("{base}.issuer"), shape)],
        ),
        fail(
            "issuer with a query",
            issuer("https://issuer.example.com?tenant=a"),
            k8s(),
            &[(&format!("{base}.issuer"), shape)],
        ),
        fail(
            "issuer with a fragment",
            issuer("https://issuer.example.com#a"),
            k8s(),
            &[(&format!("{base}.issuer"), shape)],
        ),
        fail(
            "authorizationEndpoint without tokenEndpoint",
            auth_server(json!({ "authorizationEndpoint": authz })),
            k8s(),
            &[(&format!("{base}.authorizationEndpoint"), together)],
        ),
        fail(
            "tokenEndpoint without authorizationEndpoint",
            auth_server(json!({ "tokenEndpoint": token })),
            k8s(),
            &[(&format!("{base}.authorizationEndpoint"), together)],
        ),
        ok(
            "authorizationEndpoint and tokenEndpoint together",
            auth_server(json!({ "authorizationEndpoint": authz, "tokenEndpoint": token })),
            k8s(),
        ),
        fail(
            "authorizationEndpoint over http",
            auth_server(json!({
                "authorizationEndpoint": "http://github.com/login/oauth/authorize",
                "tokenEndpoint": token,
            })),
            k8s(),
            &[(&format!("{base}.authorizationEndpoint"), https)],
        ),
        fail(
            "tokenEndpoint over http",
            auth_server(json!({
                "authorizationEndpoint": authz,
                "tokenEndpoint": "http://github.com/login/oauth/access_token",
            })),
            k8s(),
            &[(&format!("{base}.tokenEndpoint"), https)],
        ),
        fail(
            "expectedIssuer without endpoints",
            auth_server(json!({ "expectedIssuer": "https://github.com/login/oauth" })),
            k8s(),
            &[(
                &format!("{base}.expectedIssuer"),
                "needs authorizationEndpoint and tokenEndpoint",
            )],
        ),
        fail(
            "expectedIssuer with only authorizationEndpoint",
            auth_server(json!({
                "expectedIssuer": "https://github.com/login/oauth",
                "authorizationEndpoint": authz,
            })),
            k8s(),
            &[
                (&format!("{base}.authorizationEndpoint"), together),
                (
                    &format!("{base}.expectedIssuer"),
                    "needs authorizationEndpoint and tokenEndpoint",
                ),
            ],
        ),
        ok(
            "expectedIssuer with both endpoints",
            auth_server(json!({
                "expectedIssuer": "https://github.com/login/oauth",
                "authorizationEndpoint": authz,
                "tokenEndpoint": token,
            })),
            k8s(),
        ),
        fail(
            "expectedIssuer over http",
            auth_server(json!({
                "expectedIssuer": "http://github.com/login/oauth",
                "authorizationEndpoint": authz,
                "tokenEndpoint": token,
            })),
            k8s(),
            &[(&format!("{base}.expectedIssuer"), https)],
        ),
        ok(
            "revocationEndpoint over https",
            auth_server(json!({ "revocationEndpoint": "https://gitlab.example.com/oauth/revoke" })),
            k8s(),
        ),
        fail(
            "revocationEndpoint over http",
            auth_server(json!({ "revocationEndpoint": "http://gitlab.example.com/oauth/revoke" })),
            k8s(),
            &[(&format!("{base}.revocationEndpoint"), https)],
        ),
        fail(
            "secret ref without name",
            auth_server(json!({ "clientCredentialsSecretRef": { "namespace": "team-a" } })),
            k8s(),
            &[(
                &format!("{base}.clientCredentialsSecretRef.name"),
                "is required",
            )],
        )
        .named("gh", "team-a"),
        fail(
            "secret ref naming another namespace outside muster's namespace",
            auth_server(
                json!({ "clientCredentialsSecretRef": { "name": "gh", "namespace": MUSTER_NS } }),
            ),
            k8s(),
            &[(
                &format!("{base}.clientCredentialsSecretRef.namespace"),
                "may name only its own namespace",
            )],
        )
        .named("gh", "team-a"),
        ok(
            "secret ref naming another namespace in muster's namespace",
            auth_server(
                json!({ "clientCredentialsSecretRef": { "name": "gh", "namespace": "secrets" } }),
            ),
            k8s(),
        )
        .named("gh", MUSTER_NS),
    ]);
}

#[test]
fn every_violation_is_reported_at_once() {
    let def = parse(&json!({
        "type": "streamable-http",
        "url": "https://user:secret@mcp.example.com/mcp",
        "toolPrefix": "9lives",
        "description": chars('d', 501),
        "command": "npx",
        "env": { "TOKEN": "x" },
        "timeout": 0,
        "headers": { "Authorization": "Bearer abc" },
    }));
    let errs = def.validate(&k8s()).expect_err("six rules are broken");
    assert!(errs.len() >= 5, "{errs}");
    for (path, fragment) in [
        ("spec.url", "must not contain a user name or password"),
        ("spec.toolPrefix", PREFIX_PATTERN),
        ("spec.description", "must be at most 500 characters"),
        ("spec.env", "refused on a remote server"),
        ("spec.timeout", "must be between 1 and 300 seconds"),
        ("spec.headers.Authorization", "must not carry a credential"),
    ] {
        assert!(
            errs.contains(path, fragment),
            "missing {path}: {fragment} in {errs}"
        );
    }
    assert_eq!(errs.len(), 6, "{errs}");
}

#[test]
fn violation_display_is_path_colon_rule() {
    let errs = parse(&with(remote(), json!({ "toolPrefix": "9lives" })))
        .validate(&fs())
        .expect_err("bad prefix");
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs.violations()[0].to_string(),
        "spec.toolPrefix: must match ^[a-zA-Z][a-zA-Z0-9_-]*$"
    );
    assert_eq!(
        errs.to_string(),
        "spec.toolPrefix: must match ^[a-zA-Z][a-zA-Z0-9_-]*$"
    );

    let errs = parse(&json!({ "type": "foo" }))
        .validate(&fs())
        .expect_err("bad type");
    assert_eq!(
        errs.messages(),
        ["spec.type: unsupported MCP server type: foo (supported: stdio, streamable-http, sse)"]
    );

    let errs = parse(&json!({ "type": "stdio" }))
        .validate(&fs())
        .expect_err("no command");
    assert_eq!(
        errs.messages(),
        ["spec.command: command is required for stdio type"]
    );

    let errs = parse(&json!({ "type": "sse", "timeout": 0 }))
        .validate(&fs())
        .expect_err("no url");
    assert_eq!(
        errs.to_string(),
        "spec.url: url is required for streamable-http and sse types; \
         spec.timeout: must be between 1 and 300 seconds"
    );

    assert_eq!(
        Violation::new("", "workflow must have at least one step").to_string(),
        "workflow must have at least one step"
    );
}

#[test]
fn validated_spec_carries_the_definition() {
    let def = parse(&json!({
        "type": "sse",
        "url": "https://mcp.example.com/sse",
        "toolPrefix": "remote",
        "family": { "name": "kubernetes", "instanceArg": "management_cluster" },
        "description": "SSE server",
        "autoStart": true,
        "timeout": 60,
        "progress": { "maxDuration": 600 },
        "headers": { "Accept": "text/event-stream" },
        "headersFrom": [header_from("Authorization")],
        "auth": { "type": "oauth", "forwardToken": true },
        "suspended": true,
        "restartRequestedAt": "2026-09-21T12:43:00Z",
    }));
    let spec = def.validate(&k8s()).expect("valid");
    assert_eq!(spec.server_type(), ServerType::Sse);
    assert_eq!(spec.tool_prefix.as_deref(), Some("remote"));
    assert_eq!(
        spec.family.as_ref().map(|f| f.instance_arg.as_str()),
        Some("management_cluster")
    );
    assert!(spec.auto_start);
    assert!(spec.suspended);
    assert_eq!(spec.timeout(), Duration::from_secs(60));
    assert_eq!(spec.progress_max_duration(), Duration::from_secs(600));
    assert!(spec.restart_requested_at.is_some());
    let Transport::Sse(remote) = &spec.transport else {
        panic!("sse transport expected")
    };
    assert_eq!(remote.url, "https://mcp.example.com/sse");
    assert_eq!(
        remote.headers,
        BTreeMap::from([("Accept".to_owned(), "text/event-stream".to_owned())])
    );
    assert_eq!(remote.headers_from.len(), 1);
    let auth = remote.auth.as_ref().expect("auth");
    assert_eq!(auth.type_, Some(AuthType::Oauth));
    assert!(auth.is_per_session());

    // Converting back gives the definition (every default left unset).
    assert_eq!(McpServerDefinition::from(spec), def);
}

#[test]
fn defaults_of_the_validated_spec() {
    let spec = parse(&stdio()).validate(&fs()).expect("valid");
    assert_eq!(spec.timeout(), Duration::from_secs(30));
    assert_eq!(spec.progress_max_duration(), Duration::from_secs(3600));
    assert!(!spec.auto_start);
    assert!(!spec.suspended);
    let Transport::Stdio(stdio) = &spec.transport else {
        panic!("stdio transport expected")
    };
    assert_eq!(stdio.command, "npx");
    assert!(stdio.args.is_empty() && stdio.env.is_empty());
}

#[test]
fn deserializing_the_validated_spec_validates() {
    let spec: McpServerSpec = serde_json::from_value(stdio()).expect("valid stdio spec");
    assert_eq!(spec.server_type(), ServerType::Stdio);

    let err = serde_json::from_value::<McpServerSpec>(json!({ "type": "streamable-http" }))
        .expect_err("url missing");
    assert!(
        err.to_string()
            .contains("url is required for streamable-http and sse types"),
        "{err}"
    );

    // Deserialization applies the rules every mode shares; the mode-dependent ones need a
    // context.
    let spec: McpServerSpec = serde_json::from_value(with(
        remote(),
        json!({ "headers": { "Authorization": "Bearer abc" } }),
    ))
    .expect("credential headers are allowed in filesystem mode");
    assert!(spec.validate(&fs()).is_ok());
    let errs = spec
        .validate(&k8s())
        .expect_err("refused in kubernetes mode");
    assert!(
        errs.contains("spec.headers.Authorization", "must not carry a credential"),
        "{errs}"
    );

    let spec = McpServerSpec::stdio("npx", ["server".to_owned()]);
    assert!(spec.validate(&fs()).is_ok());
    let errs = spec
        .validate(&k8s())
        .expect_err("stdio refused in kubernetes mode");
    assert!(errs.contains(
        "spec.type",
        "stdio servers are not supported in Kubernetes mode"
    ));
}

#[test]
fn enumerated_fields_refuse_unknown_values_when_parsed() {
    for bad in [
        auth(json!({ "type": "basic" })),
        json!({
            "type": "streamable-http",
            "url": "https://x.example.com",
            "auth": {
                "type": "oauth",
                "authorizationServer": { "issuer": "https://x.example.com", "grantScope": "team" },
            },
        }),
        json!({ "type": "stdio", "command": "npx", "restartRequestedAt": "yesterday" }),
    ] {
        assert!(
            serde_json::from_value::<McpServerDefinition>(bad.clone()).is_err(),
            "{bad}"
        );
    }
    let def = parse(&auth_server(json!({ "grantScope": "subject" })));
    let grant_scope = def
        .auth
        .and_then(|a| a.authorization_server)
        .and_then(|s| s.grant_scope);
    assert_eq!(grant_scope, Some(GrantScope::Subject));
}

#[test]
fn what_filesystem_mode_and_every_mode_cannot_honour_is_named() {
    let spec = |def: Value| McpServerSpec::try_from(parse(&def)).expect("a valid spec");
    let forwarding = spec(auth(
        json!({ "forwardToken": true, "providerApps": ["github"] }),
    ));
    assert!(
        forwarding
            .unsupported_in_any_mode()
            .contains("spec.auth.providerApps", "not supported by this muster yet")
    );
    assert!(
        forwarding
            .unsupported_in_filesystem_mode()
            .contains("spec.auth.providerApps", "not supported by this muster yet")
    );
    // What filesystem mode now honours is not named.
    for honoured in [
        auth_server(json!({
            "grantScope": "subject",
            "revocationEndpoint": "https://github.com/login/oauth/revoke",
        })),
        with(
            auth_server(json!({})),
            json!({ "auth": { "forwardIdentity": true, "requiredAudiences": ["k8s"] } }),
        ),
    ] {
        let spec = spec(honoured.clone());
        assert!(
            spec.unsupported_in_filesystem_mode().is_empty(),
            "{honoured}"
        );
        assert!(spec.unsupported_in_any_mode().is_empty(), "{honoured}");
    }
    assert!(
        spec(token_exchange(json!({})))
            .unsupported_in_filesystem_mode()
            .contains(
                "spec.auth.tokenExchange",
                "not supported in filesystem mode"
            )
    );
}
