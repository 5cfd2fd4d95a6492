//! A session's `tools/call` request read in one pass over its body.
//!
//! The envelope reading of the lean path takes a request apart level by level: the
//! envelope with its `params` as text, then `params` with their `arguments` as text, then
//! the arguments, each level scanning the text of the next again. JSON-RPC clients write
//! `method` before `params`; in that order this reader takes `params` in the same pass, and
//! `call_tool`'s arguments too when `name` comes before them (after it, their text is read
//! once `name` is known, as the levels read it). It answers only when the reading by levels
//! would come to the same request; for anything else (`params` first, another method, an
//! escaped key word, malformed input) it answers `None` and the body is read by levels,
//! with that reading's outcome.

use std::borrow::Cow;
use std::fmt;

use rmcp::model::ProgressToken;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::json_key::KeySeed;
use crate::meta_tools::{Arguments, ReadArguments};

/// A `tools/call` request of a session: the parts the lean path needs.
pub(super) struct CallRequest<'a> {
    /// The JSON-RPC id, as written (absent: a notification).
    pub(super) id: Option<&'a RawValue>,
    /// The tool called.
    pub(super) name: Cow<'a, str>,
    /// Its arguments.
    pub(super) arguments: Arguments,
    /// The progress token in `_meta`.
    pub(super) progress_token: Option<ProgressToken>,
}

impl<'a> CallRequest<'a> {
    /// `body` read in one pass as a JSON-RPC 2.0 `tools/call` request whose `params` are
    /// plain (`name`, `arguments`, `_meta` with at most a progress token) and whose
    /// arguments are an object (or absent, or `null`); `None` for anything else.
    pub(super) fn read(body: &'a [u8]) -> Option<Self> {
        // Checked as UTF-8 once, so that the parser does not check each string again.
        serde_json::from_str::<OnePass<'a>>(std::str::from_utf8(body).ok()?)
            .ok()
            .map(|read| read.0)
    }

    /// The call whose `params` are `params` and whose id is `id`, read by levels: `params`
    /// with their `arguments` as text, then the arguments; `None` unless the `params` are
    /// plain and the arguments an object (or absent, or `null`).
    pub(super) fn from_params(id: Option<&'a RawValue>, params: &'a RawValue) -> Option<Self> {
        let params: CallParams<'a> = serde_json::from_str(params.get()).ok()?;
        let arguments = Arguments::read(&params.name, params.arguments.map(RawValue::get))?;
        Some(Self {
            id,
            name: params.name,
            arguments,
            progress_token: params.meta.and_then(|meta| meta.progress_token),
        })
    }
}

/// `params` of a plain `tools/call`; anything else (`task`, …) is not plain.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", default)]
    meta: Option<CallMeta>,
}

/// `_meta` of a plain `tools/call`: at most a progress token; any other key (trace
/// context, per-request protocol version, …) goes the full way.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallMeta {
    #[serde(rename = "progressToken")]
    progress_token: Option<ProgressToken>,
}

/// The one-pass reading, as a type serde reads.
struct OnePass<'a>(CallRequest<'a>);

impl<'de> Deserialize<'de> for OnePass<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EnvelopeVisitor).map(OnePass)
    }
}

/// A key of the JSON-RPC envelope.
enum EnvelopeKey {
    Jsonrpc,
    Id,
    Method,
    Params,
    Other,
}

/// A key of `params`.
enum ParamsKey {
    Name,
    Arguments,
    Meta,
}

/// Reads the envelope, `params` in place once `method` has named `tools/call`.
struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = CallRequest<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC tools/call request")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut jsonrpc: Option<Option<&'de str>> = None;
        let mut id: Option<Option<&'de RawValue>> = None;
        let mut method: Option<Option<&'de str>> = None;
        let mut params: Option<Params<'de>> = None;
        while let Some(key) = map.next_key_seed(KeySeed(envelope_key))? {
            match key {
                EnvelopeKey::Jsonrpc => once(&mut jsonrpc, "jsonrpc", map.next_value()?)?,
                EnvelopeKey::Id => once(&mut id, "id", map.next_value()?)?,
                EnvelopeKey::Method => once(&mut method, "method", map.next_value()?)?,
                EnvelopeKey::Params => {
                    if method != Some(Some("tools/call")) {
                        return Err(de::Error::custom("params before a tools/call method"));
                    }
                    once(&mut params, "params", map.next_value_seed(ParamsSeed)?)?;
                }
                EnvelopeKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if jsonrpc != Some(Some("2.0")) {
            return Err(de::Error::custom("not JSON-RPC 2.0"));
        }
        let params = params.ok_or_else(|| de::Error::missing_field("params"))?;
        Ok(CallRequest {
            id: id.flatten(),
            name: params.name,
            arguments: params.arguments,
            progress_token: params.progress_token,
        })
    }
}

