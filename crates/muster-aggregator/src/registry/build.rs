//! Building an [`AggregatedCatalog`] from the registered providers.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use muster_core::tool::{Catalog, ToolProvider};

use crate::metrics::{AggregatorMetrics, CallMeter, SERVER_KIND};

use super::catalog::{
    AggregatedCatalog, ExposedPrompt, ExposedResource, ExposedTool, FamilyTarget, ItemOrigin,
    Route, Target, ToolOrigin,
};
use crate::naming::{
    BackendNaming, BackendTools, NamingOptions, PlannedRoute, exposed_name, exposed_uri,
    plan_tools, server_prefix,
};

/// One registered MCP server.
#[derive(Debug, Clone)]
pub(crate) struct BackendEntry {
    pub(crate) naming: BackendNaming,
    pub(crate) provider: Arc<dyn ToolProvider>,
}

/// The catalog of `backends` (sorted by server name) and `cores` (in order) at `generation`;
/// `previous` is the snapshot it replaces.
pub(crate) fn build(
    options: &NamingOptions,
    backends: &[(&str, &BackendEntry)],
    cores: &[&Arc<dyn ToolProvider>],
    generation: u64,
    previous: &AggregatedCatalog,
    metrics: Option<&AggregatorMetrics>,
) -> AggregatedCatalog {
    let catalogs: Vec<(&str, &BackendEntry, Arc<Catalog>)> = backends
        .iter()
        .map(|&(server, entry)| (server, entry, entry.provider.catalog()))
        .collect();
    let core_catalogs: Vec<(&Arc<dyn ToolProvider>, Arc<Catalog>)> =
        cores.iter().map(|&p| (p, p.catalog())).collect();

    let tools = tools(options, &catalogs, &core_catalogs, metrics);
    let prompts = prompts(options, &catalogs, &core_catalogs);
    let resources = resources(options, &catalogs, &core_catalogs);
    let retired = retired(previous, &tools);
    AggregatedCatalog::new(generation, tools, prompts, resources, retired)
}

/// Per-server names that `previous` exposed (or already remembered as gone) and `tools` no
/// longer has, with their server: calling one answers "server not found", as the original
/// does for a tool whose server stopped, rather than "tool not found".
fn retired(previous: &AggregatedCatalog, tools: &[ExposedTool]) -> HashMap<String, String> {
    let current: HashSet<&str> = tools.iter().map(ExposedTool::name).collect();
    let mut retired: HashMap<String, String> = previous
        .retired()
        .iter()
        .filter(|(name, _)| !current.contains(name.as_str()))
        .map(|(name, server)| (name.clone(), server.clone()))
        .collect();
    for tool in previous.tools() {
        if let ToolOrigin::Server { server } = tool.origin()
            && !current.contains(tool.name())
        {
            retired.insert(tool.name().to_owned(), server.clone());
        }
    }
    retired
}

