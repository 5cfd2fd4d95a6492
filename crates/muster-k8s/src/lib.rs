//! # muster-k8s
//!
//! The Kubernetes mode of muster: the `MCPServer`, `Workflow` and `WorkflowExecution` custom
//! resources bound to the spec types of [`muster_core`], stores over the Kubernetes API, and
//! the controller that drives the same [`Reconcile`](muster_core::Reconcile) implementations
//! the filesystem mode runs.
//!
//! This is the only muster library crate that depends on `kube`.
//!
//! - [`crd`]: the three CRDs, generated from the core types, with the CRD reference's
//!   constraints as OpenAPI validation and CEL rules.
//! - [`convert`]: API objects to and from [`muster_core::Object`].
//! - [`store`]: [`KubeStore`], a `ResourceStore` whose reads come from a reflector and whose
//!   writes go through the API with optimistic concurrency, status through `/status`.
//! - [`executions`]: [`KubeExecutionStore`], an `ExecutionStore` over `WorkflowExecution`
//!   objects.
//! - [`events`]: [`KubeEventLog`], core/v1 Events written and read back.
//! - [`controller`]: [`run_controller`], a `Reconcile<K>` driven by `kube_runtime::Controller`.
//! - [`secrets`]: [`KubeSecrets`], `headersFrom` and `clientCredentialsSecretRef` values read
//!   from Secrets with the reference's rules (protected Secrets and types, the admission policy
//!   in force).
//! - [`leader`]: [`LeaderElector`], one leader among replicas through a `coordination.k8s.io`
//!   Lease.
//! - [`replicas`]: [`ReplicaHeartbeat`] and [`InterruptedRuns`], so the runs of a replica that
//!   died are recorded as failed, once.
//!
//! Where to start: [`KubeStore::builder`] for a kind, then [`run_controller`] with the reconciler
//! of that kind.

pub mod controller;
pub mod convert;
pub mod crd;
mod error;
pub mod events;
pub mod executions;
pub mod leader;
pub mod replicas;
pub mod secrets;
pub mod store;

pub use controller::run_controller;
pub use error::Error;
pub use events::KubeEventLog;
pub use executions::KubeExecutionStore;
pub use leader::{LeaderElector, Leadership};
pub use replicas::{InterruptedRuns, ReplicaHeartbeat};
pub use secrets::{KubeSecrets, SecretRules};
pub use store::KubeStore;
