//! The MCP servers' and the catalogue's metrics, read at scrape time.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry as MetricsRegistry;

use super::Services;
use crate::backend::{BackendSnapshot, ServiceState};

/// Reads the MCP servers and the catalogue of a [`Services`] at scrape time.
#[derive(Debug)]
pub struct ServicesCollector {
    services: Services,
}

impl ServicesCollector {
    /// Registers the collector over `services` in `registry`.
    pub fn register(registry: &mut MetricsRegistry, services: Services) {
        registry.register_collector(Box::new(Self { services }));
    }
}

/// Every state a server can be in, for `muster_mcpserver_state`.
const STATES: [ServiceState; 10] = [
    ServiceState::Unknown,
    ServiceState::Starting,
    ServiceState::Running,
    ServiceState::Connected,
    ServiceState::Stopping,
    ServiceState::Stopped,
    ServiceState::Failed,
    ServiceState::Unreachable,
    ServiceState::AuthRequired,
    ServiceState::Disconnected,
];

/// Reads one counter of a server's snapshot.
type SnapshotCounter = fn(&BackendSnapshot) -> u64;

impl Collector for ServicesCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let snapshots = self.services.snapshots();
        {
            let mut metric = encoder.encode_descriptor(
                "muster_mcpserver_state",
                "1 for the state each MCP server is in, 0 for the others",
                None,
                MetricType::Gauge,
            )?;
            for s in &snapshots {
                for candidate in STATES {
                    let labels = [("server", s.name.as_str()), ("state", candidate.as_str())];
                    ConstGauge::new(i64::from(candidate == s.state))
                        .encode(metric.encode_family(&labels)?)?;
                }
            }
        }
        let counters: [(&str, &str, SnapshotCounter); 3] = [
            (
                "muster_mcpserver_connect_attempts",
                "Connection attempts to each MCP server since its service was created; every one after the first is a reconnect",
                |s| s.connect_attempts,
            ),
            (
                "muster_mcpserver_connect_failures",
                "Failed connection attempts and lost connections of each MCP server",
                |s| s.connect_failures,
            ),
            (
                "muster_mcpserver_restarts",
                "Restarts of each MCP server's service",
                |s| u64::from(s.restart_count),
            ),
        ];
        for (name, help, value) in counters {
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for s in &snapshots {
                ConstCounter::new(value(s))
                    .encode(metric.encode_family(&[("server", s.name.as_str())])?)?;
            }
        }

        let catalog = self.services.registry().snapshot();
        let mut metric = encoder.encode_descriptor(
            "muster_catalog_items",
            "Tools, prompts and resources muster currently exposes",
            None,
            MetricType::Gauge,
        )?;
        for (kind, count) in [
            ("tool", catalog.tools().len()),
            ("prompt", catalog.prompts().len()),
            ("resource", catalog.resources().len()),
        ] {
            ConstGauge::new(i64::try_from(count).unwrap_or(i64::MAX))
                .encode(metric.encode_family(&[("kind", kind)])?)?;
        }
        Ok(())
    }
}
