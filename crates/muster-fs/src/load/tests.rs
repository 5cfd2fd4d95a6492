use std::path::Path;

use muster_core::resource::mcp_server::{McpServerState, ServerType};
use tempfile::TempDir;

use super::*;

const HEADER_SERVER: &str = "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\n";
const HEADER_WORKFLOW: &str = "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\n";

const STDIO_SERVER: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: everything
spec:
  type: stdio
  command: npx
  args: ['@modelcontextprotocol/server-everything']
  autoStart: true
";

const WORKFLOW: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: deploy
spec:
  args:
    clusters: { type: array, required: true }
  steps:
    - id: check
      tool: x_k8s_version
    - id: each
      forEach:
        items: '{{ .input.clusters }}'
        steps:
          - id: apply
            tool: x_k8s_apply
      condition:
        fromStep: check
        expect: { success: true }
";

/// A config directory built file by file.
struct Dir(TempDir);

impl Dir {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }

    fn file(self, rel: &str, text: impl AsRef<[u8]>) -> Self {
        let path = self.0.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        self
    }

    fn load(&self) -> LoadedConfig {
        ConfigDir::new(self.0.path()).load().unwrap()
    }
}

fn only_server(loaded: &LoadedConfig) -> &Loaded<Object<McpServer>> {
    assert_eq!(loaded.mcp_servers.len(), 1, "{:?}", loaded.mcp_servers);
    &loaded.mcp_servers[0]
}

fn invalid(loaded: &Loaded<impl std::fmt::Debug>) -> &muster_core::ValidationErrors {
    match &loaded.result {
        Err(LoadError::Invalid { errors, .. }) => errors,
        other => panic!("expected validation errors, got {other:?}"),
    }
}

