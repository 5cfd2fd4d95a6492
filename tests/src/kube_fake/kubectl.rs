//! Running the real `kubectl` against a fake API server, with its own kubeconfig and
//! discovery cache (so no test sees another's cached resource list).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{Context as _, bail};

use super::FakeApiServer;

/// The environment variable naming a `kubectl` binary to use.
pub const KUBECTL_ENV: &str = "KUBECTL";

/// The `kubectl` binary: `$KUBECTL`, `<test deps>/bin/kubectl`, or `kubectl` on `PATH`.
///
/// # Errors
///
/// When none is found, saying how to get one.
pub fn kubectl_binary() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os(KUBECTL_ENV) {
        return Ok(PathBuf::from(p));
    }
    let bundled = crate::deps::dir().join("bin/kubectl");
    if bundled.exists() {
        return Ok(bundled);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join("kubectl");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!(
        "kubectl not found: set {KUBECTL_ENV}, put it on PATH, or run \
         crates/muster-aggregator/tests/fixtures/install-test-deps.sh {}",
        crate::deps::dir().display()
    )
}

/// `kubectl` bound to one fake API server.
#[derive(Debug)]
pub struct Kubectl {
    binary: PathBuf,
    dir: tempfile::TempDir,
}

/// What one `kubectl` run printed.
#[derive(Debug, Clone)]
pub struct KubectlOutput {
    /// Whether it exited with 0.
    pub success: bool,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl KubectlOutput {
    fn from(out: Output) -> Self {
        Self {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The output, or an error carrying both streams.
    ///
    /// # Errors
    ///
    /// When kubectl failed.
    pub fn ok(self) -> anyhow::Result<String> {
        if self.success {
            Ok(self.stdout)
        } else {
            bail!("kubectl failed:\n{}{}", self.stdout, self.stderr)
        }
    }
}

impl Kubectl {
    /// A kubectl for `server`.
    ///
    /// # Errors
    ///
    /// When kubectl is missing or the kubeconfig cannot be written.
    pub fn new(server: &FakeApiServer) -> anyhow::Result<Self> {
        let binary = kubectl_binary()?;
        let dir = tempfile::tempdir().context("creating the kubectl directory")?;
        server.write_kubeconfig(&dir.path().join("kubeconfig"))?;
        Ok(Self { binary, dir })
    }

    /// The kubeconfig file.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// A directory for the test's files (removed with this value).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A `kubectl` command with `KUBECONFIG` and `KUBECACHEDIR` set.
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.binary);
        c.env("KUBECONFIG", self.kubeconfig())
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .stdin(Stdio::null());
        c
    }

    /// Runs `kubectl ARGS`.
    ///
    /// # Errors
    ///
    /// When kubectl cannot be started.
    pub fn run(&self, args: &[&str]) -> anyhow::Result<KubectlOutput> {
        let out = self
            .command()
            .args(args)
            .output()
            .context("running kubectl")?;
        Ok(KubectlOutput::from(out))
    }

    /// Runs `kubectl ARGS` with `input` on standard input (for `-f -`).
    ///
    /// # Errors
    ///
    /// When kubectl cannot be started.
    pub fn run_with_input(&self, args: &[&str], input: &str) -> anyhow::Result<KubectlOutput> {
        use std::io::Write as _;
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running kubectl")?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(input.as_bytes())
                .context("writing to kubectl")?;
        }
        Ok(KubectlOutput::from(
            child.wait_with_output().context("waiting for kubectl")?,
        ))
    }
}
