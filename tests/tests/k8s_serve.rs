//! `muster serve` in Kubernetes mode against the fake API server, judged with the real
//! `kubectl` and a real MCP client: the seed examples apply, `kubectl get mcps` shows the state
//! muster wrote, a workflow call leaves a WorkflowExecution, a credential header is refused by
//! the CRD, `kubectl delete` removes the tools, and two replicas share the work with one leader.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

use muster_tests::McpClient;
use muster_tests::deps;
use muster_tests::kube_fake::{FakeApiServer, FakeConfig, Kubectl};
use muster_tests::muster_bin;
use serde_json::{Value, json};

const CRDS: &str = include_str!("../../deploy/crds/muster.yaml");

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A child process killed (with its group) when dropped.
struct Process {
    child: Child,
    log: PathBuf,
}

impl Process {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn kill(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(0)),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(mut command: Command, log: &Path) -> Process {
    use std::os::unix::process::CommandExt as _;
    let out = File::create(log).expect("log file");
    let err = out.try_clone().expect("log file");
    let child = command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .expect("the process starts");
    Process {
        child,
        log: log.to_owned(),
    }
}

fn wait_until<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The fake API server with muster's CRDs applied by kubectl.
fn cluster() -> (FakeApiServer, Kubectl) {
    let server = FakeApiServer::start(FakeConfig::default()).expect("server starts");
    let kubectl = Kubectl::new(&server).expect("kubectl");
    let out = kubectl
        .run_with_input(&["apply", "-f", "-"], CRDS)
        .expect("kubectl runs")
        .ok()
        .expect("the CRDs apply");
    assert!(
        out.contains("mcpservers.muster.giantswarm.io created"),
        "{out}"
    );
    for crd in ["mcpservers", "workflows", "workflowexecutions"] {
        kubectl
            .run(&[
                "wait",
                "--for=condition=Established",
                &format!("crd/{crd}.muster.giantswarm.io"),
                "--timeout=10s",
            ])
            .expect("kubectl runs")
            .ok()
            .expect("established");
    }
    (server, kubectl)
}

/// A `muster serve` in Kubernetes mode on its own port and config directory.
struct Replica {
    process: Process,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Replica {
    fn start(kubectl: &Kubectl, name: &str) -> Self {
        Self::start_with(kubectl, name, "")
    }

    /// Starts a replica whose `config.yaml` also holds `extra`.
    fn start_with(kubectl: &Kubectl, name: &str, extra: &str) -> Self {
        Self::start_on(kubectl, name, free_port(), extra, &[])
    }

    /// Starts a replica on `port` whose `config.yaml` also holds `extra`, with `args` after
    /// `serve --config-path DIR`.
    fn start_on(kubectl: &Kubectl, name: &str, port: u16, extra: &str, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(
            dir.path().join("config.yaml"),
            format!("kubernetes: true\nnamespace: default\naggregator:\n  host: 127.0.0.1\n  port: {port}\n{extra}"),
        )
        .expect("config");
        let mut command = Command::new(muster_bin().expect("muster binary"));
        command
            .args(["serve", "--config-path"])
            .arg(dir.path())
            .args(args)
            .env("KUBECONFIG", kubectl.kubeconfig())
            .env("POD_NAME", name)
            .env("MUSTER_MCPSERVER_INITIAL_BACKOFF", "1s");
        let process = spawn(command, &dir.path().join("muster.log"));
        let replica = Self {
            process,
            port,
            _dir: dir,
        };
        wait_until("muster to answer /health", Duration::from_secs(30), || {
            reqwest::blocking::get(format!("http://127.0.0.1:{port}/health"))
                .ok()
                .filter(|r| r.status().is_success())
        });
        replica
    }

    fn client(&self) -> McpClient {
        McpClient::connect(&format!("http://127.0.0.1:{}/mcp", self.port))
            .unwrap_or_else(|e| panic!("an MCP session: {e}\nlog:\n{}", self.process.log()))
    }

    fn reachable(&self) -> Vec<String> {
        self.client().reachable_tools().expect("list_tools")
    }
}

/// server-everything over streamable HTTP on a free port.
fn everything(dir: &Path) -> (Process, String) {
    let port = free_port();
    let mut command = Command::new(deps::server_everything().expect("server-everything installed"));
    command.arg("streamableHttp").env("PORT", port.to_string());
    let process = spawn(command, &dir.join("everything.log"));
    let url = format!("http://127.0.0.1:{port}/mcp");
    wait_until(
        "server-everything to listen",
        Duration::from_secs(30),
        || std::net::TcpStream::connect(("127.0.0.1", port)).ok(),
    );
    (process, url)
}

fn kubectl_ok(kubectl: &Kubectl, args: &[&str]) -> String {
    kubectl
        .run(args)
        .expect("kubectl runs")
        .ok()
        .expect("kubectl succeeds")
}

fn apply(kubectl: &Kubectl, yaml: &str) -> String {
    kubectl
        .run_with_input(&["apply", "-f", "-"], yaml)
        .expect("kubectl runs")
        .ok()
        .expect("kubectl apply succeeds")
}

const STDIO_SEED: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: git-tools
  namespace: default
  annotations:
    ui.giantswarm.io/display-name: \"Git Tools\"
spec:
  type: stdio
  description: \"Git tools MCP server for repository operations\"
  autoStart: true
  command: \"npx\"
  args: [\"@modelcontextprotocol/server-git\"]
  env:
    GIT_ROOT: \"/workspace\"
    LOG_LEVEL: \"info\"
";

/// The remote examples of the CRD reference; checked with `--dry-run=server` because their
/// hosts are not reachable from here.
const REMOTE_SEEDS: &str = include_str!("../fixtures/kube/seed-remote-examples.yaml");

const WORKFLOW: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: say-hello
  namespace: default
spec:
  description: Echo a message through the everything server
  args:
    message:
      type: string
      required: true
  steps:
    - id: say
      tool: x_everything_echo
      args:
        message: \"{{ .input.message }}\"
      output: true
";

const CREDENTIAL_HEADER: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: leaky
  namespace: default
spec:
  type: streamable-http
  url: https://api.example.com/mcp
  headers:
    Authorization: Bearer abc
";

#[test]
fn kubectl_and_mcp_clients_see_the_same_resources() {
    let (_server, kubectl) = cluster();
    let (_everything, url) = everything(kubectl.dir());
    let muster = Replica::start(&kubectl, "muster-0");

    // The reference's remote examples pass the CRD's rules; a credential header does not.
    let out = kubectl
        .run_with_input(&["apply", "--dry-run=server", "-f", "-"], REMOTE_SEEDS)
        .expect("kubectl runs")
        .ok()
        .expect("the seed examples are valid");
    assert!(
        out.contains("mcpserver.muster.giantswarm.io/api-tools created (server dry run)"),
        "{out}"
    );
    let refused = kubectl
        .run_with_input(&["apply", "--dry-run=server", "-f", "-"], CREDENTIAL_HEADER)
        .expect("kubectl runs");
    assert!(!refused.success);
    assert!(
        refused.stderr.contains("spec.headers")
            && refused.stderr.contains("must not carry a credential"),
        "{}",
        refused.stderr
    );

    // A real server, a stdio seed example and a workflow, applied with kubectl.
    apply(
        &kubectl,
        &format!(
            "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: everything\n  namespace: default\nspec:\n  type: streamable-http\n  url: {url}\n  autoStart: true\n"
        ),
    );
    apply(&kubectl, STDIO_SEED);
    apply(&kubectl, WORKFLOW);

    let table = wait_until(
        "kubectl get mcps to show the states",
        Duration::from_secs(40),
        || {
            let out = kubectl_ok(&kubectl, &["get", "mcps"]);
            (out.contains("Connected") && out.contains("Failed")).then_some(out)
        },
    );
    let header = table.lines().next().unwrap_or_default();
    for column in ["NAME", "TYPE", "STATE", "AGE"] {
        assert!(header.contains(column), "{table}");
    }
    assert!(
        table.lines().any(|l| l.starts_with("everything")
            && l.contains("streamable-http")
            && l.contains("Connected")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("git-tools") && l.contains("Failed")),
        "{table}"
    );
    let last_error = kubectl_ok(
        &kubectl,
        &[
            "get",
            "mcps",
            "git-tools",
            "-o",
            "jsonpath={.status.lastError}",
        ],
    );
    assert!(
        last_error.contains("stdio servers are not supported in Kubernetes mode"),
        "{last_error}"
    );
    let ready = kubectl_ok(
        &kubectl,
        &[
            "get",
            "mcps",
            "everything",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].status} {.status.observedGeneration}",
        ],
    );
    assert_eq!(ready.trim(), "True 1");
    let wf = wait_until("the workflow status", Duration::from_secs(20), || {
        let out = kubectl_ok(&kubectl, &["get", "wf"]);
        out.contains("true").then_some(out)
    });
    assert!(
        wf.lines().next().unwrap_or_default().contains("VALID"),
        "{wf}"
    );

