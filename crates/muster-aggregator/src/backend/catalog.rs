//! Listing what a server offers into a [`Catalog`], after connecting and on every
//! `notifications/*/list_changed`.

use futures::future::BoxFuture;
use muster_core::tool::{Catalog, Revision};
use rmcp::service::{Peer, RoleClient, ServiceError};

/// Lists tools, prompts, resources and resource templates, each only when the server
/// advertises the capability. A failing tool list fails the whole listing; the others are
/// optional and count as empty when they fail.
pub(crate) fn fetch<'a>(
    peer: &'a Peer<RoleClient>,
    revision: Revision,
) -> BoxFuture<'a, Result<Catalog, ServiceError>> {
    Box::pin(fetch_inner(peer, revision))
}

async fn fetch_inner(peer: &Peer<RoleClient>, revision: Revision) -> Result<Catalog, ServiceError> {
    let (has_tools, has_prompts, has_resources) = match peer.peer_info() {
        Some(info) => (
            info.capabilities.tools.is_some(),
            info.capabilities.prompts.is_some(),
            info.capabilities.resources.is_some(),
        ),
        None => (true, true, true),
    };
    let tools = if has_tools {
        peer.list_all_tools().await?
    } else {
        Vec::new()
    };
    let prompts = if has_prompts {
        optional(peer.list_all_prompts().await, "prompts")
    } else {
        Vec::new()
    };
    let (resources, resource_templates) = if has_resources {
        (
            optional(peer.list_all_resources().await, "resources"),
            optional(
                peer.list_all_resource_templates().await,
                "resource templates",
            ),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(Catalog {
        revision,
        tools,
        prompts,
        resources,
        resource_templates,
    })
}

fn optional<T>(result: Result<Vec<T>, ServiceError>, what: &str) -> Vec<T> {
    result.unwrap_or_else(|error| {
        tracing::debug!(%error, "listing {what} failed; treating as empty");
        Vec::new()
    })
}
