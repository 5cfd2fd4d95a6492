//! The real `kubectl` against the fake Kubernetes API server: discovery, `apply` (client-side
//! and server-side), `get` with printer columns and `-o yaml`, `patch`, `delete`,
//! `apply --dry-run=server`, and CRD validation errors as kubectl prints them.

use muster_tests::kube_fake::{FakeApiServer, FakeConfig, Kubectl};

const CRD: &str = include_str!("../fixtures/kube/widgets-crd.yaml");

fn setup() -> (FakeApiServer, Kubectl) {
    let server = FakeApiServer::start(FakeConfig::default()).expect("server starts");
    let kubectl = Kubectl::new(&server).expect("kubectl");
    (server, kubectl)
}

const GOOD: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: github
spec:
  type: streamable-http
  url: https://api.github.com/mcp
";

const CREDENTIAL_HEADER: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: leaky
spec:
  type: streamable-http
  url: https://api.example.com/mcp
  headers:
    Authorization: Bearer abc
";

#[test]
fn kubectl_applies_a_crd_then_gets_patches_and_deletes_resources() {
    let (server, kubectl) = setup();
    let out = kubectl
        .run_with_input(&["apply", "-f", "-"], CRD)
        .expect("kubectl runs")
        .ok()
        .expect("CRD applied");
    assert_eq!(
        out.trim(),
        "customresourcedefinition.apiextensions.k8s.io/mcpservers.muster.giantswarm.io created"
    );
    kubectl
        .run(&[
            "wait",
            "--for=condition=Established",
            "crd/mcpservers.muster.giantswarm.io",
            "--timeout=10s",
        ])
        .expect("kubectl runs")
        .ok()
        .expect("established");

    let out = kubectl
        .run_with_input(&["apply", "-f", "-"], GOOD)
        .expect("kubectl runs")
        .ok()
        .expect("applied");
    assert_eq!(out.trim(), "mcpserver.muster.giantswarm.io/github created");
    let again = kubectl
        .run_with_input(&["apply", "-f", "-"], GOOD)
        .expect("kubectl runs")
        .ok()
        .expect("applied");
    assert_eq!(
        again.trim(),
        "mcpserver.muster.giantswarm.io/github unchanged"
    );

    // status written through the API shows in the printer columns
    let body = r#"{"status":{"state":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;
    kubectl
        .run(&[
            "patch",
            "mcps",
            "github",
            "--subresource=status",
            "--type=merge",
            "-p",
            body,
        ])
        .expect("kubectl runs")
        .ok()
        .expect("status patched");
    let table = kubectl
        .run(&["get", "mcps"])
        .expect("kubectl runs")
        .ok()
        .expect("listed");
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        ["NAME", "TYPE", "STATE", "READY", "AGE"],
        "{table}"
    );
    assert_eq!(
        &lines[1][..4],
        ["github", "streamable-http", "Running", "True"],
        "{table}"
    );
    let wide = kubectl
        .run(&["get", "mcpservers.muster.giantswarm.io", "-o", "wide"])
        .expect("runs")
        .ok()
        .expect("wide");
    assert!(
        wide.lines().next().is_some_and(|h| h.contains("TIMEOUT")),
        "priority-1 column in -o wide: {wide}"
    );
    assert!(wide.contains(" 30 "), "the defaulted timeout: {wide}");
    let by_category = kubectl
        .run(&["get", "muster"])
        .expect("runs")
        .ok()
        .expect("category");
    assert!(by_category.contains("github"), "{by_category}");

    let yaml = kubectl
        .run(&["get", "mcps", "github", "-o", "yaml"])
        .expect("runs")
        .ok()
        .expect("yaml");
    assert!(
        yaml.contains("apiVersion: muster.giantswarm.io/v1alpha1"),
        "{yaml}"
    );
    assert!(yaml.contains("state: Running"), "{yaml}");
    assert!(yaml.contains("generation: 1"), "{yaml}");

    kubectl
        .run(&[
            "patch",
            "mcps",
            "github",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"timeout":120}}"#,
        ])
        .expect("runs")
        .ok()
        .expect("patched");
    let timeout = kubectl
        .run(&[
            "get",
            "mcps",
            "github",
            "-o",
            "jsonpath={.spec.timeout} {.metadata.generation}",
        ])
        .expect("runs")
        .ok()
        .expect("jsonpath");
    assert_eq!(timeout, "120 2");

    let out = kubectl
        .run(&["delete", "mcps", "github"])
        .expect("runs")
        .ok()
        .expect("deleted");
    assert_eq!(
        out.trim(),
        "mcpserver.muster.giantswarm.io \"github\" deleted"
    );
    let none = kubectl.run(&["get", "mcps"]).expect("runs");
    assert!(
        none.success
            && none
                .stderr
                .contains("No resources found in default namespace."),
        "{none:?}"
    );
    assert!(server.resource_version() > 0);
}