    // Tools through MCP, and a workflow run recorded as a WorkflowExecution.
    let tools = wait_until("the tools", Duration::from_secs(20), || {
        let tools = muster.reachable();
        (tools.iter().any(|t| t == "x_everything_echo")
            && tools.iter().any(|t| t == "workflow_say-hello"))
        .then_some(tools)
    });
    assert!(
        !tools.iter().any(|t| t.contains("git-tools")),
        "no stdio tools: {tools:?}"
    );
    let client = muster.client();
    let result = client
        .call("workflow_say-hello", json!({"message": "hi from k8s"}))
        .expect("the workflow runs");
    assert!(!result.is_error, "{}", result.text());
    assert!(result.text().contains("hi from k8s"), "{}", result.text());
    let wfe = wait_until("kubectl get wfe", Duration::from_secs(10), || {
        let out = kubectl_ok(
            &kubectl,
            &[
                "get",
                "wfe",
                "-l",
                "muster.giantswarm.io/workflow=say-hello",
            ],
        );
        out.contains("completed").then_some(out)
    });
    assert!(
        wfe.lines().next().unwrap_or_default().contains("WORKFLOW"),
        "{wfe}"
    );
    assert!(wfe.contains("say-hello"), "{wfe}");
    let listed = client
        .call(
            "core_workflow_execution_list",
            json!({"workflow_name": "say-hello"}),
        )
        .expect("listing");
    assert!(
        listed.text().contains("\"total\":1") || listed.text().contains("\"total\": 1"),
        "{}",
        listed.text()
    );

