//! The `muster` binary, run as a user runs it.
//!
//! The schema test is a golden test: run it with `BLESS=1` to rewrite the committed files in
//! `docs/reference/schemas/` after an intended change, then review the diff.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

const SCHEMA_FILES: [&str; 3] = [
    "config.schema.json",
    "mcpserver.schema.json",
    "workflow.schema.json",
];

const STDIO_SERVER: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: everything
spec:
  type: stdio
  command: npx
  args: ['-y', '@modelcontextprotocol/server-everything']
  autoStart: true
";

const REMOTE_WITH_ENV: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: remote
spec:
  type: streamable-http
  url: https://mcp.example.com/mcp
  env:
    API_TOKEN: secret
";

const SYNTAX_ERROR: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
spec:
  type: stdio
 command: npx
";

const FLAT: &str = "type: stdio
command: npx
";

const WORKFLOW: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: deploy
spec:
  description: Deploy an app to many clusters
  args:
    clusters:
      type: array
      required: true
  steps:
    - id: check
      tool: x_kubernetes_version
    - id: deploy
      condition:
        fromStep: check
        expect:
          success: true
      forEach:
        items: '{{ .input.clusters }}'
        as: cluster
        parallelism: 2
        steps:
          - id: apply
            tool: x_kubernetes_apply
            args:
              cluster: '{{ .cluster }}'
";

const DUPLICATE_STEP: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: dup
spec:
  steps:
    - id: a
      tool: x_one
    - id: a
      tool: x_two
";

fn muster(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_muster"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("the muster binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn config_dir(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (rel, text) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(path, text).expect("a written file");
    }
    dir
}

fn validate(dir: &TempDir, extra: &[&str]) -> Output {
    let path = dir.path().to_str().expect("a UTF-8 path");
    let mut args = vec!["validate", "--config-path", path];
    args.extend_from_slice(extra);
    muster(&args)
}

fn committed_schemas() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/schemas")
}

