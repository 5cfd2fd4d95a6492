//! A tool call's arguments: a JSON object, parsed or still the text the caller sent.

use std::fmt;

use rmcp::model::JsonObject;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::ToolError;

/// The arguments of a tool call: a JSON object.
///
/// Arguments that arrive as JSON text stay text until a service asks for them as an
/// object. A server that is only forwarded the call gets them as the caller wrote them —
/// key order, number spelling and integers beyond 64 bits kept — without muster parsing
/// and writing them again.
///
/// Text that is valid JSON can still fail to become an object muster holds: nesting deeper
/// than 128 levels, or a number beyond the range of `f64`. Asking for the object then
/// gives [`ToolError::InvalidArguments`].
#[derive(Clone)]
pub struct ToolArguments(Repr);

#[derive(Clone)]
enum Repr {
    Object(JsonObject),
    Text(Box<RawValue>),
}

impl ToolArguments {
    /// Arguments that are `object`.
    pub fn from_object(object: JsonObject) -> Self {
        Self(Repr::Object(object))
    }

    /// The arguments `text` holds, when it is a JSON object; `None` for any other JSON
    /// value (`null` included).
    pub fn from_text(text: Box<RawValue>) -> Option<Self> {
        text.get()
            .trim_start()
            .starts_with('{')
            .then_some(Self(Repr::Text(text)))
    }

    /// The JSON text the arguments arrived as, while nothing has asked for them as an
    /// object.
    pub fn as_text(&self) -> Option<&RawValue> {
        match &self.0 {
            Repr::Text(text) => Some(text),
            Repr::Object(_) => None,
        }
    }

    /// The arguments as an object.
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArguments`] when their text does not make an object muster can
    /// hold (see the type's documentation).
    pub fn into_object(self) -> Result<JsonObject, ToolError> {
        match self.0 {
            Repr::Object(object) => Ok(object),
            Repr::Text(text) => parse(&text),
        }
    }

    /// A copy of the arguments as an object.
    ///
    /// # Errors
    ///
    /// As [`into_object`](Self::into_object).
    pub fn to_object(&self) -> Result<JsonObject, ToolError> {
        match &self.0 {
            Repr::Object(object) => Ok(object.clone()),
            Repr::Text(text) => parse(text),
        }
    }

    /// The arguments as an object to change (their text, if they had one, is dropped).
    ///
    /// # Errors
    ///
    /// As [`into_object`](Self::into_object).
    pub fn object_mut(&mut self) -> Result<&mut JsonObject, ToolError> {
        if let Repr::Text(text) = &self.0 {
            self.0 = Repr::Object(parse(text)?);
        }
        let Repr::Object(object) = &mut self.0 else {
            unreachable!("the text was parsed above");
        };
        Ok(object)
    }

    /// Appends the arguments as compact JSON to `out`: their text as it is, or the object
    /// written.
    ///
    /// # Errors
    ///
    /// When an object cannot be written (a map key that is not a string cannot occur in a
    /// `JsonObject`, so in practice never).
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match &self.0 {
            Repr::Text(text) => {
                out.extend_from_slice(text.get().as_bytes());
                Ok(())
            }
            Repr::Object(object) => serde_json::to_writer(out, object),
        }
    }
}

/// `text`, a JSON object, parsed.
fn parse(text: &RawValue) -> Result<JsonObject, ToolError> {
    serde_json::from_str(text.get()).map_err(|e| ToolError::InvalidArguments {
        message: format!("the arguments are not an object muster can read: {e}"),
    })
}

impl From<JsonObject> for ToolArguments {
    fn from(object: JsonObject) -> Self {
        Self::from_object(object)
    }
}

impl Serialize for ToolArguments {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Object(object) => object.serialize(serializer),
            Repr::Text(text) => text.serialize(serializer),
        }
    }
}

impl fmt::Debug for ToolArguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Object(object) => f.debug_tuple("ToolArguments").field(object).finish(),
            Repr::Text(text) => f.debug_tuple("ToolArguments").field(&text.get()).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[test]
    fn only_an_object_is_taken_as_text() {
        assert!(ToolArguments::from_text(text(r#" {"a":1}"#)).is_some());
        for other in ["null", "[1]", "\"{\"", "1", "true"] {
            assert!(ToolArguments::from_text(text(other)).is_none(), "{other}");
        }
    }

    #[test]
    fn text_is_written_as_it_came_and_read_when_asked() {
        let written = r#"{"b":12345678901234567890123,"a":1.0}"#;
        let args = ToolArguments::from_text(text(written)).unwrap();
        let mut out = Vec::new();
        args.write_json(&mut out).unwrap();
        assert_eq!(out, written.as_bytes());
        assert_eq!(serde_json::to_string(&args).unwrap(), written);
        assert_eq!(args.as_text().map(RawValue::get), Some(written));
        let object = args.to_object().unwrap();
        assert_eq!(object.keys().collect::<Vec<_>>(), ["b", "a"]);
    }

    #[test]
    fn an_object_asked_for_to_change_drops_the_text() {
        let mut args = ToolArguments::from_text(text(r#"{"a":1,"b":2}"#)).unwrap();
        args.object_mut().unwrap().remove("a");
        assert!(args.as_text().is_none());
        let mut out = Vec::new();
        args.write_json(&mut out).unwrap();
        assert_eq!(out, br#"{"b":2}"#);
    }

    #[test]
    fn text_that_makes_no_object_is_an_invalid_arguments_error() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        for bad in [deep.as_str(), r#"{"x":1e400}"#] {
            let args = ToolArguments::from_text(text(bad)).unwrap();
            let error = args.into_object().unwrap_err();
            assert!(
                matches!(&error, ToolError::InvalidArguments { message }
                    if message.starts_with("the arguments are not an object muster can read")),
                "{error}"
            );
        }
    }

    #[test]
    fn an_object_stays_one() {
        let mut object = JsonObject::new();
        object.insert("k".into(), serde_json::json!([1, 2]));
        let args = ToolArguments::from(object.clone());
        assert!(args.as_text().is_none());
        assert_eq!(args.to_object().unwrap(), object);
        assert_eq!(serde_json::to_string(&args).unwrap(), r#"{"k":[1,2]}"#);
        assert_eq!(args.into_object().unwrap(), object);
    }
}