    // Events are core/v1 Events muster reads back.
    let events = kubectl_ok(
        &kubectl,
        &["get", "events", "-o", "jsonpath={.items[*].reason}"],
    );
    assert!(events.contains("MCPServerStarted"), "{events}");
    let core_events = client
        .call("core_events", json!({"resource_type": "MCPServer"}))
        .expect("core_events");
    assert!(
        core_events.text().contains("MCPServerStarted"),
        "{}",
        core_events.text()
    );

    // kubectl delete removes the tools.
    kubectl_ok(&kubectl, &["delete", "mcpserver", "everything"]);
    kubectl_ok(&kubectl, &["delete", "workflow", "say-hello"]);
    wait_until("the tools to go", Duration::from_secs(20), || {
        let tools = muster.reachable();
        (!tools
            .iter()
            .any(|t| t == "x_everything_echo" || t == "workflow_say-hello"))
        .then_some(())
    });
}

/// An MCPServer of `url` named `name` in `namespace`.
fn remote_server(name: &str, namespace: &str, url: &str) -> String {
    format!(
        "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  type: streamable-http\n  url: {url}\n  autoStart: true\n"
    )
}

#[test]
fn mcpservers_of_listed_namespaces_are_served_under_their_namespace_prefix() {
    let (_server, kubectl) = cluster();
    for ns in ["team-a", "team-b"] {
        kubectl_ok(&kubectl, &["create", "namespace", ns]);
    }
    let (_everything, url) = everything(kubectl.dir());
    let muster = Replica::start_with(&kubectl, "muster-0", "mcpServerNamespaces: [team-a]\n");
    apply(&kubectl, &remote_server("everything", "default", &url));
    apply(&kubectl, &remote_server("everything", "team-a", &url));
    apply(&kubectl, &remote_server("unwatched", "team-b", &url));

    // The same name in two namespaces: two servers, the foreign one under `<namespace>_`.
    let tools = wait_until("both servers' tools", Duration::from_secs(40), || {
        let tools = muster.reachable();
        (tools.iter().any(|t| t == "x_everything_echo")
            && tools.iter().any(|t| t == "x_team-a_everything_echo"))
        .then_some(tools)
    });
    assert!(
        !tools
            .iter()
            .any(|t| t.contains("team-b") || t.contains("unwatched")),
        "team-b is not watched: {tools:?}"
    );
    let client = muster.client();
    let echoed = client
        .call(
            "x_team-a_everything_echo",
            json!({"message": "from team-a"}),
        )
        .expect("the call");
    assert!(
        !echoed.is_error && echoed.text().contains("from team-a"),
        "{}",
        echoed.text()
    );

    // Status and events are written in the server's own namespace.
    let state = wait_until("team-a's status", Duration::from_secs(20), || {
        let out = kubectl_ok(
            &kubectl,
            &[
                "get",
                "mcps",
                "-n",
                "team-a",
                "everything",
                "-o",
                "jsonpath={.status.state}",
            ],
        );
        (out == "Connected").then_some(out)
    });
    assert_eq!(state, "Connected");
    let unwatched = kubectl_ok(
        &kubectl,
        &[
            "get",
            "mcps",
            "-n",
            "team-b",
            "unwatched",
            "-o",
            "jsonpath={.status}",
        ],
    );
    assert!(
        unwatched.trim().is_empty(),
        "no status outside the watched namespaces: {unwatched}"
    );
    let events = wait_until("team-a's events", Duration::from_secs(10), || {
        let out = kubectl_ok(
            &kubectl,
            &[
                "get",
                "events",
                "-n",
                "team-a",
                "-o",
                "jsonpath={range .items[*]}{.involvedObject.namespace}/{.involvedObject.name} {.reason}{\"\\n\"}{end}",
            ],
        );
        out.contains("team-a/everything MCPServerStarted")
            .then_some(out)
    });
    assert!(!events.contains("default/"), "{events}");

    // The core tools name it `<namespace>/<name>`, and leave its definition to its namespace.
    let listed = client
        .call("core_mcpserver_list", json!({}))
        .expect("core_mcpserver_list")
        .text()
        .to_owned();
    assert!(listed.contains("\"team-a/everything\""), "{listed}");
    let services = client
        .call("core_service_list", json!({}))
        .expect("services")
        .text()
        .to_owned();
    assert!(services.contains("team-a/everything"), "{services}");
    let refused = client
        .call(
            "core_mcpserver_delete",
            json!({"name": "team-a/everything"}),
        )
        .expect("core_mcpserver_delete");
    assert!(refused.is_error, "{}", refused.text());
    assert!(
        refused
            .text()
            .contains("muster writes MCPServers only in its own namespace default"),
        "{}",
        refused.text()
    );

    // kubectl delete in the namespace removes its tools, and only its tools.
    kubectl_ok(
        &kubectl,
        &["delete", "mcpserver", "-n", "team-a", "everything"],
    );
    let tools = wait_until("team-a's tools to go", Duration::from_secs(20), || {
        let tools = muster.reachable();
        (!tools.iter().any(|t| t.starts_with("x_team-a_"))).then_some(tools)
    });
    assert!(tools.iter().any(|t| t == "x_everything_echo"), "{tools:?}");
}

#[test]
fn two_replicas_answer_and_one_leads() {
    let (_server, kubectl) = cluster();
    let (_everything, url) = everything(kubectl.dir());
    let mut first = Replica::start(&kubectl, "muster-a");
    let holder = |k: &Kubectl| {
        kubectl_ok(
            k,
            &[
                "get",
                "lease",
                "muster-leader",
                "-o",
                "jsonpath={.spec.holderIdentity}",
            ],
        )
    };
    let leader = wait_until("a leader", Duration::from_secs(20), || {
        Some(holder(&kubectl)).filter(|h| h.starts_with("muster-a"))
    });
    let second = Replica::start(&kubectl, "muster-b");
    apply(
        &kubectl,
        &format!(
            "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: everything\n  namespace: default\nspec:\n  type: streamable-http\n  url: {url}\n  autoStart: true\n"
        ),
    );
    for replica in [&first, &second] {
        wait_until(
            "both replicas to serve the tool",
            Duration::from_secs(30),
            || {
                replica
                    .reachable()
                    .iter()
                    .any(|t| t == "x_everything_echo")
                    .then_some(())
            },
        );
        let echo = replica
            .client()
            .call("x_everything_echo", json!({"message": "ping"}))
            .expect("call");
        assert!(echo.text().contains("ping"), "{}", echo.text());
    }
    assert_eq!(holder(&kubectl), leader, "the first replica keeps the lead");
    wait_until("the leader's status", Duration::from_secs(20), || {
        kubectl_ok(
            &kubectl,
            &[
                "get",
                "mcps",
                "everything",
                "-o",
                "jsonpath={.status.state}",
            ],
        )
        .contains("Connected")
        .then_some(())
    });

    // The leader dies; the other takes the Lease over within one lease period (15 s) and a
    // renewal round.
    first.process.kill();
    let started = Instant::now();
    wait_until(
        "the second replica to lead",
        Duration::from_secs(30),
        || Some(holder(&kubectl)).filter(|h| h.starts_with("muster-b")),
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "took {:?}",
        started.elapsed()
    );
    let echo = second
        .client()
        .call("x_everything_echo", json!({"message": "still here"}))
        .expect("call");
    assert!(echo.text().contains("still here"));
}

const POLICY: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: muster-mcpserver-secret-references
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [muster.giantswarm.io]
        apiVersions: [v1alpha1]
        operations: [CREATE, UPDATE]
        resources: [mcpservers]
  validations:
    - expression: \"true\"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: muster-mcpserver-secret-references
spec:
  policyName: muster-mcpserver-secret-references
  validationActions: [Deny]
";

fn last_error(kubectl: &Kubectl, name: &str) -> String {
    kubectl_ok(
        kubectl,
        &["get", "mcps", name, "-o", "jsonpath={.status.lastError}"],
    )
}

#[test]
fn headers_from_reads_a_secret_only_under_the_policy() {
    let (_server, kubectl) = cluster();
    let (_everything, url) = everything(kubectl.dir());
    let _muster = Replica::start_with(
        &kubectl,
        "muster-0",
        "secretBinding:\n  admissionPolicyBinding: muster-mcpserver-secret-references\n  protectedSecrets: [muster-oauth]\n",
    );
    let server = |name: &str, secret: &str| {
        format!(
            "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  type: streamable-http\n  url: {url}\n  autoStart: true\n  headersFrom:\n    - name: Authorization\n      valueFrom:\n        type: Secret\n        name: {secret}\n        key: authorization\n"
        )
    };
    apply(&kubectl, &server("guarded", "token"));
    wait_until("the policy refusal", Duration::from_secs(40), || {
        last_error(&kubectl, "guarded")
            .contains("MCPServer Secret reference policy is not in force")
            .then_some(())
    });

    apply(&kubectl, POLICY);
    wait_until("the missing Secret", Duration::from_secs(40), || {
        last_error(&kubectl, "guarded")
            .contains("Secret default/token not found")
            .then_some(())
    });
    apply(
        &kubectl,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: default\ntype: Opaque\nstringData:\n  authorization: \"Bearer s3cret-value\\n\"\n",
    );
    wait_until(
        "the server to connect with the Secret",
        Duration::from_secs(60),
        || {
            kubectl_ok(
                &kubectl,
                &["get", "mcps", "guarded", "-o", "jsonpath={.status.state}"],
            )
            .contains("Connected")
            .then_some(())
        },
    );

    // muster's own Secrets stay unread, whoever names them.
    apply(
        &kubectl,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: muster-oauth\n  namespace: default\nstringData:\n  authorization: other-value\n",
    );
    apply(&kubectl, &server("greedy", "muster-oauth"));
    wait_until(
        "the protected Secret refusal",
        Duration::from_secs(40),
        || {
            last_error(&kubectl, "greedy")
                .contains("one of muster's own Secrets")
                .then_some(())
        },
    );
    let everything_seen = format!(
        "{}{}",
        kubectl_ok(&kubectl, &["get", "mcps", "-o", "yaml"]),
        kubectl_ok(&kubectl, &["get", "events", "-o", "yaml"])
    );
    assert!(!everything_seen.contains("s3cret-value") && !everything_seen.contains("other-value"));
}

fn state(kubectl: &Kubectl, name: &str) -> String {
    kubectl_ok(
        kubectl,
        &["get", "mcps", name, "-o", "jsonpath={.status.state}"],
    )
}

#[test]
fn client_credentials_secret_refs_are_read_with_the_secret_rules() {
    let (_server, kubectl) = cluster();
    let (_everything, url) = everything(kubectl.dir());
    let muster = Replica::start_with(
        &kubectl,
        "muster-0",
        "secretBinding:\n  admissionPolicyBinding: muster-mcpserver-secret-references\n",
    );
    apply(&kubectl, POLICY);
    kubectl_ok(&kubectl, &["create", "namespace", "vault"]);
    let server = |name: &str, reference: &str| {
        format!(
            "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  type: streamable-http\n  url: {url}\n  autoStart: true\n  auth:\n    type: oauth\n    authorizationServer:\n      issuer: https://github.com/login/oauth\n      authorizationEndpoint: https://github.com/login/oauth/authorize\n      tokenEndpoint: https://github.com/login/oauth/access_token\n      clientCredentialsSecretRef:\n{reference}"
        )
    };
    // Default keys, the server's own namespace: missing Secret, then a missing key, then
    // both keys present.
    apply(&kubectl, &server("github", "        name: gh-app\n"));
    wait_until("the missing Secret", Duration::from_secs(40), || {
        last_error(&kubectl, "github")
            .contains("spec.auth.authorizationServer.clientCredentialsSecretRef: Secret default/gh-app not found")
            .then_some(())
    });
    assert_eq!(state(&kubectl, "github"), "Failed");
    apply(
        &kubectl,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: gh-app\n  namespace: default\nstringData:\n  client-id: Iv1.app\n",
    );
    wait_until("the missing key", Duration::from_secs(40), || {
        last_error(&kubectl, "github")
            .contains("Secret default/gh-app has no key \"client-secret\"")
            .then_some(())
    });
    apply(
        &kubectl,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: gh-app\n  namespace: default\nstringData:\n  client-id: Iv1.app\n  client-secret: \"gh-s3cret-value\\n\"\n",
    );
    wait_until("the server to connect", Duration::from_secs(60), || {
        (state(&kubectl, "github") == "Connected").then_some(())
    });

    // Named keys in another namespace (the server is in muster's own): read, with a warning.
    apply(
        &kubectl,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: shared\n  namespace: vault\nstringData:\n  id: other-client\n  secret: vault-s3cret-value\n",
    );
    apply(
        &kubectl,
        &server(
            "shared",
            "        name: shared\n        namespace: vault\n        clientIdKey: id\n        clientSecretKey: secret\n",
        ),
    );
    wait_until(
        "the cross-namespace server",
        Duration::from_secs(60),
        || (state(&kubectl, "shared") == "Connected").then_some(()),
    );
    assert!(
        muster
            .process
            .log()
            .contains("reading client credentials from a Secret of another namespace"),
        "{}",
        muster.process.log()
    );

    // A Secret of a protected type is never read.
    apply(
        &kubectl,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\n  namespace: default\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: c\n  tls.key: k\n  client-id: x\n  client-secret: tls-s3cret-value\n",
    );
    apply(&kubectl, &server("tls", "        name: tls\n"));
    wait_until(
        "the protected type refusal",
        Duration::from_secs(40),
        || {
            last_error(&kubectl, "tls")
                .contains("has type kubernetes.io/tls, which muster never reads")
                .then_some(())
        },
    );

    let seen = format!(
        "{}{}{}{}",
        kubectl_ok(&kubectl, &["get", "mcps", "-o", "yaml"]),
        kubectl_ok(&kubectl, &["get", "events", "-o", "yaml"]),
        muster
            .client()
            .call("core_mcpserver_get", json!({"name": "github"}))
            .map(|r| r.raw.to_string())
            .unwrap_or_default(),
        muster.process.log()
    );
    for value in ["gh-s3cret-value", "vault-s3cret-value", "tls-s3cret-value"] {
        assert!(!seen.contains(value), "{value} leaked");
    }
}

const SLOW_WORKFLOW: &str = "apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: slow
  namespace: default
spec:
  description: A step that takes a minute
  steps:
    - id: wait
      tool: x_everything_trigger-long-running-operation
      args:
        duration: 60
        steps: 60
";

/// Applies server-everything at `url` and [`SLOW_WORKFLOW`], and waits until `replica`
/// offers the workflow.
fn serve_slow_workflow(kubectl: &Kubectl, url: &str, replica: &Replica) {
    apply(kubectl, &remote_server("everything", "default", url));
    apply(kubectl, SLOW_WORKFLOW);
    wait_until("the workflow tool", Duration::from_secs(30), || {
        let tools = replica.reachable();
        (tools.iter().any(|t| t == "workflow_slow")
            && tools
                .iter()
                .any(|t| t == "x_everything_trigger-long-running-operation"))
        .then_some(())
    });
}

/// Starts a run of [`SLOW_WORKFLOW`] on the replica at `port` (on a thread: the run blocks
/// its caller) and returns its execution id once it is recorded `inprogress`.
fn start_slow_run(kubectl: &Kubectl, port: u16) -> String {
    std::thread::spawn(move || {
        let client = McpClient::connect(&format!("http://127.0.0.1:{port}/mcp")).ok();
        client.map(|c| c.call("workflow_slow", json!({})))
    });
    wait_until("an inprogress execution", Duration::from_secs(30), || {
        let names = kubectl_ok(
            kubectl,
            &[
                "get",
                "wfe",
                "-o",
                "jsonpath={range .items[*]}{.metadata.name} {.spec.status}{\"\\n\"}{end}",
            ],
        );
        names
            .lines()
            .find(|l| l.ends_with(" inprogress"))
            .map(|l| l.split(' ').next().unwrap_or_default().to_owned())
    })
}

/// The WorkflowExecution `name`.
fn execution(kubectl: &Kubectl, name: &str) -> Value {
    let record = kubectl_ok(kubectl, &["get", "wfe", name, "-o", "json"]);
    serde_json::from_str(&record).expect("a WorkflowExecution as JSON")
}

#[test]
fn a_stopped_replica_records_its_running_executions_as_failed() {
    let (_server, kubectl) = cluster();
    let (_everything, url) = everything(kubectl.dir());
    let mut replica = Replica::start(&kubectl, "muster-a");
    serve_slow_workflow(&kubectl, &url, &replica);
    let running = start_slow_run(&kubectl, replica.port);

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(replica.process.child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let exited = wait_until("muster to exit", Duration::from_secs(30), || {
        replica.process.child.try_wait().ok().flatten()
    });
    assert!(exited.success(), "{exited}\n{}", replica.process.log());
    let record = execution(&kubectl, &running);
    assert_eq!(record["spec"]["status"], "failed", "{record}");
    let error = record["spec"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("muster was stopped"), "{record}");
    let leases = kubectl_ok(
        &kubectl,
        &["get", "leases", "-l", "muster.giantswarm.io/heartbeat"],
    );
    assert!(
        !leases.contains("muster-replica-"),
        "a stopped replica ends its heartbeat: {leases}"
    );
}

#[test]
fn the_runs_of_a_killed_replica_are_recorded_failed_once_by_the_leader() {
    let (server, kubectl) = cluster();
    let (_everything, url) = everything(kubectl.dir());
    let leader = Replica::start(&kubectl, "muster-a");
    wait_until("muster-a to lead", Duration::from_secs(20), || {
        kubectl_ok(
            &kubectl,
            &[
                "get",
                "lease",
                "muster-leader",
                "-o",
                "jsonpath={.spec.holderIdentity}",
            ],
        )
        .starts_with("muster-a")
        .then_some(())
    });
    let mut follower = Replica::start(&kubectl, "muster-b");
    serve_slow_workflow(&kubectl, &url, &follower);
    let running = start_slow_run(&kubectl, follower.port);
    let record = execution(&kubectl, &running);
    let owner = record["metadata"]["labels"]["muster.giantswarm.io/replica"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(owner.len(), 32, "the record names its replica: {record}");
    let heartbeat = format!("muster-replica-{owner}");
    assert!(
        kubectl_ok(
            &kubectl,
            &[
                "get",
                "lease",
                &heartbeat,
                "-o",
                "jsonpath={.spec.holderIdentity}"
            ]
        )
        .starts_with("muster-b")
    );

    // SIGKILL: nothing of muster-b runs after this, so every later write is another's.
    follower.process.kill();
    let killed_at = server.requests().len();
    let started = Instant::now();
    let record = wait_until("the record to fail", Duration::from_secs(60), || {
        let record = execution(&kubectl, &running);
        (record["spec"]["status"] == "failed").then_some(record)
    });
    let took = started.elapsed();
    let error = record["spec"]["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("execution interrupted: the muster replica running it (muster-b-")
            && error.ends_with(") stopped before the workflow finished"),
        "{record}"
    );
    assert_eq!(
        record["metadata"]["labels"]["muster.giantswarm.io/status"],
        "failed"
    );
    assert!(record["spec"]["completedAt"].is_string(), "{record}");
    // Written once, with the resourceVersion read (no blind overwrite), and not again.
    std::thread::sleep(Duration::from_secs(12));
    let path = format!("workflowexecutions/{running}");
    let writes: Vec<String> = server.requests()[killed_at..]
        .iter()
        .filter(|r| r.starts_with("PUT ") && r.contains(&path))
        .cloned()
        .collect();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert!(took < Duration::from_secs(45), "found after {took:?}");
    // The dead replica's heartbeat goes; the leader's own stays.
    wait_until("the dead heartbeat to go", Duration::from_secs(20), || {
        let leases = kubectl_ok(&kubectl, &["get", "leases", "-o", "name"]);
        (!leases.contains(&heartbeat)).then_some(())
    });
    assert!(leader.reachable().iter().any(|t| t == "workflow_slow"));
    assert!(
        kubectl_ok(
            &kubectl,
            &[
                "get",
                "leases",
                "-l",
                "muster.giantswarm.io/heartbeat",
                "-o",
                "jsonpath={.items[*].spec.holderIdentity}"
            ]
        )
        .starts_with("muster-a")
    );
}

/// `GET /ready` and its body.
fn ready(port: u16) -> (u16, Value) {
    let response =
        reqwest::blocking::get(format!("http://127.0.0.1:{port}/ready")).expect("/ready answers");
    let status = response.status().as_u16();
    (status, response.json().expect("/ready is JSON"))
}

#[test]
fn ready_follows_the_api_server() {
    let (mut server, kubectl) = cluster();
    let replica = Replica::start(&kubectl, "ready-0");
    let (status, body) = ready(replica.port);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ready", "{body}");
    let names: Vec<&str> = body["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["config", "kubernetes", "stores", "mcpservers"]);

    server.stop();
    let (status, body) = wait_until("/ready to fail", Duration::from_secs(20), || {
        let (status, body) = ready(replica.port);
        (status == 503).then_some((status, body))
    });
    assert_eq!(body["status"], "not_ready", "{body}");
    let kubernetes = &body["checks"][1];
    assert_eq!(kubernetes["status"], "failed", "{body}");
    assert!(
        kubernetes["message"]
            .as_str()
            .is_some_and(|m| m.contains("API server unreachable")),
        "{body}"
    );
    // Liveness does not follow the API server: restarting muster would not bring it back.
    assert_eq!(
        reqwest::blocking::get(format!("http://127.0.0.1:{}/health", replica.port))
            .expect("/health")
            .status()
            .as_u16(),
        200
    );
    assert_eq!(status, 503);
}

/// Calls `tool` until it answers without error (a session's connection is made on its first
/// requests); the answer's JSON. On timeout the last answer and `muster`'s log are shown.
fn call_until_ok(client: &McpClient, tool: &str, muster: &Replica) -> Value {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let answer = client.call(tool, json!({}));
        if let Ok(answer) = &answer
            && !answer.is_error
            && let Ok(value) = answer.json()
        {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{tool} never answered: {:?}\nlog:\n{}",
            answer.map(|a| a.text().to_owned()),
            muster.process.log()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn token_exchange_servers_get_the_callers_token_exchanged_at_the_remote_provider() {
    use muster_tests::oidc::{ExchangeIdp, ExchangeOptions, Upstream, UpstreamOptions};

    let (_server, kubectl) = cluster();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let upstream = Upstream::start(&UpstreamOptions {
        idp_port: free_port(),
        mint_port: free_port(),
        mcp_port: 0,
        client_id: "muster",
        client_secret: "upstream-client-secret-5f2c9a",
        redirect_uri: &format!("{base}/oauth/callback"),
        user: "alice",
    })
    .expect("the upstream provider starts");
    let remote = ExchangeIdp::start(&ExchangeOptions {
        dir: kubectl.dir(),
        client_id: "muster-remote",
        client_secret: "exchange-client-s3cret-77a1",
        connector_id: "local-dex",
        trusted_issuer: &upstream.minter,
        trusted_jwks: &format!("{}/jwks", upstream.minter),
        token_ttl: 33,
        required_audience: Some("kubernetes"),
    })
    .expect("the remote provider starts");
    let oauth = json!({"server": {
        "enabled": true,
        "baseUrl": base,
        "dex": {"issuerUrl": upstream.issuer, "clientId": "muster", "clientSecret": "upstream-client-secret-5f2c9a"},
        "trustedIssuers": [{"issuer": upstream.minter, "jwksUrl": format!("{}/jwks", upstream.minter), "allowPrivateIPJWKS": true}],
    }});
    let ca = remote.certificate.display().to_string();
    let muster = Replica::start_on(
        &kubectl,
        "muster-0",
        port,
        &format!(
            "  oauth: {oauth}\nsecretBinding:\n  admissionPolicyBinding: muster-mcpserver-secret-references\n"
        ),
        &["--extra-ca-file", &ca],
    );
    apply(&kubectl, POLICY);
    apply(
        &kubectl,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: remote-dex-client\n  namespace: default\nstringData:\n  client-id: muster-remote\n  client-secret: exchange-client-s3cret-77a1\n",
    );
    apply(
        &kubectl,
        &format!(
            "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: remote\n  namespace: default\nspec:\n  type: streamable-http\n  url: {}\n  autoStart: true\n  auth:\n    requiredAudiences: [kubernetes]\n    tokenExchange:\n      enabled: true\n      dexTokenEndpoint: {}\n      connectorId: local-dex\n      clientCredentialsSecretRef:\n        name: remote-dex-client\n",
            remote.mcp, remote.token_endpoint
        ),
    );
    // muster's own, token-less connection finds the server protected: it waits for a session.
    wait_until("Awaiting Session", Duration::from_secs(40), || {
        (state(&kubectl, "remote") == "Awaiting Session").then_some(())
    });
    let session = |token: &str| {
        let header = format!("Bearer {token}");
        McpClient::connect_with_headers(&format!("{base}/mcp"), &[("authorization", &header)])
            .expect("an MCP session with a bearer")
    };
    let mut seen = vec!["exchange-client-s3cret-77a1".to_owned()];

    // A caller with a trusted issuer's token: the server sees the remote provider's token
    // for that subject, with the required audience; the exchange is made once and kept.
    let bob_token = upstream.mint(json!({"sub": "bob", "aud": base, "email": "bob@example.com"}));
    seen.push(bob_token.clone());
    let bob = session(&bob_token);
    let who = call_until_ok(&bob, "x_remote_whoami", &muster);
    assert_eq!(who["iss"], remote.issuer.as_str(), "{who}");
    assert_eq!(who["sub"], "bob");
    assert_eq!(who["aud"], json!(["muster-remote", "kubernetes"]));
    call_until_ok(&bob, "x_remote_whoami", &muster);
    let exchanges = remote.exchanges().expect("the exchange count");
    assert_eq!(exchanges["count"], 1, "{exchanges}");
    wait_until("Connected with a session", Duration::from_secs(20), || {
        (state(&kubectl, "remote") == "Connected").then_some(())
    });

    // The exchanged token lives 33 s and is renewed 30 s before it expires: after 4 s the
    // next call exchanges again first.
    std::thread::sleep(Duration::from_secs(4));
    call_until_ok(&bob, "x_remote_whoami", &muster);
    let exchanges = remote.exchanges().expect("the exchange count");
    assert_eq!(exchanges["count"], 2, "{exchanges}");

    // The server refuses the exchanged token (401): muster exchanges once more and the call
    // goes through.
    remote.revoke_issued().expect("revoke");
    let answer = bob.call("x_remote_whoami", json!({})).expect("a call");
    assert!(
        !answer.is_error,
        "{}\nlog:\n{}",
        answer.text(),
        muster.process.log()
    );
    let exchanges = remote.exchanges().expect("the exchange count");
    assert_eq!(exchanges["count"], 3, "{exchanges}");

    // A caller the remote provider refuses gets no connection, and the reason.
    let refused_token = upstream.mint(json!({"sub": "refused", "aud": base}));
    seen.push(refused_token.clone());
    let mallory = session(&refused_token);
    let answer = mallory.call("x_remote_whoami", json!({})).expect("a call");
    assert!(answer.is_error, "{}", answer.text());
    let status = mallory
        .request("resources/read", json!({"uri": "auth://status"}))
        .expect("auth://status");
    let status = status["contents"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(status.contains("\"sso_attempt_failed\": true"), "{status}");
    assert!(
        status.contains("\"token_exchange_enabled\": true"),
        "{status}"
    );

    // An endpoint failing for everyone is reported as such.
    remote.fail_next("server_error", 503).expect("fail-next");
    let carol_token = upstream.mint(json!({"sub": "carol", "aud": base}));
    seen.push(carol_token.clone());
    let carol = session(&carol_token);
    assert!(
        carol
            .call("x_remote_whoami", json!({}))
            .expect("a call")
            .is_error
    );
    // ... and fails the server until an exchange succeeds again.
    wait_until("Failed by the exchange", Duration::from_secs(20), || {
        (state(&kubectl, "remote") == "Failed").then_some(())
    });
    let ready = kubectl_ok(
        &kubectl,
        &[
            "get",
            "mcps",
            "remote",
            "-o",
            "jsonpath={.status.conditions[0].reason}",
        ],
    );
    assert_eq!(ready, "TokenExchangeEndpoint");
    assert!(last_error(&kubectl, "remote").contains("unreachable: server_error"));
    let dave_token = upstream.mint(json!({"sub": "dave", "aud": base}));
    seen.push(dave_token.clone());
    let dave = session(&dave_token);
    call_until_ok(&dave, "x_remote_whoami", &muster);
    wait_until("Connected again", Duration::from_secs(20), || {
        (state(&kubectl, "remote") == "Connected").then_some(())
    });

    let auditor = session(&upstream.mint(json!({"sub": "auditor", "aud": base})));
    let events = auditor
        .call("core_events", json!({}))
        .expect("core_events")
        .text()
        .to_owned();
    assert!(
        events.contains(
            "MCPServer remote: Token successfully exchanged via RFC 8693 for cross-cluster SSO"
        ),
        "{events}"
    );
    assert!(
        events.contains("MCPServer remote: RFC 8693 token exchange failed: the identity provider refused the caller's token: invalid_grant"),
        "{events}"
    );
    assert!(events.contains("unreachable: server_error"), "{events}");

    // No token or secret anywhere muster writes.
    seen.extend(remote.accepted_tokens(kubectl.dir()));
    let outputs = [
        ("muster's log", muster.process.log()),
        ("the events", events),
        (
            "the MCPServer",
            kubectl_ok(&kubectl, &["get", "mcps", "remote", "-o", "yaml"]),
        ),
        (
            "the Kubernetes events",
            kubectl_ok(&kubectl, &["get", "events", "-o", "yaml"]),
        ),
    ];
    assert!(seen.len() > 4, "the server accepted exchanged tokens");
    for secret in &seen {
        for (what, text) in &outputs {
            assert!(!text.contains(secret.as_str()), "a credential is in {what}");
        }
    }
}
