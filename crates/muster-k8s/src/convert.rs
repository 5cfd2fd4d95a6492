//! API objects (`DynamicObject`) to and from muster-core's [`Object<K>`], and the errors of
//! the API to [`StoreError`].

use kube::core::{ApiResource, DynamicObject};
use muster_core::resource::{Kind, Object, ObjectKey};
use muster_core::store::StoreError;
use muster_core::{API_VERSION, ValidationErrors};
use serde_json::Value;

use crate::crd::{GROUP, VERSION};

/// The API resource of a muster kind.
pub fn api_resource<K: Kind>() -> ApiResource {
    ApiResource {
        group: GROUP.to_owned(),
        version: VERSION.to_owned(),
        api_version: API_VERSION.to_owned(),
        kind: K::KIND.to_owned(),
        plural: K::PLURAL.to_owned(),
    }
}

/// The store key of an API object.
pub fn key_of(obj: &DynamicObject) -> ObjectKey {
    ObjectKey::new(
        obj.metadata.namespace.clone().unwrap_or_default(),
        obj.metadata.name.clone().unwrap_or_default(),
    )
}

/// The muster form of an API object; fails when its spec breaks the kind's rules.
pub fn to_object<K: Kind>(obj: &DynamicObject) -> Result<Object<K>, StoreError> {
    let value = serde_json::to_value(obj).map_err(|e| codec::<K>(&key_of(obj), &e))?;
    serde_json::from_value(value).map_err(|e| codec::<K>(&key_of(obj), &e))
}

/// The API form of a muster object, without the fields the API server owns.
pub fn to_dynamic<K: Kind>(obj: &Object<K>) -> Result<DynamicObject, StoreError> {
    let mut value = serde_json::to_value(obj).map_err(|e| codec::<K>(&obj.key(), &e))?;
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("generation");
        meta.remove("creationTimestamp");
        meta.insert(
            "namespace".into(),
            Value::String(obj.metadata.namespace_or_default().to_owned()),
        );
    }
    serde_json::from_value(value).map_err(|e| codec::<K>(&obj.key(), &e))
}

fn codec<K: Kind>(key: &ObjectKey, e: &serde_json::Error) -> StoreError {
    StoreError::Codec {
        message: format!("{} {key}: {e}", K::KIND),
    }
}

/// The HTTP status code of an API error, when the API server answered.
pub fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// A [`StoreError`] for an API error about `key` of kind `K`.
pub fn store_error<K: Kind>(key: &ObjectKey, e: kube::Error) -> StoreError {
    match &e {
        kube::Error::Api(status) => match status.code {
            404 => StoreError::not_found(K::KIND, key),
            409 if status.reason == "AlreadyExists" => StoreError::AlreadyExists {
                kind: K::KIND,
                key: key.to_string(),
            },
            409 => StoreError::Conflict {
                key: key.to_string(),
                expected: "the version read".to_owned(),
                found: "a newer one".to_owned(),
            },
            400 | 422 => {
                let mut errors = ValidationErrors::new();
                errors.push("", status.message.clone());
                StoreError::Invalid(Box::new(errors))
            }
            _ => StoreError::Backend(Box::new(e)),
        },
        _ => StoreError::Backend(Box::new(e)),
    }
}

#[cfg(test)]
mod tests {
    use muster_core::resource::workflow::{Step, WorkflowSpec};
    use muster_core::resource::{McpServer, Workflow};
    use serde_json::json;

    use super::*;

    #[test]
    fn round_trip_keeps_spec_status_and_metadata() {
        let spec = WorkflowSpec {
            steps: vec![Step::tool("a", "x_t")],
            ..WorkflowSpec::default()
        };
        let mut obj = Object::<Workflow>::new("wf", spec).in_namespace("ns");
        obj.metadata.labels.insert("team".into(), "a".into());
        obj.metadata.generation = Some(3);
        let dynamic = to_dynamic(&obj).unwrap();
        assert_eq!(dynamic.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(
            dynamic.metadata.generation, None,
            "the server owns generation"
        );
        let back: Object<Workflow> = to_object(&dynamic).unwrap();
        assert_eq!(back.spec, obj.spec);
        assert_eq!(back.metadata.labels, obj.metadata.labels);
    }

    #[test]
    fn a_spec_breaking_the_rules_is_a_codec_error_naming_the_object() {
        let dynamic: DynamicObject = serde_json::from_value(json!({
            "apiVersion": API_VERSION, "kind": "MCPServer",
            "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"type": "carrier-pigeon"}
        }))
        .unwrap();
        let err = to_object::<McpServer>(&dynamic).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("MCPServer ns/s:"), "{text}");
        assert!(text.contains("unsupported MCP server type"), "{text}");
    }
}
