//! Every concrete YAML example of the CRD reference, copied verbatim under
//! `tests/fixtures/seed/`: each parses as `Object<K>`, validates, and survives a YAML round
//! trip. The templates with `<...>` placeholders are not concrete documents and are not copied.

use std::collections::BTreeSet;

use muster_core::resource::mcp_server::{
    AuthType, McpServerDefinition, ServerType, TokenExchange, Transport,
};
use muster_core::resource::workflow::WorkflowSpec;
use muster_core::{API_VERSION, McpServer, Meta, Object, ValidationContext, Workflow};
use serde::Deserialize;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/seed");

/// The MCPServer examples and their types.
const MCP_SERVERS: [(&str, ServerType); 9] = [
    ("git-tools", ServerType::Stdio),
    ("python-tools", ServerType::Stdio),
    ("api-tools", ServerType::StreamableHttp),
    ("sse-tools", ServerType::Sse),
    ("mcp-kubernetes", ServerType::StreamableHttp),
    ("two-hats", ServerType::StreamableHttp),
    ("remote-cluster-k8s", ServerType::StreamableHttp),
    (
        "remote-cluster-k8s-authenticated",
        ServerType::StreamableHttp,
    ),
    ("private-cluster-k8s", ServerType::StreamableHttp),
];

/// The complete Workflow examples.
const WORKFLOWS: [&str; 1] = ["database-migration"];

/// Workflow snippets of the reference that are a part of a document: the output-template
/// example (a `spec:` block) and the error-handling one (a `steps:` block).
const WORKFLOW_SNIPPETS: [&str; 2] = ["workflow-output-template", "workflow-error-handling"];

/// The example that names a Secret in the namespace `muster` from an MCPServer in `default`.
const CROSS_NAMESPACE_EXAMPLE: &str = "remote-cluster-k8s-authenticated";

/// The parts of a document validation needs, with the spec in its document form.
#[derive(Deserialize)]
struct Document {
    metadata: Meta,
    spec: McpServerDefinition,
}

