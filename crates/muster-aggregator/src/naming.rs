//! Pure functions that name what the aggregator exposes: tools, prompts and resources of the
//! MCP servers behind it, and the `family` grouping of equivalent servers.
//!
//! Nothing here does IO or keeps state; the [`registry`](crate::registry) calls these
//! functions whenever its backend set changes.
//!
//! The rules (see the reference, §2):
//!
//! - A backend tool is exposed as `<musterPrefix>_<serverPrefix>_<tool>` ([`exposed_name`]),
//!   where the server prefix is `toolPrefix` or the server name, preceded by the server's
//!   namespace when that is not muster's own ([`server_prefix`]). A tool whose name already
//!   starts with `<serverPrefix>_` is not prefixed twice.
//! - Prompts follow the same rule; resource URIs containing `://` are exposed unchanged
//!   ([`exposed_uri`]).
//! - Servers sharing a `family` expose each tool once as `<musterPrefix>_<family>_<tool>`
//!   with a required instance argument ([`plan_tools`]).
//! - Servers sharing a prefix collide ([`prefix_collisions`]): the one whose name sorts first
//!   owns the prefix, and a tool name offered by several of them goes to it.

mod collision;
mod family;
mod schema;

use muster_core::resource::mcp_server::Family;

pub use collision::{PrefixCollision, prefix_collisions};
pub use family::{
    BackendTools, FamilyDescriptions, FamilyMember, PlannedRoute, PlannedTool, plan_tools,
};
pub use schema::{INSTANCE_ARG_DESCRIPTION_PREFIX, SERVERS_TRAILER_PREFIX};

/// The meta-tools' names in `tools/list` order.
pub const META_TOOL_NAMES: [&str; 11] = [
    "list_tools",
    "describe_tool",
    "list_core_tools",
    "filter_tools",
    "call_tool",
    "list_resources",
    "describe_resource",
    "get_resource",
    "list_prompts",
    "describe_prompt",
    "get_prompt",
];

/// The default global prefix of downstream tools (`aggregator.musterPrefix`).
pub const DEFAULT_MUSTER_PREFIX: &str = "x";

/// Aggregator-wide naming options.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NamingOptions {
    /// The global prefix of downstream tools and prompts; `x` unless configured.
    pub muster_prefix: String,
    /// muster's own namespace. Servers in another namespace get that namespace in front of
    /// their prefix; `None` (filesystem mode) means no server is foreign.
    pub home_namespace: Option<String>,
    /// How family members whose tool descriptions differ are exposed.
    pub family_descriptions: FamilyDescriptions,
}

impl Default for NamingOptions {
    fn default() -> Self {
        Self {
            muster_prefix: DEFAULT_MUSTER_PREFIX.to_owned(),
            home_namespace: None,
            family_descriptions: FamilyDescriptions::default(),
        }
    }
}

impl NamingOptions {
    /// Replaces the global prefix.
    #[must_use]
    pub fn with_muster_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.muster_prefix = prefix.into();
        self
    }

    /// Sets muster's own namespace.
    #[must_use]
    pub fn with_home_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.home_namespace = Some(namespace.into());
        self
    }

    /// Sets how diverging family descriptions are handled.
    #[must_use]
    pub fn with_family_descriptions(mut self, policy: FamilyDescriptions) -> Self {
        self.family_descriptions = policy;
        self
    }
}

/// How one backend (MCP server) wants its items named: the naming fields of its spec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendNaming {
    /// The server's namespace, when it has one.
    pub namespace: Option<String>,
    /// `spec.toolPrefix`.
    pub tool_prefix: Option<String>,
    /// `spec.family`.
    pub family: Option<Family>,
}

impl BackendNaming {
    /// Naming with a tool prefix.
    #[must_use]
    pub fn with_tool_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.tool_prefix = Some(prefix.into());
        self
    }

    /// Naming in a namespace.
    #[must_use]
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Naming as a member of `family`, selected by `instance_arg`.
    #[must_use]
    pub fn with_family(mut self, name: impl Into<String>, instance_arg: impl Into<String>) -> Self {
        self.family = Some(Family {
            name: name.into(),
            instance_arg: instance_arg.into(),
        });
        self
    }

    /// The family, when both its name and instance argument are set.
    pub fn effective_family(&self) -> Option<&Family> {
        self.family
            .as_ref()
            .filter(|f| !f.name.is_empty() && !f.instance_arg.is_empty())
    }
}

