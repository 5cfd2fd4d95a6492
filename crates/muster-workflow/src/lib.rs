//! # muster-workflow
//!
//! The workflow engine of muster, usable on its own: `cargo add muster-workflow` brings in
//! neither Kubernetes nor HTTP dependencies. Its only muster dependency is `muster-core`.
//!
//! The engine will be a tower `Service<RunWorkflow>` whose two collaborators are a
//! [`ToolService`](muster_core::ToolService) for effects and an
//! [`ExecutionStore`](muster_core::ExecutionStore) for durability. It plans a
//! [`WorkflowSpec`](muster_core::resource::workflow::WorkflowSpec) once (templates and jq
//! programs parsed, step references resolved), then executes it step by step, recording every
//! transition before moving on.
//!
//! Structural validation of workflow definitions already lives in `muster-core`
//! ([`WorkflowSpec::validate`](muster_core::resource::workflow::WorkflowSpec::validate)); the
//! modules below are the engine's layout and are filled as the engine lands.

pub mod exec;
pub mod plan;
pub mod template;