fn parse_error(loaded: &Loaded<impl std::fmt::Debug>) -> &crate::ParseError {
    match &loaded.result {
        Err(LoadError::Parse { error, .. }) => error,
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn good_files_load_with_defaults() {
    let dir = Dir::new()
        .file("mcpservers/everything.yaml", STDIO_SERVER)
        .file("workflows/deploy.yaml", WORKFLOW);
    let loaded = dir.load();
    assert!(loaded.is_valid());
    assert!(!loaded.config.present);
    assert_eq!(loaded.config_or_default().aggregator.port, 8090);

    let server = only_server(&loaded);
    assert_eq!(server.name, "everything");
    assert_eq!(server.path, Path::new("mcpservers/everything.yaml"));
    let obj = server.object().unwrap();
    assert_eq!(obj.kind, "MCPServer");
    assert_eq!(obj.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(obj.spec.server_type(), ServerType::Stdio);
    assert!(obj.spec.auto_start);
    assert!(obj.status.is_none());

    let workflow = loaded.workflows[0].object().unwrap();
    assert_eq!(workflow.name(), "deploy");
    assert_eq!(workflow.spec.steps.len(), 2);
}

#[test]
fn name_comes_from_the_file_when_metadata_has_none() {
    let dir = Dir::new().file(
        "mcpservers/remote.yaml",
        format!("{HEADER_SERVER}spec:\n  type: streamable-http\n  url: https://mcp.example/mcp\n"),
    );
    let loaded = dir.load();
    let obj = only_server(&loaded).object().unwrap();
    assert_eq!(obj.name(), "remote");
    assert_eq!(obj.spec.server_type(), ServerType::StreamableHttp);
}

#[test]
fn yml_extension_is_read() {
    let dir = Dir::new().file(
        "workflows/short.yml",
        WORKFLOW.replace("name: deploy", "name: short"),
    );
    let loaded = dir.load();
    assert_eq!(loaded.workflows.len(), 1);
    assert_eq!(loaded.workflows[0].path, Path::new("workflows/short.yml"));
    assert!(
        loaded.workflows[0].is_ok(),
        "{:?}",
        loaded.workflows[0].result
    );
}

#[test]
fn name_defined_twice_reads_the_yaml_file() {
    let dir = Dir::new()
        .file("mcpservers/everything.yaml", STDIO_SERVER)
        .file("mcpservers/everything.yml", STDIO_SERVER);
    let loaded = dir.load();
    assert_eq!(loaded.mcp_servers.len(), 2);
    assert!(loaded.mcp_servers[0].is_ok());
    let err = loaded.mcp_servers[1].error().unwrap();
    assert!(matches!(err, LoadError::Duplicate { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "mcpservers/everything.yml: everything is already defined by mcpservers/everything.yaml"
    );
}

#[test]
fn status_block_is_kept() {
    let text = format!("{STDIO_SERVER}status:\n  state: Running\n  restartCount: 2\n");
    let loaded = Dir::new().file("mcpservers/everything.yaml", text).load();
    let status = only_server(&loaded)
        .object()
        .unwrap()
        .status
        .clone()
        .unwrap();
    assert_eq!(status.state, Some(McpServerState::Running));
    assert_eq!(status.restart_count, 2);
}

#[test]
fn type_error_is_a_parse_error_with_place_and_field() {
    let text = format!("{HEADER_SERVER}spec:\n  type: stdio\n  command: x\n  timeout: x\n");
    let loaded = Dir::new().file("mcpservers/bad.yaml", text).load();
    let server = only_server(&loaded);
    let err = parse_error(server);
    assert_eq!(err.field, "spec.timeout");
    assert_eq!(
        err.location,
        Some(crate::Location {
            line: 6,
            column: 12
        })
    );
    assert_eq!(
        server.error().unwrap().to_string(),
        "mcpservers/bad.yaml:6:12: spec.timeout: invalid type: string \"x\", expected i64"
    );
}

#[test]
fn yaml_syntax_error_is_a_parse_error() {
    let loaded = Dir::new()
        .file(
            "mcpservers/broken.yaml",
            format!("{HEADER_SERVER}spec:\n  type: [stdio\n"),
        )
        .load();
    let err = parse_error(only_server(&loaded));
    assert!(err.location.is_some(), "{err:?}");
}

#[test]
fn unreadable_file_is_a_read_error() {
    let loaded = Dir::new()
        .file("mcpservers/binary.yaml", [0xff, 0xfe, 0x00])
        .load();
    assert!(matches!(
        only_server(&loaded).result,
        Err(LoadError::Read { .. })
    ));
}

#[test]
fn wrong_api_version_and_kind_are_named() {
    let loaded = Dir::new()
        .file(
            "mcpservers/v1.yaml",
            "apiVersion: v1\nkind: MCPServer\nspec:\n  type: stdio\n  command: x\n",
        )
        .file("mcpservers/wf.yaml", WORKFLOW)
        .file(
            "mcpservers/nokind.yaml",
            "apiVersion: muster.giantswarm.io/v1alpha1\nspec: {}\n",
        )
        .load();
    let errs = invalid(&loaded.mcp_servers[0]);
    assert_eq!(loaded.mcp_servers[0].name, "nokind");
    assert!(
        errs.contains("kind", "is required and must be MCPServer"),
        "{errs}"
    );
    let errs = invalid(&loaded.mcp_servers[1]);
    assert!(
        errs.contains(
            "apiVersion",
            "must be muster.giantswarm.io/v1alpha1, not v1"
        ),
        "{errs}"
    );
    assert_eq!(errs.len(), 1, "{errs}");
    let errs = invalid(&loaded.mcp_servers[2]);
    assert!(
        errs.contains("kind", "must be MCPServer, not Workflow"),
        "{errs}"
    );
}

#[test]
fn name_mismatch_is_an_error() {
    let loaded = Dir::new()
        .file("mcpservers/other.yaml", STDIO_SERVER)
        .load();
    let errs = invalid(only_server(&loaded));
    assert!(
        errs.contains("metadata.name", "must equal the file name \"other\""),
        "{errs}"
    );
}

#[test]
fn flat_file_is_refused_not_read_as_empty() {
    let loaded = Dir::new()
        .file("mcpservers/flat.yaml", "type: stdio\ncommand: npx\n")
        .load();
    let server = only_server(&loaded);
    let errs = invalid(server);
    assert_eq!(errs.len(), 1, "{errs}");
    assert!(
        errs.contains("spec", "must be a full MCPServer resource"),
        "{errs}"
    );
    assert!(
        server
            .error()
            .unwrap()
            .to_string()
            .starts_with("mcpservers/flat.yaml: spec: ")
    );
}

#[test]
fn every_spec_violation_is_reported() {
    let text = format!(
        "{HEADER_SERVER}metadata:\n  name: remote\nspec:\n  type: sse\n  env:\n    TOKEN: x\n  \
         timeout: 900\n"
    );
    let loaded = Dir::new().file("mcpservers/remote.yaml", text).load();
    let errs = invalid(only_server(&loaded));
    assert!(errs.contains("spec.url", "url is required"), "{errs}");
    assert!(
        errs.contains("spec.env", "refused on a remote server"),
        "{errs}"
    );
    assert!(errs.contains("spec.timeout", "between 1 and 300"), "{errs}");
}

#[test]
fn envelope_and_spec_violations_are_reported_together() {
    let text = STDIO_SERVER
        .replace("v1alpha1", "v2")
        .replace("command: npx", "command: ''");
    let loaded = Dir::new().file("mcpservers/everything.yaml", text).load();
    let errs = invalid(only_server(&loaded));
    assert!(errs.contains("apiVersion", "must be"), "{errs}");
    assert!(
        errs.contains("spec.command", "command is required"),
        "{errs}"
    );
}

#[test]
fn workflow_violations() {
    let text = format!(
        "{HEADER_WORKFLOW}spec:\n  steps:\n    - id: a\n      tool: t\n    - id: a\n      tool: t\n"
    );
    let loaded = Dir::new().file("workflows/dup.yaml", text).load();
    let errs = invalid(&loaded.workflows[0]);
    assert!(
        errs.contains("spec.steps[1].id", "duplicate step ID 'a'"),
        "{errs}"
    );
}

#[test]
fn broken_config_is_an_entry_not_a_failure() {
    let loaded = Dir::new()
        .file("config.yaml", "aggregator:\n  port: not-a-port\n")
        .file("mcpservers/everything.yaml", STDIO_SERVER)
        .load();
    assert!(loaded.config.present);
    let Err(LoadError::Parse { error, .. }) = &loaded.config.result else {
        panic!("{:?}", loaded.config.result)
    };
    assert_eq!(error.field, "aggregator.port");
    assert!(!loaded.is_valid());
    assert!(only_server(&loaded).is_ok());
    assert_eq!(loaded.config_or_default().aggregator.port, 8090);
}

#[test]
fn config_is_read_and_its_namespace_is_the_default() {
    let loaded = Dir::new()
        .file(
            "config.yaml",
            "namespace: team\naggregator:\n  port: 18000\n",
        )
        .file("mcpservers/everything.yaml", STDIO_SERVER)
        .load();
    assert_eq!(
        loaded.config.result.as_ref().unwrap().aggregator.port,
        18000
    );
    let obj = only_server(&loaded).object().unwrap();
    assert_eq!(obj.metadata.namespace.as_deref(), Some("team"));
}

#[test]
fn empty_config_file_means_defaults() {
    let loaded = Dir::new().file("config.yaml", "# nothing yet\n").load();
    assert!(loaded.config.present);
    assert!(loaded.config.result.is_ok());
}

#[test]
fn one_broken_file_among_good_ones() {
    let loaded = Dir::new()
        .file(
            "mcpservers/a.yaml",
            STDIO_SERVER.replace("name: everything", "name: a"),
        )
        .file("mcpservers/b.yaml", "apiVersion: [\n")
        .file(
            "mcpservers/c.yaml",
            STDIO_SERVER.replace("name: everything", "name: c"),
        )
        .file("workflows/deploy.yaml", WORKFLOW)
        .file("workflows/notes.txt", "not a definition")
        .load();
    let names: Vec<_> = loaded
        .mcp_servers
        .iter()
        .map(|l| (l.name.as_str(), l.is_ok()))
        .collect();
    assert_eq!(names, [("a", true), ("b", false), ("c", true)]);
    assert_eq!(loaded.valid_mcp_servers().count(), 2);
    assert_eq!(loaded.valid_workflows().count(), 1);
    assert!(!loaded.is_valid());
}

#[test]
fn missing_directory_is_an_error() {
    let dir = Dir::new();
    let missing = dir.0.path().join("nope");
    assert!(matches!(
        ConfigDir::new(&missing).load(),
        Err(LoadDirError::NotFound { .. })
    ));
    let file = dir.0.path().join("file");
    std::fs::write(&file, "").unwrap();
    assert!(matches!(
        ConfigDir::new(&file).load(),
        Err(LoadDirError::NotADirectory { .. })
    ));
}

#[test]
fn a_file_whose_name_breaks_the_name_rule_is_refused_alone() {
    let header = |name: &str| {
        format!(
            "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: {name:?}\n\
             spec:\n  type: stdio\n  command: server\n"
        )
    };
    let loaded = Dir::new()
        .file("mcpservers/ok-name\n.yaml", header("ok-name\n"))
        .file("mcpservers/with space.yaml", header("with space"))
        .file(
            "mcpservers/special-chars-server_123.yaml",
            header("special-chars-server_123"),
        )
        .load();
    let by_name: Vec<(&str, bool)> = loaded
        .mcp_servers
        .iter()
        .map(|l| (l.name.as_str(), l.is_ok()))
        .collect();
    assert_eq!(
        by_name,
        [
            ("ok-name\n", false),
            ("special-chars-server_123", true),
            ("with space", false)
        ]
    );
    let newline = invalid(&loaded.mcp_servers[0]);
    assert_eq!(
        newline.messages(),
        [format!(
            "metadata.name: {} (found U+000A)",
            muster_core::resource::NAME_RULE
        )]
    );
}

#[test]
fn settings_that_would_do_nothing_make_the_config_invalid() {
    let loaded = Dir::new()
        .file(
            "config.yaml",
            "kubernetes: true\naggregator:\n  admin:\n    enabled: true\n",
        )
        .load();
    let errors = invalid_config(&loaded);
    let paths: Vec<&str> = errors
        .violations()
        .iter()
        .map(|v| v.path.as_str())
        .collect();
    assert_eq!(paths, ["aggregator.admin.enabled"]);
    assert!(!loaded.is_valid());
}

#[test]
fn a_zero_session_or_connection_bound_makes_the_config_invalid() {
    let loaded = Dir::new()
        .file(
            "config.yaml",
            "aggregator:\n  limits:\n    maxSessions: 0\n    connectionIdleTimeout: 0\n",
        )
        .load();
    let errors = invalid_config(&loaded);
    let messages: Vec<String> = errors
        .violations()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        messages,
        [
            "aggregator.limits.maxSessions: must be at least 1",
            "aggregator.limits.connectionIdleTimeout: must be at least 1"
        ]
    );
}

fn invalid_config(loaded: &LoadedConfig) -> &muster_core::ValidationErrors {
    match &loaded.config.result {
        Err(LoadError::Invalid { errors, .. }) => errors,
        other => panic!("expected validation errors, got {other:?}"),
    }
}
