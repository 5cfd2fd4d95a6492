//! Resource kinds, their envelope and their validation.
//!
//! A resource is an [`Object<K>`]: Kubernetes-style `apiVersion`, `kind`, [`Meta`], a spec and
//! an optional status, generic over a [`Kind`] marker ([`McpServer`], [`Workflow`],
//! [`WorkflowExecution`]). The same shape is read from YAML files in filesystem mode and from
//! custom resources in Kubernetes mode.

mod condition;
pub mod execution;
pub mod mcp_server;
mod meta;
mod name;
pub mod validate;
pub mod workflow;

use std::fmt::Debug;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

pub use condition::{Condition, ConditionStatus};
pub use execution::WorkflowExecution;
pub use mcp_server::McpServer;
pub use meta::{Meta, ObjectKey};
pub use name::{MAX_NAME_LEN, NAME_PATH, NAME_RULE, check_name, is_valid_name};
pub use validate::{Mode, ValidationContext, ValidationErrors, Violation};
pub use workflow::Workflow;

use crate::API_VERSION;

/// A resource kind: a marker type that ties a kind name to its spec and status types.
///
/// Implemented by [`McpServer`], [`Workflow`] and [`WorkflowExecution`]. Stores and reconcilers
/// are generic over it.
pub trait Kind: Debug + Clone + Default + Send + Sync + 'static {
    /// The `kind` field of the resource, e.g. `MCPServer`.
    const KIND: &'static str;
    /// The lower-case plural used in paths and directory names, e.g. `mcpservers`.
    const PLURAL: &'static str;
    /// The desired state.
    type Spec: Serialize + DeserializeOwned + JsonSchema + Debug + Clone + PartialEq + Send + Sync;
    /// The observed state written by muster.
    type Status: Serialize
        + DeserializeOwned
        + JsonSchema
        + Debug
        + Clone
        + PartialEq
        + Default
        + Send
        + Sync;
}

/// The envelope of every resource: `apiVersion`, `kind`, `metadata`, `spec`, `status`.
///
/// Modelled on kube-core's `Object<P, U>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "K::Spec: Serialize, K::Status: Serialize",
        deserialize = "K::Spec: Deserialize<'de>, K::Status: Deserialize<'de>"
    )
)]
pub struct Object<K: Kind> {
    /// Always `muster.giantswarm.io/v1alpha1`.
    #[serde(default = "api_version")]
    pub api_version: String,
    /// The kind name, [`Kind::KIND`].
    #[serde(default = "kind_name::<K>")]
    pub kind: String,
    /// Name, namespace, labels and bookkeeping.
    pub metadata: Meta,
    /// The desired state.
    pub spec: K::Spec,
    /// The observed state, absent until muster has written one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<K::Status>,
}

fn api_version() -> String {
    API_VERSION.to_owned()
}

fn kind_name<K: Kind>() -> String {
    K::KIND.to_owned()
}

impl<K: Kind> Object<K> {
    /// Creates an object with the given name in the default namespace and no status.
    pub fn new(name: impl Into<String>, spec: K::Spec) -> Self {
        Self {
            api_version: api_version(),
            kind: kind_name::<K>(),
            metadata: Meta::named(name),
            spec,
            status: None,
        }
    }

    /// Places the object in a namespace.
    #[must_use]
    pub fn in_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.metadata.namespace = Some(namespace.into());
        self
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The key that identifies the object in a store.
    pub fn key(&self) -> ObjectKey {
        self.metadata.key()
    }

    /// The status, or the default status when none was written yet.
    pub fn status_or_default(&self) -> K::Status {
        self.status.clone().unwrap_or_default()
    }
}

impl<K: Kind> JsonSchema for Object<K> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        K::KIND.into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let meta = generator.subschema_for::<Meta>();
        let spec = generator.subschema_for::<K::Spec>();
        let status = generator.subschema_for::<K::Status>();
        schemars::json_schema!({
            "type": "object",
            "description": format!("A muster {} resource.", K::KIND),
            "required": ["apiVersion", "kind", "metadata", "spec"],
            "properties": {
                "apiVersion": { "type": "string", "const": API_VERSION },
                "kind": { "type": "string", "const": K::KIND },
                "metadata": meta,
                "spec": spec,
                "status": status,
            }
        })
    }
}
