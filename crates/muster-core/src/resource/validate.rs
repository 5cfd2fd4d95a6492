//! Validation results and the context rules depend on.
//!
//! Validation is a set of pure functions that return *all* violations of a definition, never
//! only the first. Each [`Violation`] names the field path and the rule it breaks, and displays
//! as `spec.toolPrefix: must match ^[a-zA-Z][a-zA-Z0-9_-]*$`.

mod rules;

use std::fmt;

pub(crate) use rules::*;

/// The mode muster runs in; some rules depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Mode {
    /// `muster serve` against a config directory: stdio servers are allowed, and only `env` on
    /// a remote server is refused of the credential rules.
    #[default]
    Filesystem,
    /// muster in a cluster: stdio servers are refused, and credentials in `headers` or `url`
    /// are refused as the CRD does.
    Kubernetes,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Filesystem => "filesystem",
            Self::Kubernetes => "kubernetes",
        })
    }
}

/// What validation needs to know about the muster it runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationContext {
    /// Filesystem or Kubernetes mode.
    pub mode: Mode,
    /// The namespace muster itself runs in (`default` unless configured).
    pub muster_namespace: String,
}

impl Default for ValidationContext {
    fn default() -> Self {
        Self::filesystem()
    }
}

impl ValidationContext {
    /// Filesystem mode in the default namespace.
    pub fn filesystem() -> Self {
        Self {
            mode: Mode::Filesystem,
            muster_namespace: crate::DEFAULT_NAMESPACE.to_owned(),
        }
    }

    /// Kubernetes mode with muster running in `namespace`.
    pub fn kubernetes(namespace: impl Into<String>) -> Self {
        Self {
            mode: Mode::Kubernetes,
            muster_namespace: namespace.into(),
        }
    }

    /// Whether muster runs in Kubernetes mode.
    pub fn is_kubernetes(&self) -> bool {
        self.mode == Mode::Kubernetes
    }
}

/// One broken rule: the field path and the rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Violation {
    /// The field path, e.g. `spec.steps[2].forEach.parallelism`.
    pub path: String,
    /// The rule, e.g. `must be between 1 and 50`.
    pub rule: String,
}

impl Violation {
    /// A violation of `rule` at `path`.
    pub fn new(path: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            rule: rule.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.rule)
        } else {
            write!(f, "{}: {}", self.path, self.rule)
        }
    }
}

/// Every violation found in one definition. Empty means valid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidationErrors {
    violations: Vec<Violation>,
}

impl ValidationErrors {
    /// No violations yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a violation of `rule` at `path`.
    pub fn push(&mut self, path: impl Into<String>, rule: impl Into<String>) {
        self.violations.push(Violation::new(path, rule));
    }

    /// Adds every violation of `other`.
    pub fn extend(&mut self, other: ValidationErrors) {
        self.violations.extend(other.violations);
    }

    /// Whether nothing was violated.
    pub fn is_empty(&self) -> bool {
        self.violations.is_empty()
    }

    /// The number of violations.
    pub fn len(&self) -> usize {
        self.violations.len()
    }

    /// The violations, in the order they were found.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Each violation as one `path: rule` line.
    pub fn messages(&self) -> Vec<String> {
        self.violations.iter().map(ToString::to_string).collect()
    }

    /// Whether some violation's path is `path` and its rule contains `rule_fragment`.
    pub fn contains(&self, path: &str, rule_fragment: &str) -> bool {
        self.violations
            .iter()
            .any(|v| v.path == path && v.rule.contains(rule_fragment))
    }

    /// `Ok(value)` when empty, the errors otherwise.
    pub fn into_result<T>(self, value: T) -> Result<T, Self> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.violations.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{v}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

impl IntoIterator for ValidationErrors {
    type Item = Violation;
    type IntoIter = std::vec::IntoIter<Violation>;

    fn into_iter(self) -> Self::IntoIter {
        self.violations.into_iter()
    }
}
