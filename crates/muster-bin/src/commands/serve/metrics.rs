//! The Prometheus metrics of `muster serve`: one registry holding the aggregator's, the
//! workflow engine's and the MCP servers' families, served at `/metrics`.

use std::sync::Arc;

use muster_aggregator::metrics::AggregatorMetrics;
use muster_aggregator::registry::RegistryBuilder;
use muster_aggregator::server::AggregatorBuilder;
use muster_aggregator::services::Services;
use muster_aggregator::services::metrics::ServicesCollector;
use muster_workflow::EngineBuilder;
use muster_workflow::metrics::WorkflowMetrics;
use prometheus_client::registry::Registry;

/// The metrics being assembled; empty when `observability.metrics.enabled` is false.
pub(crate) struct Metrics(Option<Parts>);

struct Parts {
    registry: Registry,
    aggregator: AggregatorMetrics,
    workflow: WorkflowMetrics,
}

impl Metrics {
    /// The families of the aggregator and the engine, registered when `enabled`.
    pub(crate) fn new(enabled: bool) -> Self {
        Self(enabled.then(|| {
            let mut registry = Registry::default();
            let aggregator = AggregatorMetrics::register(&mut registry);
            let workflow = WorkflowMetrics::register(&mut registry);
            Parts {
                registry,
                aggregator,
                workflow,
            }
        }))
    }

    /// `builder`, counting tool calls.
    pub(crate) fn registry(&self, builder: RegistryBuilder) -> RegistryBuilder {
        match &self.0 {
            Some(p) => builder.metrics(p.aggregator.clone()),
            None => builder,
        }
    }

    /// `builder`, counting workflow executions and steps.
    pub(crate) fn engine(&self, builder: EngineBuilder) -> EngineBuilder {
        match &self.0 {
            Some(p) => builder.metrics(p.workflow.clone()),
            None => builder,
        }
    }

    /// `builder`, serving `/metrics` with the state of `services`.
    pub(crate) fn serve(self, builder: AggregatorBuilder, services: Services) -> AggregatorBuilder {
        match self.0 {
            Some(mut p) => {
                ServicesCollector::register(&mut p.registry, services);
                builder.metrics(Arc::new(p.registry))
            }
            None => builder,
        }
    }
}
