//! Validation of a run's arguments against the workflow's `args`.

use muster_core::resource::workflow::{ArgDefinition, ArgType};
use rmcp::model::JsonObject;
use serde_json::Value;

/// Applies defaults and checks required arguments and types. Undeclared arguments are kept.
/// `_debug` is removed and reported separately.
pub(crate) fn validate(
    declared: &[(String, ArgDefinition)],
    arguments: Option<JsonObject>,
) -> (Result<Value, String>, bool) {
    let mut args = arguments.unwrap_or_default();
    let debug = match args.remove("_debug") {
        Some(Value::Bool(b)) => b,
        Some(Value::String(s)) => s == "true",
        _ => false,
    };
    for (name, def) in declared {
        match args.get(name) {
            None | Some(Value::Null) => {
                if let Some(default) = &def.default {
                    args.insert(name.clone(), default.clone());
                } else if def.required {
                    return (Err(format!("required field '{name}' is missing")), debug);
                }
            }
            Some(value) => {
                if let Some(ty) = def.arg_type()
                    && !accepts(ty, value)
                {
                    return (
                        Err(format!(
                            "field '{name}' has wrong type, expected {}",
                            ty.as_str()
                        )),
                        debug,
                    );
                }
            }
        }
    }
    (Ok(Value::Object(args)), debug)
}

/// The original's type check: `number` and `integer` accept any number.
fn accepts(ty: ArgType, value: &Value) -> bool {
    match ty {
        ArgType::Integer | ArgType::Number => value.is_number(),
        other => other.accepts(value),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn arg(ty: &str, required: bool, default: Option<Value>) -> ArgDefinition {
        ArgDefinition {
            type_: Some(ty.into()),
            required,
            default,
            description: None,
        }
    }

    #[test]
    fn defaults_required_types_and_debug() {
        let declared = vec![
            ("env".to_owned(), arg("string", true, None)),
            ("replicas".to_owned(), arg("integer", false, Some(json!(2)))),
        ];
        let args = json!({"env": "prod", "extra": 1, "_debug": "true"});
        let (res, debug) = validate(&declared, args.as_object().cloned());
        assert!(debug);
        assert_eq!(
            res.unwrap(),
            json!({"env": "prod", "extra": 1, "replicas": 2})
        );

        let (res, _) = validate(&declared, None);
        assert_eq!(res.unwrap_err(), "required field 'env' is missing");
        let (res, _) = validate(&declared, json!({"env": 3}).as_object().cloned());
        assert_eq!(
            res.unwrap_err(),
            "field 'env' has wrong type, expected string"
        );
        let (res, _) = validate(
            &declared,
            json!({"env": "x", "replicas": 1.5}).as_object().cloned(),
        );
        assert!(
            res.is_ok(),
            "integer accepts any number, as the original does"
        );
    }
}
