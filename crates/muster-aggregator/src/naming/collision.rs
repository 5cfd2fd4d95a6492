//! Servers that share a tool prefix, and which of them owns it.
//!
//! Two servers with the same prefix (`toolPrefix`, or the server name when it has none)
//! would expose the same names. The rule: the server whose name sorts first owns the prefix;
//! a tool name offered by several of them goes to the owner, and each other server's tools
//! with names the owner does not offer stay exposed. The collision is reported on every
//! server involved (an event and a status condition), so the shadowing is never silent.

use std::collections::BTreeMap;

use super::{BackendNaming, NamingOptions, server_prefix};

/// A set of servers with the same tool prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixCollision {
    /// The shared prefix.
    pub prefix: String,
    /// The server that owns it: the one whose name sorts first.
    pub owner: String,
    /// The other servers, sorted by name.
    pub others: Vec<String>,
}

impl PrefixCollision {
    /// Whether `server` is one of the servers involved.
    pub fn involves(&self, server: &str) -> bool {
        self.owner == server || self.others.iter().any(|o| o == server)
    }

    /// What the collision means, as events and conditions say it.
    pub fn message(&self) -> String {
        format!(
            "servers {} share the tool prefix {:?}: {} owns it (its name sorts first), so a \
             tool offered by more than one of them is served by {}; give each server its own \
             spec.toolPrefix",
            self.servers().join(", "),
            self.prefix,
            self.owner,
            self.owner,
        )
    }

    /// Every server involved, the owner first.
    pub fn servers(&self) -> Vec<&str> {
        std::iter::once(self.owner.as_str())
            .chain(self.others.iter().map(String::as_str))
            .collect()
    }
}

/// Every prefix shared by more than one of `servers`, sorted by prefix.
pub fn prefix_collisions<'a>(
    options: &NamingOptions,
    servers: impl IntoIterator<Item = (&'a str, &'a BackendNaming)>,
) -> Vec<PrefixCollision> {
    let mut by_prefix: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (server, naming) in servers {
        by_prefix
            .entry(server_prefix(options, server, naming))
            .or_default()
            .push(server);
    }
    by_prefix
        .into_iter()
        .filter(|(_, servers)| servers.len() > 1)
        .map(|(prefix, mut servers)| {
            servers.sort_unstable();
            let owner = servers.remove(0).to_owned();
            PrefixCollision {
                prefix,
                owner,
                others: servers.into_iter().map(str::to_owned).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_with_one_prefix_collide_and_the_first_name_owns_it() {
        let options = NamingOptions::default();
        let shared = BackendNaming::default().with_tool_prefix("gh");
        let own = BackendNaming::default();
        let servers = [
            ("zeta", &shared),
            ("alpha", &shared),
            ("gh", &own),
            ("other", &own),
        ];
        let collisions = prefix_collisions(&options, servers);
        assert_eq!(
            collisions,
            [PrefixCollision {
                prefix: "gh".into(),
                owner: "alpha".into(),
                others: vec!["gh".into(), "zeta".into()],
            }]
        );
        let c = &collisions[0];
        assert!(c.involves("zeta") && c.involves("alpha") && !c.involves("other"));
        assert_eq!(
            c.message(),
            "servers alpha, gh, zeta share the tool prefix \"gh\": alpha owns it (its name \
             sorts first), so a tool offered by more than one of them is served by alpha; give \
             each server its own spec.toolPrefix"
        );
    }

    #[test]
    fn distinct_prefixes_do_not_collide() {
        let options = NamingOptions::default();
        let a = BackendNaming::default().with_tool_prefix("a");
        let b = BackendNaming::default().with_tool_prefix("b");
        assert!(prefix_collisions(&options, [("s1", &a), ("s2", &b)]).is_empty());
    }
}