fn read(name: &str) -> String {
    let path = format!("{FIXTURES}/{name}.yaml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn mcp_server(name: &str) -> Object<McpServer> {
    serde_norway::from_str(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn workflow(name: &str) -> Object<Workflow> {
    serde_norway::from_str(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_fixture_is_checked() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(FIXTURES)
        .expect("fixture directory")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let checked: BTreeSet<String> = MCP_SERVERS
        .iter()
        .map(|(name, _)| *name)
        .chain(WORKFLOWS)
        .chain(WORKFLOW_SNIPPETS)
        .map(|name| format!("{name}.yaml"))
        .collect();
    assert_eq!(on_disk, checked);
}

#[test]
fn mcp_server_examples_parse_and_validate() {
    for (name, server_type) in MCP_SERVERS {
        let obj = mcp_server(name);
        assert_eq!(obj.api_version, API_VERSION, "{name}");
        assert_eq!(obj.kind, "MCPServer", "{name}");
        assert_eq!(obj.name(), name);
        assert_eq!(obj.metadata.namespace_or_default(), "default", "{name}");
        assert_eq!(obj.spec.server_type(), server_type, "{name}");
        assert!(obj.status.is_none(), "{name}");

        let doc: Document = serde_norway::from_str(&read(name)).expect("document form parses");
        let namespace = doc.metadata.namespace_or_default();
        let contexts = if server_type.is_remote() {
            vec![
                ValidationContext::filesystem(),
                ValidationContext::kubernetes("default"),
                ValidationContext::kubernetes("muster"),
            ]
        } else {
            vec![ValidationContext::filesystem()]
        };
        for ctx in contexts {
            let result = doc.spec.validate_named(name, namespace, &ctx);
            if name == CROSS_NAMESPACE_EXAMPLE && ctx == ValidationContext::kubernetes("muster") {
                // Checked in `an_example_names_a_secret_of_muster_s_namespace`.
                continue;
            }
            let spec = result.unwrap_or_else(|e| panic!("{name} in {ctx:?}: {e}"));
            assert_eq!(
                spec, obj.spec,
                "{name}: document form and validated form agree"
            );
        }

        let yaml = serde_norway::to_string(&obj).expect("serializes");
        let back: Object<McpServer> = serde_norway::from_str(&yaml).expect("parses back");
        assert_eq!(back, obj, "{name}: YAML round trip");
    }
}

#[test]
fn stdio_examples_are_refused_in_kubernetes_mode() {
    for (name, _) in MCP_SERVERS.iter().filter(|(_, t)| !t.is_remote()) {
        let doc: Document = serde_norway::from_str(&read(name)).expect("parses");
        let errs = doc
            .spec
            .validate_named(name, "default", &ValidationContext::kubernetes("default"))
            .expect_err("stdio is refused in Kubernetes mode");
        assert_eq!(errs.len(), 1, "{name}: {errs}");
        assert!(
            errs.contains("spec.type", "not supported in Kubernetes mode"),
            "{name}: {errs}"
        );
    }
}

/// The example's MCPServer lives in `default` and names a Secret in `muster`, the namespace
/// the reference runs muster in. The reference's own rule ("an MCPServer outside muster's
/// namespace may name only its own namespace; muster refuses the server otherwise") refuses it
/// there; it is valid only where muster itself runs in `default`.
#[test]
fn an_example_names_a_secret_of_muster_s_namespace() {
    let doc: Document = serde_norway::from_str(&read(CROSS_NAMESPACE_EXAMPLE)).expect("parses");
    let errs = doc
        .spec
        .validate_named(
            CROSS_NAMESPACE_EXAMPLE,
            "default",
            &ValidationContext::kubernetes("muster"),
        )
        .expect_err("refused outside muster's namespace");
    assert_eq!(
        errs.messages(),
        [
            "spec.auth.tokenExchange.clientCredentialsSecretRef.namespace: an MCPServer outside \
          muster's namespace may name only its own namespace"
        ]
    );
    assert!(
        doc.spec
            .validate_named(
                CROSS_NAMESPACE_EXAMPLE,
                "muster",
                &ValidationContext::kubernetes("muster")
            )
            .is_ok(),
        "valid for an MCPServer in muster's namespace"
    );
}

#[test]
fn mcp_server_examples_content() {
    let git = mcp_server("git-tools");
    assert_eq!(
        git.metadata
            .annotations
            .get("ui.giantswarm.io/display-name")
            .map(String::as_str),
        Some("Git Tools")
    );
    assert!(git.spec.auto_start);
    let Transport::Stdio(stdio) = &git.spec.transport else {
        panic!("git-tools is stdio")
    };
    assert_eq!(stdio.command, "npx");
    assert_eq!(stdio.args, ["@modelcontextprotocol/server-git"]);
    assert_eq!(
        stdio.env.get("GIT_ROOT").map(String::as_str),
        Some("/workspace")
    );

    let python = mcp_server("python-tools");
    assert_eq!(python.spec.tool_prefix.as_deref(), Some("py"));
    let Transport::Stdio(stdio) = &python.spec.transport else {
        panic!("python-tools is stdio")
    };
    assert_eq!(stdio.args, ["-m", "mcp_server.custom"]);
    assert_eq!(stdio.env.get("DEBUG").map(String::as_str), Some("true"));

    let api = mcp_server("api-tools");
    let remote = api.spec.transport.remote().expect("remote");
    assert_eq!(remote.url, "https://api.example.com/mcp");
    assert_eq!(
        remote.headers.get("X-API-Version").map(String::as_str),
        Some("v1")
    );
    let from = &remote.headers_from[0];
    assert_eq!(from.name, "Authorization");
    assert_eq!(
        (
            from.value_from.type_.as_str(),
            from.value_from.name.as_str(),
            from.value_from.key.as_str()
        ),
        ("Secret", "api-tools-token", "authorization")
    );
    assert_eq!(api.spec.timeout, Some(30));

    let sse = mcp_server("sse-tools");
    let remote = sse.spec.transport.remote().expect("remote");
    assert_eq!(
        remote.headers.get("Accept").map(String::as_str),
        Some("text/event-stream")
    );
    assert_eq!(sse.spec.timeout().as_secs(), 60);

    let k8s = mcp_server("mcp-kubernetes");
    let auth = k8s
        .spec
        .transport
        .remote()
        .and_then(|r| r.auth.as_ref())
        .expect("auth");
    assert_eq!(auth.type_, Some(AuthType::Oauth));
    assert!(auth.forward_token && auth.is_per_session());

    let two_hats = mcp_server("two-hats");
    let auth = two_hats
        .spec
        .transport
        .remote()
        .and_then(|r| r.auth.as_ref())
        .expect("auth");
    assert!(auth.forward_identity && !auth.is_per_session());
    let server = auth
        .authorization_server
        .as_ref()
        .expect("authorizationServer");
    assert_eq!(server.issuer, "https://github.com/login/oauth");
    assert_eq!(server.scopes.as_deref(), Some("repo"));
    assert_eq!(auth.required_audiences, ["dex-k8s-authenticator"]);

    let exchange = |name: &str| -> TokenExchange {
        let obj = mcp_server(name);
        let auth = obj
            .spec
            .transport
            .remote()
            .and_then(|r| r.auth.clone())
            .expect("auth");
        assert!(auth.is_per_session(), "{name}");
        auth.token_exchange.expect("tokenExchange")
    };
    let te = exchange("remote-cluster-k8s");
    assert_eq!(te.connector_id.as_deref(), Some("local-cluster-dex"));
    assert_eq!(
        te.effective_expected_issuer().as_deref(),
        Some("https://dex.remote-cluster.example.com")
    );
    let te = exchange("remote-cluster-k8s-authenticated");
    let secret = te
        .client_credentials_secret_ref
        .as_ref()
        .expect("secret ref");
    assert_eq!(secret.name, "remote-cluster-token-exchange-credentials");
    assert_eq!(secret.namespace.as_deref(), Some("muster"));
    assert_eq!(
        (secret.client_id_key(), secret.client_secret_key()),
        ("client-id", "client-secret")
    );
    let te = exchange("private-cluster-k8s");
    assert_eq!(
        te.effective_expected_issuer().as_deref(),
        Some("https://dex.private-cluster.internal.example.com")
    );
    assert_eq!(
        te.scopes,
        None,
        "default scopes apply: {}",
        TokenExchange::DEFAULT_SCOPES
    );
}

#[test]
fn database_migration_example() {
    let obj = workflow("database-migration");
    assert_eq!(obj.api_version, API_VERSION);
    assert_eq!(obj.kind, "Workflow");
    assert_eq!(obj.name(), "database-migration");
    let spec = &obj.spec;
    assert_eq!(spec.validate(), Ok(()));

    let ids: Vec<&str> = spec.steps.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "check_database",
            "backup_database",
            "run_migration",
            "verify_migration"
        ]
    );
    assert_eq!(spec.on_failure.len(), 1);
    assert_eq!(spec.args["database_name"].type_.as_deref(), Some("string"));
    assert!(spec.args["database_name"].required);
    assert_eq!(spec.args["dry_run"].default, Some(serde_json::json!(false)));
    let condition = spec.steps[1].condition.as_ref().expect("condition");
    assert_eq!(condition.from_step.as_deref(), Some("check_database"));
    let expect = condition.expect.as_ref().expect("expect");
    assert_eq!(expect.success, Some(true));
    assert_eq!(
        expect.json_path.as_ref().map(|p| p["status"].clone()),
        Some("connected".into())
    );

    assert_eq!(
        spec.referenced_tools(),
        [
            "postgres_backup",
            "postgres_migrate",
            "postgres_restore",
            "postgres_status",
            "postgres_verify"
        ]
    );
    let status = spec.computed_status();
    assert!(status.valid && status.validation_errors.is_empty());
    assert_eq!(status.step_count, 4);
    // The example still uses the deprecated `store`.
    assert_eq!(
        spec.warnings(),
        [
            "spec.steps[0] (check_database): store is deprecated, use output",
            "spec.steps[1] (backup_database): store is deprecated, use output",
            "spec.steps[2] (run_migration): store is deprecated, use output",
        ]
    );

    let yaml = serde_norway::to_string(&obj).expect("serializes");
    let back: Object<Workflow> = serde_norway::from_str(&yaml).expect("parses back");
    assert_eq!(back, obj);
}

#[test]
fn workflow_snippets() {
    #[derive(Deserialize)]
    struct SpecOnly {
        spec: WorkflowSpec,
    }

    let output: SpecOnly =
        serde_norway::from_str(&read("workflow-output-template")).expect("parses");
    let spec = output.spec;
    assert_eq!(spec.validate(), Ok(()));
    assert!(spec.warnings().is_empty());
    assert_eq!(spec.referenced_tools(), ["x_kubernetes_list"]);
    let template = spec.output.as_ref().expect("output template");
    assert_eq!(
        template.keys().collect::<Vec<_>>(),
        ["cluster", "notRunning", "backoffCount"]
    );
    assert_eq!(
        spec.steps[0].args.as_ref().map(|a| a["kind"].clone()),
        Some("Pod".into())
    );

    let spec: WorkflowSpec =
        serde_norway::from_str(&read("workflow-error-handling")).expect("parses");
    assert_eq!(spec.validate(), Ok(()));
    assert!(spec.steps[0].allow_failure);
    let condition = spec.steps[1].condition.as_ref().expect("condition");
    assert_eq!(condition.from_step.as_deref(), Some("risky_operation"));
    assert_eq!(
        condition.expect_not.as_ref().and_then(|e| e.success),
        Some(true)
    );
    assert!(condition.expect.is_none());
}