fn tools(
    options: &NamingOptions,
    backends: &[(&str, &BackendEntry, Arc<Catalog>)],
    cores: &[(&Arc<dyn ToolProvider>, Arc<Catalog>)],
    metrics: Option<&AggregatorMetrics>,
) -> Vec<ExposedTool> {
    let inputs: Vec<BackendTools<'_>> = backends
        .iter()
        .map(|(server, entry, catalog)| BackendTools {
            server,
            naming: &entry.naming,
            tools: &catalog.tools,
        })
        .collect();
    // The metric handles of each server, resolved once per build, never per call.
    let providers: HashMap<&str, (&Arc<dyn ToolProvider>, Option<CallMeter>)> = backends
        .iter()
        .map(|(server, entry, _)| {
            let meter = metrics.map(|m| m.tool_meter(server, SERVER_KIND));
            (*server, (&entry.provider, meter))
        })
        .collect();
    let target = |server: &str, upstream: &str| {
        providers.get(server).map(|(provider, meter)| Target {
            provider: Arc::clone(provider),
            upstream: upstream.into(),
            meter: meter.clone(),
        })
    };

    let mut exposed = Vec::new();
    let mut taken = HashSet::new();
    for planned in plan_tools(options, &inputs) {
        let (origin, route) = match planned.route {
            PlannedRoute::Server { server, upstream } => {
                let Some(target) = target(&server, &upstream) else {
                    continue;
                };
                (ToolOrigin::Server { server }, Route::Single(target))
            }
            PlannedRoute::Family {
                family,
                instance_arg,
                members,
            } => {
                let members = members
                    .into_iter()
                    .filter_map(|m| {
                        target(&m.server, &m.upstream).map(|target| FamilyTarget {
                            server: m.server,
                            target,
                        })
                    })
                    .collect();
                (
                    ToolOrigin::Family { family },
                    Route::Family {
                        instance_arg,
                        members,
                    },
                )
            }
        };
        taken.insert(planned.tool.name.to_string());
        exposed.push(ExposedTool::new(planned.tool, origin, route));
    }

    for (provider, catalog) in cores {
        let meter = metrics.map(|m| m.tool_meter("", provider.name()));
        for tool in &catalog.tools {
            if !taken.insert(tool.name.to_string()) {
                tracing::warn!(tool = %tool.name, provider = provider.name(), "tool name already exposed; skipped");
                continue;
            }
            exposed.push(ExposedTool::new(
                tool.clone(),
                ToolOrigin::Core {
                    provider: provider.name().to_owned(),
                },
                Route::Single(Target {
                    provider: Arc::clone(provider),
                    upstream: tool.name.as_ref().into(),
                    meter: meter.clone(),
                }),
            ));
        }
    }
    exposed
}

fn prompts(
    options: &NamingOptions,
    backends: &[(&str, &BackendEntry, Arc<Catalog>)],
    cores: &[(&Arc<dyn ToolProvider>, Arc<Catalog>)],
) -> Vec<ExposedPrompt> {
    let mut out = Vec::new();
    let mut taken = HashSet::new();
    for (server, entry, catalog) in backends {
        let prefix = server_prefix(options, server, &entry.naming);
        for prompt in &catalog.prompts {
            let name = exposed_name(options, &prefix, &prompt.name);
            if !taken.insert(name.clone()) {
                continue;
            }
            let mut exposed = prompt.clone();
            exposed.name = name;
            out.push(ExposedPrompt::new(
                exposed,
                ItemOrigin::Server {
                    server: (*server).to_owned(),
                },
                Target {
                    provider: Arc::clone(&entry.provider),
                    upstream: prompt.name.as_str().into(),
                    meter: None,
                },
            ));
        }
    }
    for (provider, catalog) in cores {
        for prompt in &catalog.prompts {
            if !taken.insert(prompt.name.clone()) {
                continue;
            }
            out.push(ExposedPrompt::new(
                prompt.clone(),
                ItemOrigin::Core {
                    provider: provider.name().to_owned(),
                },
                Target {
                    provider: Arc::clone(provider),
                    upstream: prompt.name.as_str().into(),
                    meter: None,
                },
            ));
        }
    }
    out
}

fn resources(
    options: &NamingOptions,
    backends: &[(&str, &BackendEntry, Arc<Catalog>)],
    cores: &[(&Arc<dyn ToolProvider>, Arc<Catalog>)],
) -> Vec<ExposedResource> {
    let mut out = Vec::new();
    let mut taken = HashSet::new();
    for (server, entry, catalog) in backends {
        let prefix = server_prefix(options, server, &entry.naming);
        for resource in &catalog.resources {
            let uri = exposed_uri(options, &prefix, &resource.uri);
            if !taken.insert(uri.clone()) {
                continue;
            }
            let mut exposed = resource.clone();
            exposed.uri = uri;
            out.push(ExposedResource::new(
                exposed,
                ItemOrigin::Server {
                    server: (*server).to_owned(),
                },
                Target {
                    provider: Arc::clone(&entry.provider),
                    upstream: resource.uri.as_str().into(),
                    meter: None,
                },
            ));
        }
    }
    for (provider, catalog) in cores {
        for resource in &catalog.resources {
            if !taken.insert(resource.uri.clone()) {
                continue;
            }
            out.push(ExposedResource::new(
                resource.clone(),
                ItemOrigin::Core {
                    provider: provider.name().to_owned(),
                },
                Target {
                    provider: Arc::clone(provider),
                    upstream: resource.uri.as_str().into(),
                    meter: None,
                },
            ));
        }
    }
    out
}