#[test]
fn kubectl_sees_crd_rules_refuse_a_credential_header() {
    let (_server, kubectl) = setup();
    kubectl
        .run_with_input(&["apply", "-f", "-"], CRD)
        .expect("runs")
        .ok()
        .expect("CRD applied");

    let dry = kubectl
        .run_with_input(&["apply", "--dry-run=server", "-f", "-"], CREDENTIAL_HEADER)
        .expect("runs");
    assert!(!dry.success);
    assert!(
        dry.stderr.contains(
            "The MCPServer \"leaky\" is invalid: spec.headers: Forbidden: credential headers must come from a Secret (headersFrom)"
        ),
        "{}",
        dry.stderr
    );
    let applied = kubectl
        .run_with_input(&["apply", "-f", "-"], CREDENTIAL_HEADER)
        .expect("runs");
    assert!(
        !applied.success && applied.stderr.contains("spec.headers: Forbidden"),
        "{}",
        applied.stderr
    );
    let ssa = kubectl
        .run_with_input(&["apply", "--server-side", "-f", "-"], CREDENTIAL_HEADER)
        .expect("runs");
    assert!(
        !ssa.success && ssa.stderr.contains("spec.headers: Forbidden"),
        "{}",
        ssa.stderr
    );

    // a good one passes a server dry run and is not stored
    let ok = kubectl
        .run_with_input(&["apply", "--dry-run=server", "-f", "-"], GOOD)
        .expect("runs")
        .ok()
        .expect("dry");
    assert_eq!(
        ok.trim(),
        "mcpserver.muster.giantswarm.io/github created (server dry run)"
    );
    let none = kubectl.run(&["get", "mcps", "github"]).expect("runs");
    assert!(
        !none.success && none.stderr.contains("NotFound"),
        "{none:?}"
    );

    // unknown fields: kubectl asks for strict field validation
    let unknown = GOOD.replace("  type:", "  bogus: 1\n  type:");
    let strict = kubectl
        .run_with_input(&["apply", "-f", "-"], &unknown)
        .expect("runs");
    assert!(
        !strict.success && strict.stderr.contains("unknown field \"spec.bogus\""),
        "{}",
        strict.stderr
    );
}

