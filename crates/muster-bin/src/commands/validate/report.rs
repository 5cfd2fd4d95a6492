//! The result of `muster validate`: one entry per file, rendered as text or JSON.

use std::fmt::Write as _;
use std::path::Path;

use muster_core::ValidationErrors;
use muster_fs::{LoadError, Loaded, LoadedConfig, Problem};
use serde::Serialize;

/// What `muster validate` found.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Report {
    /// Whether every file is valid.
    pub(super) valid: bool,
    /// How many files are valid.
    valid_count: usize,
    /// How many files are not.
    invalid_count: usize,
    /// The rules the definitions were checked with: `filesystem` or `kubernetes`.
    mode: &'static str,
    /// What needs the cluster and was therefore not checked (Kubernetes mode only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_checked: Vec<&'static str>,
    /// `config.yaml` first, then MCPServers, then Workflows, each sorted by name.
    entries: Vec<Entry>,
}

/// One file.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    kind: EntryKind,
    /// The resource name; absent for `config.yaml`.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// The file, relative to the config directory.
    path: String,
    /// Whether the file exists; only `config.yaml` may be absent.
    present: bool,
    valid: bool,
    problems: Vec<ProblemEntry>,
}

/// What kind of file an entry is.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "lowercase")]
enum EntryKind {
    Config,
    #[serde(rename = "mcpserver")]
    McpServer,
    Workflow,
}

/// One problem of a file.
#[derive(Debug, Serialize)]
struct ProblemEntry {
    /// The field path; empty when the problem is not about one field.
    field: String,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<usize>,
    /// The whole problem as one line, as the text output prints it.
    text: String,
}

/// What `muster validate` cannot check in Kubernetes mode, because only the cluster knows.
const NOT_CHECKED_WITHOUT_A_CLUSTER: [&str; 3] = [
    "that the CRDs are installed and the API server admits each file (run `kubectl apply \
     --dry-run=server -f FILE`)",
    "that the Secrets named by headersFrom and clientCredentialsSecretRef exist, have their \
     keys and are of a type muster reads",
    "that the admission policy binding of secretBinding.admissionPolicyBinding is in force",
];

// === impl Report ===

impl Report {
    /// The report of a loaded config directory, checked for Kubernetes mode when
    /// `kubernetes`.
    pub(super) fn from_loaded(loaded: &LoadedConfig, kubernetes: bool) -> Self {
        let config = &loaded.config;
        let mut entries = vec![Entry::new(
            EntryKind::Config,
            None,
            &config.path,
            config.present,
            config.result.as_ref().err(),
        )];
        entries.extend(loaded.mcp_servers.iter().map(|l| {
            let mut entry = Entry::from_loaded(EntryKind::McpServer, l);
            // What `muster serve` refuses to start in filesystem mode, reported here as well.
            if let Ok(obj) = &l.result
                && !kubernetes
            {
                entry.add_violations(&obj.spec.unsupported_in_filesystem_mode());
            }
            entry
        }));
        entries.extend(loaded.workflows.iter().map(|l| {
            let mut entry = Entry::from_loaded(EntryKind::Workflow, l);
            // Structure is checked by the loader; templates and jq programs by the planner.
            if let Ok(obj) = &l.result
                && let Err(errors) = muster_workflow::Plan::compile(&l.name, &obj.spec)
            {
                entry.add_violations(&errors);
            }
            entry
        }));
        let valid_count = entries.iter().filter(|e| e.valid).count();
        let invalid_count = entries.len() - valid_count;
        Self {
            valid: invalid_count == 0,
            valid_count,
            invalid_count,
            mode: if kubernetes {
                "kubernetes"
            } else {
                "filesystem"
            },
            not_checked: if kubernetes {
                NOT_CHECKED_WITHOUT_A_CLUSTER.to_vec()
            } else {
                Vec::new()
            },
            entries,
        }
    }

    /// One line per file, its problems indented below it, and a summary line.
    pub(super) fn to_text(&self) -> String {
        let mut out = String::new();
        for entry in &self.entries {
            let _ = writeln!(out, "{}: {}", entry.label(), entry.verdict());
            for problem in &entry.problems {
                let _ = writeln!(out, "  {}", problem.text);
            }
        }
        let _ = writeln!(
            out,
            "{} valid, {} invalid",
            self.valid_count, self.invalid_count
        );
        if !self.not_checked.is_empty() {
            let _ = writeln!(
                out,
                "Checked with the Kubernetes-mode rules (config.yaml sets kubernetes: true). \
                 Not checked without the cluster:"
            );
            for item in &self.not_checked {
                let _ = writeln!(out, "  - {item}");
            }
        }
        out
    }
}

// === impl Entry ===

impl Entry {
    fn new(
        kind: EntryKind,
        name: Option<String>,
        path: &Path,
        present: bool,
        error: Option<&LoadError>,
    ) -> Self {
        let problems: Vec<ProblemEntry> = error
            .map(LoadError::problems)
            .unwrap_or_default()
            .iter()
            .map(ProblemEntry::new)
            .collect();
        Self {
            kind,
            name,
            path: path.display().to_string(),
            present,
            valid: error.is_none(),
            problems,
        }
    }

    fn from_loaded<T>(kind: EntryKind, loaded: &Loaded<T>) -> Self {
        Self::new(
            kind,
            Some(loaded.name.clone()),
            &loaded.path,
            true,
            loaded.error(),
        )
    }

    /// Adds `errors` as problems; any makes the entry invalid.
    fn add_violations(&mut self, errors: &ValidationErrors) {
        if errors.is_empty() {
            return;
        }
        self.valid = false;
        self.problems
            .extend(errors.violations().iter().map(|v| ProblemEntry {
                field: v.path.clone(),
                message: v.rule.clone(),
                line: None,
                column: None,
                text: v.to_string(),
            }));
    }

    /// `config.yaml`, or `mcpserver/<name> (<path>)`.
    fn label(&self) -> String {
        match (&self.name, self.kind) {
            (Some(name), kind) => format!("{}/{name} ({})", kind.as_str(), self.path),
            (None, _) => self.path.clone(),
        }
    }

    fn verdict(&self) -> &'static str {
        match (self.valid, self.present) {
            (true, true) => "valid",
            (true, false) => "valid (absent, defaults apply)",
            (false, _) => "invalid",
        }
    }
}

// === impl EntryKind ===

impl EntryKind {
    const fn as_str(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::McpServer => "mcpserver",
            Self::Workflow => "workflow",
        }
    }
}

// === impl ProblemEntry ===

impl ProblemEntry {
    fn new(problem: &Problem) -> Self {
        Self {
            field: problem.field.clone(),
            message: problem.message.clone(),
            line: problem.location.map(|l| l.line),
            column: problem.location.map(|l| l.column),
            text: problem.to_string(),
        }
    }
}
