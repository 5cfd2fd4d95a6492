//! Which muster a client command talks to: flags, contexts and `config.yaml`.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use muster_core::config::MusterConfig;
use serde::{Deserialize, Serialize};

/// The named endpoints of `~/.config/muster/contexts.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Contexts {
    /// The context used when no flag or variable names one.
    #[serde(
        rename = "current-context",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) current: Option<String>,
    /// Every context.
    #[serde(default)]
    pub(crate) contexts: Vec<NamedContext>,
}

/// One named endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NamedContext {
    /// The name, such as `local` or `prod`.
    pub(crate) name: String,
    /// The MCP endpoint.
    pub(crate) endpoint: String,
    /// Per-context settings, kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) settings: Option<serde_norway::Value>,
}

impl Contexts {
    /// `~/.config/muster/contexts.yaml`.
    pub(crate) fn path() -> anyhow::Result<PathBuf> {
        let Some(home) = std::env::var_os("HOME") else {
            bail!("HOME is not set: cannot find ~/.config/muster/contexts.yaml");
        };
        Ok(PathBuf::from(home).join(".config/muster/contexts.yaml"))
    }

    /// Reads the contexts; a missing file is an empty list.
    pub(crate) fn load() -> anyhow::Result<Self> {
        let path = Self::path()?;
        match std::fs::read_to_string(&path) {
            Ok(text) if text.trim().is_empty() => Ok(Self::default()),
            Ok(text) => serde_norway::from_str(&text)
                .with_context(|| format!("cannot read {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Writes the contexts back.
    pub(crate) fn save(&self) -> anyhow::Result<()> {
        let path = Self::path()?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let text = serde_norway::to_string(self).context("cannot encode the contexts")?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    }

    /// The context called `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&NamedContext> {
        self.contexts.iter().find(|c| c.name == name)
    }

    /// The endpoint of context `name`, or an error listing the known ones.
    pub(crate) fn endpoint_of(&self, name: &str) -> anyhow::Result<String> {
        match self.get(name) {
            Some(context) => Ok(context.endpoint.clone()),
            None => {
                let known: Vec<&str> = self.contexts.iter().map(|c| c.name.as_str()).collect();
                if known.is_empty() {
                    bail!(
                        "context {name:?} not found: there are no contexts; add one with \
                         `muster context add {name} --endpoint URL`"
                    );
                }
                bail!(
                    "context {name:?} not found; known contexts: {}",
                    known.join(", ")
                )
            }
        }
    }
}

/// Whether `name` is a valid context name: lowercase letters, digits and inner dashes, at
/// most 63 characters.
pub(crate) fn valid_context_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes.iter().all(|b| edge(b) || *b == b'-')
}

/// The endpoint by precedence: `endpoint` (flag or `MUSTER_ENDPOINT`), `context` (flag or
/// `MUSTER_CONTEXT`), the current context, then `http://<host>:<port>/mcp` of
/// `<config_dir>/config.yaml` (default `http://localhost:8090/mcp`).
pub(crate) fn resolve_endpoint(
    endpoint: Option<&str>,
    context: Option<&str>,
    config_dir: &Path,
) -> anyhow::Result<String> {
    if let Some(endpoint) = endpoint.filter(|e| !e.is_empty()) {
        return Ok(endpoint.to_owned());
    }
    let contexts = Contexts::load()?;
    if let Some(name) = context.filter(|c| !c.is_empty()) {
        return contexts.endpoint_of(name);
    }
    if let Some(current) = &contexts.current {
        return contexts.endpoint_of(current);
    }
    config_endpoint(config_dir)
}

/// The endpoint `muster serve` would listen on for `config_dir`.
fn config_endpoint(config_dir: &Path) -> anyhow::Result<String> {
    let path = config_dir.join("config.yaml");
    let config = match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => MusterConfig::default(),
        Ok(text) => serde_norway::from_str::<MusterConfig>(&text)
            .with_context(|| format!("cannot read {}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => MusterConfig::default(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    Ok(config.aggregator.endpoint())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_names() {
        assert!(valid_context_name("prod-1"));
        assert!(!valid_context_name("-prod"));
        assert!(!valid_context_name("Prod"));
        assert!(!valid_context_name(""));
        assert!(!valid_context_name(&"a".repeat(64)));
    }
}