/// The prefix a server's items carry: `toolPrefix` or the server name, preceded by
/// `<namespace>_` when the server lives outside muster's namespace.
pub fn server_prefix(options: &NamingOptions, server: &str, naming: &BackendNaming) -> String {
    let base = naming
        .tool_prefix
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(server);
    match (
        naming.namespace.as_deref(),
        options.home_namespace.as_deref(),
    ) {
        (Some(ns), Some(home)) if !ns.is_empty() && ns != home => format!("{ns}_{base}"),
        _ => base.to_owned(),
    }
}

/// The exposed name of `item` (a tool or prompt) under `scope` (a server prefix or a family
/// name): `<musterPrefix>_<scope>_<item>`, without repeating `scope` when `item` already
/// starts with `<scope>_`.
pub fn exposed_name(options: &NamingOptions, scope: &str, item: &str) -> String {
    let scoped = if item
        .strip_prefix(scope)
        .is_some_and(|rest| rest.starts_with('_'))
    {
        item.to_owned()
    } else {
        format!("{scope}_{item}")
    };
    if options.muster_prefix.is_empty() {
        scoped
    } else {
        format!("{}_{scoped}", options.muster_prefix)
    }
}

/// The exposed URI of a resource: unchanged when it contains `://`, otherwise named like a
/// tool.
pub fn exposed_uri(options: &NamingOptions, scope: &str, uri: &str) -> String {
    if uri.contains("://") {
        uri.to_owned()
    } else {
        exposed_name(options, scope, uri)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> NamingOptions {
        NamingOptions::default()
    }

    #[test]
    fn exposed_names() {
        let table = [
            // (muster prefix, scope, item, expected)
            ("x", "git", "status", "x_git_status"),
            ("x", "github", "github_list", "x_github_list"),
            ("x", "github", "githublist", "x_github_githublist"),
            ("x", "github", "github", "x_github_github"),
            ("x", "echo-provider", "echo", "x_echo-provider_echo"),
            ("x", "k8s", "k8s_", "x_k8s_"),
            ("m", "git", "status", "m_git_status"),
            ("", "git", "status", "git_status"),
            ("x", "ns_srv", "ns_srv_tool", "x_ns_srv_tool"),
            ("x", "ns_srv", "srv_tool", "x_ns_srv_srv_tool"),
        ];
        for (prefix, scope, item, expected) in table {
            let o = opts().with_muster_prefix(prefix);
            assert_eq!(
                exposed_name(&o, scope, item),
                expected,
                "{prefix} {scope} {item}"
            );
        }
    }

    #[test]
    fn server_prefixes() {
        let home = opts().with_home_namespace("muster");
        let table: [(&NamingOptions, &str, BackendNaming, &str); 8] = [
            (&opts(), "git", BackendNaming::default(), "git"),
            (
                &opts(),
                "git",
                BackendNaming::default().with_tool_prefix("g"),
                "g",
            ),
            (
                &opts(),
                "git",
                BackendNaming::default().with_tool_prefix(""),
                "git",
            ),
            // Without a home namespace nobody is foreign.
            (
                &opts(),
                "git",
                BackendNaming::default().with_namespace("team-a"),
                "git",
            ),
            (
                &home,
                "git",
                BackendNaming::default().with_namespace("muster"),
                "git",
            ),
            (
                &home,
                "git",
                BackendNaming::default().with_namespace("team-a"),
                "team-a_git",
            ),
            (
                &home,
                "git",
                BackendNaming::default()
                    .with_namespace("team-a")
                    .with_tool_prefix("g"),
                "team-a_g",
            ),
            (&home, "git", BackendNaming::default(), "git"),
        ];
        for (o, server, naming, expected) in table {
            assert_eq!(server_prefix(o, server, &naming), expected, "{naming:?}");
        }
    }

    #[test]
    fn exposed_uris() {
        let table = [
            ("fs", "file:///etc/hosts", "file:///etc/hosts"),
            ("fs", "auth://status", "auth://status"),
            ("fs", "notes/today", "x_fs_notes/today"),
            ("fs", "fs_notes", "x_fs_notes"),
        ];
        for (scope, uri, expected) in table {
            assert_eq!(exposed_uri(&opts(), scope, uri), expected);
        }
    }

    #[test]
    fn effective_family_needs_both_fields() {
        let full = BackendNaming::default().with_family("k8s", "cluster");
        assert!(full.effective_family().is_some());
        let no_arg = BackendNaming::default().with_family("k8s", "");
        assert!(no_arg.effective_family().is_none());
        let no_name = BackendNaming::default().with_family("", "cluster");
        assert!(no_name.effective_family().is_none());
    }
}
