//! The `core_config_*` tools.

use muster_core::config::AggregatorConfig;
use muster_core::tool::ToolError;
use muster_core::tool::reply::{error, json, text};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;

use super::CoreTools;

impl CoreTools {
    pub(super) fn config_get(&self) -> Result<CallToolResult, ToolError> {
        let config = self.inner.config.current();
        Ok(json(&serde_json::to_value(&config).unwrap_or(Value::Null)))
    }

    pub(super) fn config_get_aggregator(&self) -> Result<CallToolResult, ToolError> {
        let config = self.inner.config.current();
        Ok(json(
            &serde_json::to_value(&config.aggregator).unwrap_or(Value::Null),
        ))
    }

    pub(super) async fn config_update_aggregator(
        &self,
        args: JsonObject,
    ) -> Result<CallToolResult, ToolError> {
        let Some(value) = args.get("aggregator").filter(|v| !v.is_null()) else {
            return Ok(error("aggregator is required"));
        };
        let aggregator: AggregatorConfig = match serde_json::from_value(value.clone()) {
            Ok(a) => a,
            Err(e) => return Ok(error(format!("Failed to parse aggregator config: {e}"))),
        };
        self.inner
            .config
            .update_aggregator(aggregator)
            .await
            .map_err(|e| ToolError::failed(format!("failed to save configuration: {e}")))?;
        Ok(text("Successfully updated aggregator configuration"))
    }

    pub(super) async fn config_save(&self) -> Result<CallToolResult, ToolError> {
        self.inner
            .config
            .save()
            .await
            .map_err(|e| ToolError::failed(format!("failed to save configuration: {e}")))?;
        Ok(text("Configuration saved successfully"))
    }

    pub(super) async fn config_reload(&self) -> Result<CallToolResult, ToolError> {
        self.inner.config.reload().await.map_err(|e| {
            tracing::error!(error = %e, "config.yaml was not reloaded; the previous configuration stays in effect");
            ToolError::failed(format!("failed to reload configuration: {e}"))
        })?;
        Ok(text("Configuration reloaded successfully"))
    }
}