#[test]
fn schemas_match_the_committed_files() {
    let out = tempfile::tempdir().unwrap();
    let output = muster(&["schema", "--out", out.path().to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    for file in SCHEMA_FILES {
        let generated = std::fs::read(out.path().join(file)).unwrap();
        assert!(generated.ends_with(b"}\n"), "{file} ends with a newline");
        let committed = committed_schemas().join(file);
        if bless {
            std::fs::create_dir_all(committed_schemas()).unwrap();
            std::fs::write(&committed, &generated).unwrap();
            continue;
        }
        let expected = std::fs::read(&committed).unwrap_or_default();
        assert!(
            generated == expected,
            "{} is out of date; rerun this test with BLESS=1 and review the diff",
            committed.display()
        );
    }
}

#[test]
fn schema_requires_an_output_directory() {
    let output = muster(&["schema"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
}

#[test]
fn validate_reports_every_file_and_fails_on_any_invalid_one() {
    let dir = config_dir(&[
        ("config.yaml", "aggregator:\n  port: 18090\n"),
        ("mcpservers/everything.yaml", STDIO_SERVER),
        ("mcpservers/remote.yaml", REMOTE_WITH_ENV),
        ("mcpservers/broken.yaml", SYNTAX_ERROR),
        ("mcpservers/flat.yml", FLAT),
        ("workflows/deploy.yaml", WORKFLOW),
        ("workflows/dup.yaml", DUPLICATE_STEP),
    ]);
    let output = validate(&dir, &[]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let text = stdout(&output);
    let expected = [
        "config.yaml: valid",
        "mcpserver/broken (mcpservers/broken.yaml): invalid",
        "  did not find expected key, while parsing a block mapping (line 5, column 2)",
        "mcpserver/everything (mcpservers/everything.yaml): valid",
        "mcpserver/flat (mcpservers/flat.yml): invalid",
        "  spec: is required: a definition file must be a full MCPServer resource with \
         apiVersion, kind, metadata and spec: (flat files are not read)",
        "mcpserver/remote (mcpservers/remote.yaml): invalid",
        "  spec.env: refused on a remote server: send credentials in spec.headers",
        "workflow/deploy (workflows/deploy.yaml): valid",
        "workflow/dup (workflows/dup.yaml): invalid",
        "  spec.steps[1].id: duplicate step ID 'a' found",
        "3 valid, 4 invalid",
    ];
    let lines: Vec<&str> = text.lines().collect();
    for line in expected {
        assert!(lines.contains(&line), "missing line {line:?} in:\n{text}");
    }
    let positions: Vec<usize> = expected
        .iter()
        .map(|e| lines.iter().position(|l| l == e).unwrap())
        .collect();
    assert!(positions.is_sorted(), "entries out of order:\n{text}");
}

#[test]
fn validate_reports_json() {
    let dir = config_dir(&[
        ("mcpservers/everything.yaml", STDIO_SERVER),
        ("mcpservers/remote.yaml", REMOTE_WITH_ENV),
    ]);
    let output = validate(&dir, &["-o", "json"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["valid"], false);
    assert_eq!(report["validCount"], 2);
    assert_eq!(report["invalidCount"], 1);
    let entries = report["entries"].as_array().unwrap();
    assert_eq!(entries[0]["kind"], "config");
    assert_eq!(entries[0]["present"], false);
    assert_eq!(entries[1]["name"], "everything");
    assert_eq!(entries[1]["valid"], true);
    assert_eq!(entries[2]["kind"], "mcpserver");
    assert_eq!(entries[2]["path"], "mcpservers/remote.yaml");
    assert_eq!(entries[2]["problems"][0]["field"], "spec.env");
}

#[test]
fn validate_succeeds_when_everything_is_valid() {
    let dir = config_dir(&[
        ("mcpservers/everything.yaml", STDIO_SERVER),
        ("workflows/deploy.yaml", WORKFLOW),
    ]);
    let output = validate(&dir, &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        stdout(&output),
        "config.yaml: valid (absent, defaults apply)\n\
         mcpserver/everything (mcpservers/everything.yaml): valid\n\
         workflow/deploy (workflows/deploy.yaml): valid\n\
         3 valid, 0 invalid\n"
    );
}

#[test]
fn validate_fails_on_a_missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let output = muster(&["validate", "--config-path", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("does not exist"), "{stderr}");
}

#[test]
fn usage_errors_exit_2() {
    let output = muster(&["validate", "--output", "xml"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let output = muster(&["no-such-command"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
}

#[test]
fn help_lists_the_commands() {
    let output = muster(&["--help"]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    for command in ["validate", "schema", "version"] {
        assert!(text.contains(command), "{command} missing from:\n{text}");
    }
}

#[test]
fn version_is_printed_both_ways() {
    let expected = format!("muster version {}\n", env!("CARGO_PKG_VERSION"));
    for args in [&["version"][..], &["--version"][..]] {
        let output = muster(args);
        assert!(output.status.success(), "{output:?}");
        assert_eq!(stdout(&output), expected, "{args:?}");
    }
}

/// `--help` of `muster` and of every subcommand, found by walking the `Commands:` sections.
fn cli_reference() -> String {
    let mut doc = String::from(
        "# `muster` command-line reference\n\n\
         <!-- Generated from the `--help` output of every command by the `cli_reference_is_current`\n\
         test of crates/muster-bin/tests/cli.rs; rewrite it with\n\
         `BLESS=1 cargo test -p muster-bin --test cli cli_reference_is_current`. -->\n\n\
         Exit codes: 0 success, 1 failure (including a tool that reports an error), 2 usage\n\
         errors.\n\n\
         Client commands find muster by this precedence: `--endpoint` (or `MUSTER_ENDPOINT`),\n\
         `--context` (or `MUSTER_CONTEXT`), the current context of\n\
         `~/.config/muster/contexts.yaml`, then `http://<host>:<port>/mcp` from the\n\
         `config.yaml` of `--config-path`.\n",
    );
    let mut pending = vec![Vec::<String>::new()];
    while let Some(path) = pending.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let output = Command::new(env!("CARGO_BIN_EXE_muster"))
            .args(&args)
            .env_remove("RUST_LOG")
            .env_remove("MUSTER_ENDPOINT")
            .env_remove("MUSTER_CONTEXT")
            .output()
            .expect("the muster binary runs");
        assert!(output.status.success(), "{args:?}: {output:?}");
        let help = stdout(&output);
        let title = std::iter::once("muster")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        doc.push_str(&format!(
            "\n## `{title}`\n\n```text\n{}\n```\n",
            help.trim_end()
        ));
        let mut children: Vec<Vec<String>> = help
            .split("\nCommands:\n")
            .nth(1)
            .map(|section| {
                section
                    .lines()
                    .take_while(|l| !l.trim().is_empty())
                    .filter(|l| l.starts_with("  ") && !l.starts_with("        "))
                    .filter_map(|l| l.split_whitespace().next())
                    .filter(|name| *name != "help")
                    .map(|name| {
                        let mut child = path.clone();
                        child.push(name.to_owned());
                        child
                    })
                    .collect()
            })
            .unwrap_or_default();
        children.reverse();
        pending.extend(children);
    }
    doc
}

#[test]
fn cli_reference_is_current() {
    let generated = cli_reference();
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/cli.md");
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&committed, &generated).unwrap();
        return;
    }
    let text = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        text == generated,
        "docs/reference/cli.md is stale: rerun with BLESS=1 and review the diff"
    );
}

#[test]
fn completion_scripts_are_generated() {
    for (shell, marker) in [
        ("bash", "_muster()"),
        ("zsh", "#compdef muster"),
        ("fish", "complete -c muster"),
    ] {
        let output = muster(&["completion", shell]);
        assert!(output.status.success(), "{shell}: {output:?}");
        let script = stdout(&output);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(script.contains("mcpserver"), "{shell} completes kinds");
    }
}

/// Runs muster with stdout on a pipe whose reader has already gone, as in `muster … | head -1`.
fn muster_into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_muster"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("the muster binary runs")
}

#[test]
fn a_closed_stdout_ends_commands_quietly() {
    let dir = config_dir(&[]);
    let config = dir.path().to_str().expect("a UTF-8 path");
    for args in [
        &["completion", "bash"][..],
        &["version"],
        &["--help"],
        &["validate", "--config-path", config],
    ] {
        let output = muster_into_closed_pipe(args);
        let errors = String::from_utf8_lossy(&output.stderr);
        assert!(errors.is_empty(), "{args:?} printed on stderr: {errors}");
        assert_eq!(output.status.code(), Some(0), "{args:?}: {errors}");
    }
}

#[test]
fn crd_prints_the_committed_crds() {
    let output = muster(&["crd"]);
    assert!(output.status.success());
    let committed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds/muster.yaml"),
    )
    .unwrap();
    assert_eq!(stdout(&output), committed);
}

#[test]
fn kubernetes_mode_without_an_api_server_fails_at_startup() {
    let dir = config_dir(&[("config.yaml", "kubernetes: true\naggregator:\n  port: 0\n")]);
    // A kubeconfig naming a port nothing listens on.
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:9\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n    namespace: default\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_muster"))
        .args(["serve", "--config-path"])
        .arg(dir.path())
        .env("KUBECONFIG", &kubeconfig)
        .output()
        .unwrap();
    assert!(
        !output.status.success(),
        "startup must fail, never fall back"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("kubernetes: true, but the Kubernetes API server is unreachable"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("mcpservers").exists(),
        "no filesystem fallback"
    );
}

const REMOTE_WITH_HEADERS_FROM: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: remote
spec:
  type: streamable-http
  url: https://mcp.example.com/mcp
  headersFrom:
    - name: Authorization
      valueFrom: {type: Secret, name: token, key: value}
  auth:
    type: oauth
    requiredAudiences: [other-app]
";

#[test]
fn validate_and_serve_refuse_settings_that_would_do_nothing() {
    let config = "aggregator:\n  port: 1\n  oauth:\n    server:\n      \
                  enabled: true\n  admin:\n    enabled: true\n";
    let dir = config_dir(&[
        ("config.yaml", config),
        ("mcpservers/remote.yaml", REMOTE_WITH_HEADERS_FROM),
    ]);
    let output = validate(&dir, &[]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let text = stdout(&output);
    for line in [
        "config.yaml: invalid",
        "  aggregator.oauth.server.baseUrl: is required: muster's public http(s) URL",
        "  aggregator.oauth.server.dex.issuerUrl: is required: the upstream provider's issuer URL",
        "  aggregator.admin.enabled: the admin UI is not available in this muster yet; remove \
         the aggregator.admin section",
        "mcpserver/remote (mcpservers/remote.yaml): invalid",
        "  spec.headersFrom: not supported in filesystem mode, which has no Secrets to read \
         header values from; put the header in spec.headers instead",
        "  spec.auth.requiredAudiences: is asked for at sign-in only for a server that \
         receives the caller's ID token; set forwardToken or forwardIdentity: true, or remove it",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }

    // `serve` refuses the same configuration at once, naming the same settings.
    let path = dir.path().to_str().expect("a UTF-8 path");
    let output = muster(&["serve", "--config-path", path]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for field in [
        "aggregator.oauth.server.baseUrl:",
        "aggregator.admin.enabled:",
    ] {
        assert!(stderr.contains(field), "{field} missing from: {stderr}");
    }
}

const REMOTE_WITH_CREDENTIAL_HEADER: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: leaky
spec:
  type: streamable-http
  url: https://user:pass@mcp.example.com/mcp
  headers:
    X-Api-Key: abc
";

#[test]
fn validate_checks_kubernetes_mode_rules_and_says_what_needs_the_cluster() {
    let dir = config_dir(&[
        ("config.yaml", "kubernetes: true\nnamespace: muster\n"),
        ("mcpservers/everything.yaml", STDIO_SERVER),
        ("mcpservers/leaky.yaml", REMOTE_WITH_CREDENTIAL_HEADER),
        ("mcpservers/remote.yaml", REMOTE_WITH_HEADERS_FROM),
        ("workflows/deploy.yaml", WORKFLOW),
    ]);
    let output = validate(&dir, &[]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    for line in [
        "config.yaml: valid",
        "mcpserver/everything (mcpservers/everything.yaml): invalid",
        "mcpserver/leaky (mcpservers/leaky.yaml): invalid",
        // headersFrom and forwardToken are Kubernetes-mode features: no filesystem refusal.
        "mcpserver/remote (mcpservers/remote.yaml): valid",
        "workflow/deploy (workflows/deploy.yaml): valid",
        "3 valid, 2 invalid",
        "Checked with the Kubernetes-mode rules (config.yaml sets kubernetes: true). Not \
         checked without the cluster:",
    ] {
        assert!(lines.contains(&line), "missing line {line:?} in:\n{text}");
    }
    for needle in [
        "spec.type: stdio servers are not supported in Kubernetes mode",
        "spec.headers",
        "spec.url",
        "kubectl apply --dry-run=server -f FILE",
        "secretBinding.admissionPolicyBinding",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }

    let output = validate(&dir, &["-o", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["mode"], "kubernetes");
    assert_eq!(report["notChecked"].as_array().map(Vec::len), Some(3));
}
