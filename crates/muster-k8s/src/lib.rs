//! # muster-k8s
//!
//! The Kubernetes mode of muster: the `MCPServer`, `Workflow` and `WorkflowExecution` custom
//! resources bound to the spec types of `muster-core`, stores over the Kubernetes API, and
//! controllers that drive the same `Reconcile` implementations the filesystem mode runs.
//!
//! This is the only muster crate that will depend on `kube`. Its modules are filled as the
//! Kubernetes mode lands:
//!
//! The shared contracts come from [`muster_core`].
//!
//! - `crd`: the custom resource kinds and their CRD YAML;
//! - `store`: `ResourceStore` over the API, reads from a reflector;
//! - `executions`: `ExecutionStore` over `WorkflowExecution` objects;
//! - `controller`: `Reconcile<K>` driven by `kube_runtime::Controller`;
//! - `secrets`: credentials from Secrets as `SecretString`.
