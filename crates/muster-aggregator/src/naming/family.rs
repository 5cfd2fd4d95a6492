//! The exposed tool surface of a set of backends: per-server names and `family` grouping.
//!
//! A family tool groups members by tool name **and input schema**, never by description
//! (the product spec, seed000): members that differ only in wording share one tool carrying
//! the most common description (a tie goes to the longest). When members' schemas accept
//! different arguments, the largest group keeps `x_<family>_<tool>` (a tie goes to the group
//! holding the alphabetically first server) and the other members expose that tool under
//! their per-server names. The original's stricter rule, where any description difference
//! makes the whole tool fall back, is available as [`FamilyDescriptions::MustMatch`].
//!
//! Kept from the original in every mode:
//! - members declaring different `instanceArg`s make the whole family fall back to
//!   per-server names;
//! - a tool whose schema already has a property named like the instance argument falls
//!   back to per-server names.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use rmcp::model::Tool;

use super::schema::{
    has_property, shape_key, strip_servers_trailer, with_instance_arg, with_servers_trailer,
};
use super::{BackendNaming, NamingOptions, exposed_name, server_prefix};

/// How family members whose tool descriptions differ are exposed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FamilyDescriptions {
    /// Descriptions never split a family tool; it carries the most common description,
    /// a tie going to the longest (seed000, the product spec).
    #[default]
    Majority,
    /// Any difference in a tool's description makes every member expose that tool under
    /// its per-server name (the Go original's behaviour).
    MustMatch,
}

/// One backend's tools, as input to [`plan_tools`].
#[derive(Debug, Clone, Copy)]
pub struct BackendTools<'a> {
    /// The server name.
    pub server: &'a str,
    /// The server's naming options.
    pub naming: &'a BackendNaming,
    /// The server's tools under their own names, in the server's order.
    pub tools: &'a [Tool],
}

/// One exposed tool: its definition as clients see it and where calls go.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedTool {
    /// The tool under its exposed name (with the instance argument for family tools).
    pub tool: Tool,
    /// Where a call of it goes.
    pub route: PlannedRoute,
}

/// Where a call of an exposed tool goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlannedRoute {
    /// One server's tool.
    Server {
        /// The server.
        server: String,
        /// The tool's name on that server.
        upstream: String,
    },
    /// A family tool: the instance argument picks the member.
    Family {
        /// The family name.
        family: String,
        /// The argument that selects the member; removed before forwarding.
        instance_arg: String,
        /// The members, sorted by server name.
        members: Vec<FamilyMember>,
    },
}

/// A member server of a family tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyMember {
    /// The server.
    pub server: String,
    /// The tool's name on that server.
    pub upstream: String,
}