/// Sets `slot` to `value`, an error when it was set already (a key given twice).
fn once<T, E: de::Error>(slot: &mut Option<T>, key: &'static str, value: T) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(key));
    }
    *slot = Some(value);
    Ok(())
}

/// `params` of the call, read in place.
struct Params<'a> {
    name: Cow<'a, str>,
    arguments: Arguments,
    progress_token: Option<ProgressToken>,
}

/// Reads [`Params`]: an object with `name`, then perhaps `arguments` and `_meta`.
struct ParamsSeed;

impl<'de> DeserializeSeed<'de> for ParamsSeed {
    type Value = Params<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(ParamsVisitor)
    }
}

/// Reads [`Params`]; `call_tool`'s arguments in place when `name` came first.
struct ParamsVisitor;

impl<'de> Visitor<'de> for ParamsVisitor {
    type Value = Params<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the params of tools/call")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut name: Option<&'de str> = None;
        let mut arguments: Option<ArgumentsRead<'de>> = None;
        let mut meta: Option<Option<CallMeta>> = None;
        while let Some(key) = map.next_key_seed(KeySeed(params_key))? {
            match key {
                Some(ParamsKey::Name) => once(&mut name, "name", map.next_value()?)?,
                Some(ParamsKey::Arguments) => {
                    let read = if name == Some("call_tool") {
                        match map.next_value::<Option<ReadArguments>>()? {
                            Some(read) => ArgumentsRead::Read(Arguments::CallTool(read)),
                            None => ArgumentsRead::Read(Arguments::Object(None)),
                        }
                    } else {
                        ArgumentsRead::Text(map.next_value()?)
                    };
                    once(&mut arguments, "arguments", read)?;
                }
                Some(ParamsKey::Meta) => once(&mut meta, "_meta", map.next_value()?)?,
                None => return Err(de::Error::custom("a parameter other than plain ones")),
            }
        }
        let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
        let arguments = match arguments {
            Some(ArgumentsRead::Read(arguments)) => arguments,
            Some(ArgumentsRead::Text(text)) => read_arguments(name, text)?,
            None => read_arguments(name, None)?,
        };
        Ok(Params {
            name: Cow::Borrowed(name),
            arguments,
            progress_token: meta.flatten().and_then(|meta| meta.progress_token),
        })
    }
}

/// The arguments as `params` held them: read in place, or as text read once `name` is known.
enum ArgumentsRead<'a> {
    Read(Arguments),
    Text(Option<&'a RawValue>),
}

/// The arguments of the meta-tool `name` in `text`, as the reading by levels reads them.
fn read_arguments<E: de::Error>(name: &str, text: Option<&RawValue>) -> Result<Arguments, E> {
    Arguments::read(name, text.map(RawValue::get))
        .ok_or_else(|| E::custom("arguments that are not an object"))
}

/// The envelope key `key` names.
fn envelope_key(key: &str) -> EnvelopeKey {
    match key {
        "jsonrpc" => EnvelopeKey::Jsonrpc,
        "id" => EnvelopeKey::Id,
        "method" => EnvelopeKey::Method,
        "params" => EnvelopeKey::Params,
        _ => EnvelopeKey::Other,
    }
}