#[test]
fn kubectl_server_side_apply_and_builtins() {
    let (_server, kubectl) = setup();
    kubectl
        .run_with_input(&["apply", "--server-side", "-f", "-"], CRD)
        .expect("runs")
        .ok()
        .expect("CRD applied");
    let out = kubectl
        .run_with_input(&["apply", "--server-side", "-f", "-"], GOOD)
        .expect("runs")
        .ok()
        .expect("applied");
    assert_eq!(
        out.trim(),
        "mcpserver.muster.giantswarm.io/github serverside-applied"
    );
    let managed = kubectl
        .run(&[
            "get",
            "mcps",
            "github",
            "--show-managed-fields",
            "-o",
            "jsonpath={.metadata.managedFields[0].manager}",
        ])
        .expect("runs")
        .ok()
        .expect("managed");
    assert_eq!(managed, "kubectl");

    // secrets: create, list with a selector, strategic-merge client-side apply
    kubectl
        .run(&[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=token=abc",
            "-n",
            "default",
        ])
        .expect("runs")
        .ok()
        .expect("secret");
    kubectl
        .run(&["label", "secret", "creds", "app=muster"])
        .expect("runs")
        .ok()
        .expect("labelled");
    let listed = kubectl
        .run(&["get", "secrets", "-l", "app=muster"])
        .expect("runs")
        .ok()
        .expect("listed");
    let header: Vec<&str> = listed
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "TYPE", "DATA", "AGE"]);
    assert!(
        listed.contains("creds") && listed.contains("Opaque"),
        "{listed}"
    );
    let token = kubectl
        .run(&["get", "secret", "creds", "-o", "jsonpath={.data.token}"])
        .expect("runs")
        .ok()
        .expect("token");
    assert_eq!(token, "YWJj");

    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"1\"\n";
    kubectl
        .run_with_input(&["apply", "-f", "-"], cm)
        .expect("runs")
        .ok()
        .expect("cm");
    let cm2 = cm.replace("a: \"1\"", "a: \"2\"\n  b: \"3\"");
    let out = kubectl
        .run_with_input(&["apply", "-f", "-"], &cm2)
        .expect("runs")
        .ok()
        .expect("cm");
    assert_eq!(out.trim(), "configmap/settings configured");
    let data = kubectl
        .run(&["get", "cm", "settings", "-o", "jsonpath={.data}"])
        .expect("runs")
        .ok()
        .expect("data");
    assert_eq!(data, r#"{"a":"2","b":"3"}"#);

    kubectl
        .run(&["create", "namespace", "team-a"])
        .expect("runs")
        .ok()
        .expect("namespace");
    let ns = kubectl
        .run(&["get", "ns", "team-a"])
        .expect("runs")
        .ok()
        .expect("ns");
    assert!(ns.contains("Active"), "{ns}");
    kubectl
        .run(&["delete", "ns", "team-a"])
        .expect("runs")
        .ok()
        .expect("deleted");

    let crds = kubectl
        .run(&["get", "crds"])
        .expect("runs")
        .ok()
        .expect("crds");
    assert!(crds.contains("mcpservers.muster.giantswarm.io"), "{crds}");
    kubectl
        .run(&["delete", "crd", "mcpservers.muster.giantswarm.io"])
        .expect("runs")
        .ok()
        .expect("CRD deleted");
    let gone = kubectl.run(&["get", "mcps"]).expect("runs");
    assert!(
        !gone.success,
        "the resource type is gone with its CRD: {gone:?}"
    );
}

#[test]
fn kubectl_uses_aggregated_discovery_or_falls_back_to_per_group_documents() {
    let (server, kubectl) = setup();
    let out = kubectl
        .run(&["api-resources"])
        .expect("runs")
        .ok()
        .expect("listed");
    assert!(
        out.contains("leases") && out.contains("customresourcedefinitions"),
        "{out}"
    );
    let asked = server.requests();
    assert!(
        asked.iter().any(|r| r.starts_with("GET /apis?")),
        "{asked:?}"
    );
    assert!(
        !asked
            .iter()
            .any(|r| r.starts_with("GET /apis/coordination.k8s.io/v1")),
        "aggregated: {asked:?}"
    );

    let legacy = FakeApiServer::start(FakeConfig {
        aggregated_discovery: false,
        ..FakeConfig::default()
    })
    .expect("server starts");
    let kubectl = Kubectl::new(&legacy).expect("kubectl");
    let out = kubectl
        .run(&["api-resources"])
        .expect("runs")
        .ok()
        .expect("listed");
    assert!(out.contains("leases"), "{out}");
    assert!(
        legacy
            .requests()
            .iter()
            .any(|r| r.starts_with("GET /apis/coordination.k8s.io/v1")),
        "per-group documents"
    );
}
