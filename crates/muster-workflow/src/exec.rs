//! Execution: the [`Engine`] service, one `match` over step kinds, `allowFailure` and
//! `onFailure`, and the recording of every step through the `ExecutionStore` before the engine
//! moves on.

mod condition;
mod engine;
mod input;
mod iteration;
mod outcome;
mod paginate;
mod record;
mod request;
mod response;
mod run;
mod scope;
mod spans;

pub use engine::{Engine, EngineBuilder, MAX_WORKFLOW_DEPTH};
pub use request::{RunWorkflow, WorkflowError};
pub use response::WorkflowResponse;
pub use spans::SPAN_TARGET;