/// The `params` key `key` names; `None` for a key plain `params` do not have.
fn params_key(key: &str) -> Option<ParamsKey> {
    match key {
        "name" => Some(ParamsKey::Name),
        "arguments" => Some(ParamsKey::Arguments),
        "_meta" => Some(ParamsKey::Meta),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Envelope;
    use super::*;

    /// The reading by levels, as the lean path makes it of a body the one-pass reading
    /// left alone.
    fn by_levels(body: &str) -> Option<CallRequest<'_>> {
        let envelope: Envelope<'_> = serde_json::from_str(body).ok()?;
        if envelope.jsonrpc.as_deref() != Some("2.0")
            || envelope.method.as_deref() != Some("tools/call")
        {
            return None;
        }
        CallRequest::from_params(envelope.id, envelope.params?)
    }

    /// What a reading made of a body, to compare the two.
    fn seen(call: Option<CallRequest<'_>>) -> Option<String> {
        call.map(|call| {
            format!(
                "id {:?} name {:?} arguments {:?} progress {:?}",
                call.id.map(RawValue::get),
                call.name,
                call.arguments,
                call.progress_token
            )
        })
    }

    #[test]
    fn one_pass_reads_what_the_reading_by_levels_reads_or_leaves_it_alone() {
        let call = r#""method":"tools/call","params":{"name":"call_tool","arguments":{"name":"x_a","arguments":{"m":"hi"}}}"#;
        // (body, read in one pass, read by levels)
        let table = [
            (format!(r#"{{"jsonrpc":"2.0","id":1,{call}}}"#), true, true),
            (format!(r#"{{"id":"a-1","jsonrpc":"2.0",{call}}}"#), true, true),
            (format!(r#"{{"jsonrpc":"2.0",{call},"id":-7}}"#), true, true),
            (format!(r#" {{ "jsonrpc" : "2.0" , "id":1 , {call} }} "#), true, true),
            (format!(r#"{{"jsonrpc":"2.0","id":1,"x":[1,{{"y":2}}],{call}}}"#), true, true),
            (format!(r#"{{"jsonrpc":"2.0","id":null,{call}}}"#), true, true),
            (format!(r#"{{"jsonrpc":"2.0",{call}}}"#), true, true),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"x_a"},"_meta":{"progressToken":"t"}}}"#.into(),
                true,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":3},"arguments":{"name":"x_a"},"name":"call_tool"}}"#.into(),
                true,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":null}}"#.into(),
                true,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool"}}"#.into(),
                true,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":null,"other":{"a":[1]}}}}"#.into(),
                true,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"list_tools","arguments":{}}}"#.into(),
                true,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"filter_tools","arguments":{"pattern":"x_*"}}}"#.into(),
                true,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x_direct","arguments":{"a":1}}}"#.into(),
                true,
                true,
            ),
            // Read by levels only: `params` first, escaped words, arguments `call_tool`
            // reads as an object.
            (
                r#"{"jsonrpc":"2.0","id":1,"params":{"name":"call_tool","arguments":{}},"method":"tools/call"}"#.into(),
                false,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"call_tool"}}"#.into(),
                false,
                true,
            ),
            (
                r#"{"jsonrpc":"2\u002e0","id":1,"method":"tools/call","params":{"name":"call_tool"}}"#.into(),
                false,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call\u005ftool","arguments":{"name":"x_a"}}}"#.into(),
                false,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":1}}}"#.into(),
                false,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"x_a","name":"x_b"}}}"#.into(),
                false,
                true,
            ),
            // Neither: not this request, or not plain.
            (format!(r#"{{"jsonrpc":"1.0","id":1,{call}}}"#), false, false),
            (format!(r#"{{"id":1,{call}}}"#), false, false),
            (format!(r#"{{"jsonrpc":"2.0","id":1,{call}}} x"#), false, false),
            (format!(r#"{{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,{call}}}"#), false, false),
            (format!(r#"{{"jsonrpc":"2.0","id":1,"id":2,{call}}}"#), false, false),
            (format!(r#"{{"jsonrpc":"2.0","id":1,{call},"method":"ping"}}"#), false, false),
            (format!(r#"[{{"jsonrpc":"2.0","id":1,{call}}}]"#), false, false),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"call_tool"}}"#.into(),
                false,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#.into(),
                false,
                false,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#.into(), false, false),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#.into(),
                false,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","task":{}}}"#.into(),
                false,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","_meta":{"traceparent":"x"}}}"#.into(),
                false,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{},"arguments":{}}}"#.into(),
                false,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":[1]}}"#.into(),
                false,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tools","arguments":"x"}}"#.into(),
                false,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"x_a"}"#.into(),
                false,
                false,
            ),
        ];
        for (body, one_pass, levels) in &table {
            let read = seen(CallRequest::read(body.as_bytes()));
            let expected = seen(by_levels(body));
            assert_eq!(read.is_some(), *one_pass, "one pass: {body}");
            assert_eq!(expected.is_some(), *levels, "by levels: {body}");
            if read.is_some() {
                assert_eq!(read, expected, "{body}");
            }
        }
    }

    #[test]
    fn only_plain_params_are_lean() {
        let plain: Result<CallParams<'_>, _> =
            serde_json::from_str(r#"{"name":"call_tool","arguments":{"name":"x"}}"#);
        assert!(plain.is_ok());
        let progress: Result<CallParams<'_>, _> =
            serde_json::from_str(r#"{"name":"call_tool","_meta":{"progressToken":1}}"#);
        assert!(progress.is_ok_and(|p| p.meta.is_some_and(|m| m.progress_token.is_some())));
        let traced: Result<CallParams<'_>, _> =
            serde_json::from_str(r#"{"name":"call_tool","_meta":{"traceparent":"00-1"}}"#);
        assert!(traced.is_err());
        let task: Result<CallParams<'_>, _> =
            serde_json::from_str(r#"{"name":"call_tool","task":{}}"#);
        assert!(task.is_err());
    }
}
