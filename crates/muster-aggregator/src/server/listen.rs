//! `subscriptions/listen` for 2026-07-28 clients: after the acknowledgment, the stream
//! carries `notifications/tools/list_changed` whenever the catalog changes (the tools
//! reached through `list_tools` and `call_tool`), and the prompt and resource variants
//! when the exposed prompts or resources change, each only when the client asked for it.

use rmcp::model::{ErrorData, SubscriptionFilter};
use rmcp::service::{SubscriptionContext, SubscriptionSendError};
use tokio_util::sync::CancellationToken;

use crate::registry::{AggregatedCatalog, Registry};

/// The part of `requested` muster serves: the three list-changed kinds. Resource
/// subscriptions are not offered (muster does not advertise `resources.subscribe`).
pub(super) fn accepted_filter(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut accepted = SubscriptionFilter::new();
    accepted.tools_list_changed = requested.tools_list_changed;
    accepted.prompts_list_changed = requested.prompts_list_changed;
    accepted.resources_list_changed = requested.resources_list_changed;
    accepted
}

/// What a change is compared by.
#[derive(PartialEq)]
struct Lists {
    prompts: Vec<String>,
    resources: Vec<String>,
}

impl Lists {
    fn of(catalog: &AggregatedCatalog) -> Self {
        Self {
            prompts: catalog
                .prompts()
                .iter()
                .map(|p| p.name().to_owned())
                .collect(),
            resources: catalog
                .resources()
                .iter()
                .map(|r| r.uri().to_owned())
                .collect(),
        }
    }
}

/// Serves one subscription until the client cancels it, its stream closes or muster shuts
/// down.
pub(super) async fn listen(
    registry: &Registry,
    subscription: SubscriptionContext,
    shutdown: CancellationToken,
) -> Result<(), ErrorData> {
    let mut changes = registry.changes();
    changes.mark_unchanged();
    let mut seen = Lists::of(&registry.snapshot());
    let sink = subscription.sink().clone();
    loop {
        tokio::select! {
            () = subscription.cancelled() => return Ok(()),
            () = shutdown.cancelled() => return Ok(()),
            changed = changes.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
            }
        }
        let now = Lists::of(&registry.snapshot());
        let mut sent = vec![sink.notify_tool_list_changed().await];
        if now.prompts != seen.prompts {
            sent.push(sink.notify_prompt_list_changed().await);
        }
        if now.resources != seen.resources {
            sent.push(sink.notify_resource_list_changed().await);
        }
        seen = now;
        for result in sent {
            match result {
                Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => {}
                Err(error) => {
                    tracing::debug!(%error, "subscription stream closed");
                    return Ok(());
                }
            }
        }
    }
}