/// The exposed tools of `backends`, in the order `list_tools` shows them: each server's
/// own tools (servers sorted by name, each server's tool order kept), then the family tools
/// sorted by family and tool name. A name already taken is not exposed twice; the first
/// holder keeps it.
pub fn plan_tools(options: &NamingOptions, backends: &[BackendTools<'_>]) -> Vec<PlannedTool> {
    let mut servers: Vec<&BackendTools<'_>> = backends.iter().collect();
    servers.sort_by(|a, b| a.server.cmp(b.server));

    let mut families: BTreeMap<&str, Vec<&BackendTools<'_>>> = BTreeMap::new();
    for backend in &servers {
        if let Some(family) = backend.naming.effective_family() {
            families
                .entry(family.name.as_str())
                .or_default()
                .push(backend);
        }
    }

    let mut grouped: HashSet<(&str, &str)> = HashSet::new();
    let mut family_tools = Vec::new();
    for (family, members) in &families {
        plan_family(options, family, members, &mut grouped, &mut family_tools);
    }

    let mut taken: HashSet<String> = HashSet::new();
    let mut planned = Vec::new();
    for backend in &servers {
        let prefix = server_prefix(options, backend.server, backend.naming);
        let mut own: HashSet<&str> = HashSet::new();
        for tool in backend.tools {
            let name = tool.name.as_ref();
            if grouped.contains(&(backend.server, name)) || !own.insert(name) {
                continue;
            }
            let exposed = exposed_name(options, &prefix, name);
            if !taken.insert(exposed.clone()) {
                tracing::warn!(tool = %exposed, server = backend.server, "tool name already exposed; skipped");
                continue;
            }
            let mut tool = tool.clone();
            tool.name = exposed.into();
            planned.push(PlannedTool {
                tool,
                route: PlannedRoute::Server {
                    server: backend.server.to_owned(),
                    upstream: name.to_owned(),
                },
            });
        }
    }
    for tool in family_tools {
        if taken.insert(tool.tool.name.to_string()) {
            planned.push(tool);
        } else {
            tracing::warn!(tool = %tool.tool.name, "family tool name already exposed; skipped");
        }
    }
    planned
}

/// Plans the tools of one family; records in `grouped` every `(server, tool)` served by a
/// family tool, so the per-server pass leaves them out.
fn plan_family<'a>(
    options: &NamingOptions,
    family: &str,
    members: &[&BackendTools<'a>],
    grouped: &mut HashSet<(&'a str, &'a str)>,
    out: &mut Vec<PlannedTool>,
) {
    let Some(arg) = members
        .first()
        .and_then(|m| m.naming.effective_family())
        .map(|f| f.instance_arg.as_str())
    else {
        return;
    };
    if members.iter().any(|m| {
        m.naming
            .effective_family()
            .is_some_and(|f| f.instance_arg != arg)
    }) {
        tracing::warn!(
            family,
            "family members declare different instance arguments; all fall back to per-server names"
        );
        return;
    }

    // Tool name → (server, tool) of every member offering it, members in server order.
    let mut by_tool: BTreeMap<&'a str, Vec<(&'a str, &'a Tool)>> = BTreeMap::new();
    for member in members {
        let mut own: HashSet<&str> = HashSet::new();
        for tool in member.tools {
            if own.insert(tool.name.as_ref()) {
                by_tool
                    .entry(tool.name.as_ref())
                    .or_default()
                    .push((member.server, tool));
            }
        }
    }

    for (name, offers) in by_tool {
        if offers
            .iter()
            .any(|(_, tool)| has_property(&tool.input_schema, arg))
        {
            tracing::warn!(
                family,
                tool = name,
                arg,
                "tool already has the instance argument; per-server names"
            );
            continue;
        }
        if options.family_descriptions == FamilyDescriptions::MustMatch {
            let first = description_of(offers[0].1);
            if offers.iter().any(|(_, t)| description_of(t) != first) {
                tracing::warn!(family, tool = name, "descriptions differ; per-server names");
                continue;
            }
        }
        let group = largest_schema_group(&offers);
        let descriptions: Vec<&str> = group.iter().map(|(_, t)| description_of(t)).collect();
        let description = majority(&descriptions);
        let Some(&(_, representative)) =
            group.iter().find(|(_, t)| description_of(t) == description)
        else {
            continue;
        };
        let servers: Vec<&str> = group.iter().map(|(s, _)| *s).collect();
        for (server, _) in &group {
            grouped.insert((server, name));
        }

        let mut tool = representative.clone();
        tool.name = exposed_name(options, family, name).into();
        tool.description = Some(with_servers_trailer(description, &servers).into());
        tool.input_schema = Arc::new(with_instance_arg(
            &representative.input_schema,
            arg,
            &servers,
        ));
        out.push(PlannedTool {
            tool,
            route: PlannedRoute::Family {
                family: family.to_owned(),
                instance_arg: arg.to_owned(),
                members: group
                    .iter()
                    .map(|(server, _)| FamilyMember {
                        server: (*server).to_owned(),
                        upstream: name.to_owned(),
                    })
                    .collect(),
            },
        });
    }
}

/// A tool's description without a family trailer.
fn description_of(tool: &Tool) -> &str {
    strip_servers_trailer(tool.description.as_deref().unwrap_or(""))
}

/// The members whose schemas accept the same arguments as the most members do; a tie goes
/// to the group holding the alphabetically first server (`offers` is in server order).
fn largest_schema_group<'a>(offers: &[(&'a str, &'a Tool)]) -> Vec<(&'a str, &'a Tool)> {
    let mut groups: Vec<(String, Vec<(&'a str, &'a Tool)>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for &(server, tool) in offers {
        let key = shape_key(&tool.input_schema);
        match index.get(&key) {
            Some(&i) => groups[i].1.push((server, tool)),
            None => {
                index.insert(key.clone(), groups.len());
                groups.push((key, vec![(server, tool)]));
            }
        }
    }
    let mut best: Option<Vec<(&'a str, &'a Tool)>> = None;
    for (_, group) in groups {
        if best.as_ref().is_none_or(|b| group.len() > b.len()) {
            best = Some(group);
        }
    }
    best.unwrap_or_default()
}

/// The most common text; a tie goes to the longest, then to the first seen.
fn majority<'a>(texts: &[&'a str]) -> &'a str {
    let mut counts: Vec<(&'a str, usize)> = Vec::new();
    for &text in texts {
        match counts.iter_mut().find(|(t, _)| *t == text) {
            Some((_, n)) => *n += 1,
            None => counts.push((text, 1)),
        }
    }
    let mut best: Option<(&'a str, usize)> = None;
    for (text, n) in counts {
        let better = match best {
            None => true,
            Some((b, bn)) => n > bn || (n == bn && text.chars().count() > b.chars().count()),
        };
        if better {
            best = Some((text, n));
        }
    }
    best.map(|(t, _)| t).unwrap_or("")
}

#[cfg(test)]
mod tests;
