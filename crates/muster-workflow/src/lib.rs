//! # muster-workflow
//!
//! The workflow engine of muster, usable on its own: `cargo add muster-workflow` brings in
//! neither Kubernetes nor HTTP dependencies. Its muster dependencies are `muster-core` (the
//! contracts) and `muster-gotmpl` (Go templates, re-exported as [`template`]).
//!
//! The engine is a tower `Service<RunWorkflow>` whose two collaborators are a
//! [`ToolService`](muster_core::ToolService) for effects and an
//! [`ExecutionStore`](muster_core::ExecutionStore) for durability. It plans a
//! [`WorkflowSpec`](muster_core::resource::workflow::WorkflowSpec) once (templates and jq
//! programs parsed, step references resolved), then executes it step by step, recording every
//! transition before moving on.
//!
//! Where to start: compile a spec into a [`Plan`] with [`Plan::compile`], build an [`Engine`]
//! with [`Engine::builder`] from any tool service and execution store, and call it with a
//! [`RunWorkflow`] (it is a tower `Service`, so deadlines and concurrency limits are layers).
//!
//! - [`plan`]: a workflow spec compiled once, before anything runs.
//! - [`exec`]: the [`Engine`] service, step kinds, `allowFailure` and `onFailure`, every
//!   transition recorded through the `ExecutionStore` before the engine moves on.
//! - [`query`]: jq programs (jaq) that reshape step results; [`path`]: the path navigator of
//!   conditions, pagination and typed templates.
//! - [`budget`]: time budgets of jq and template evaluation, off the async workers.
//! - [`tools`]: the `workflow_<name>` tools and the `core_workflow_*` tools as one
//!   `ToolProvider`.
//! - [`reconcile`]: `Reconcile<Workflow>`, validation written into the status.
//! - [`metrics`]: executions and steps by status, with their durations.

pub mod budget;
pub mod exec;
pub mod metrics;
pub mod path;
pub mod plan;
pub mod query;
pub mod reconcile;
pub mod tools;
mod value_tree;

/// Go-template rendering with the sprig function set and typed output: the
/// [`muster_gotmpl`] crate, which the engine renders every template with.
pub use muster_gotmpl as template;

pub use budget::Evaluator;
pub use exec::{Engine, EngineBuilder, RunWorkflow, WorkflowError, WorkflowResponse};
pub use plan::Plan;
pub use reconcile::WorkflowReconciler;
pub use tools::{WorkflowTools, WorkflowToolsBuilder};
