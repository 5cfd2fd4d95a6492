//! Decoding the Kubernetes protobuf request bodies kubectl sends for the built-ins it writes
//! with typed clients (`kubectl create secret|configmap|namespace`): the `k8s\0` envelope
//! (`runtime.Unknown`) and the messages of Secret, ConfigMap and Namespace with their
//! ObjectMeta. Other protobuf bodies answer 415. Answers are always JSON (kubectl accepts it).

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::status::ApiError;

/// The media type.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

struct Reader<'a> {
    buf: &'a [u8],
}

fn bad() -> ApiError {
    ApiError::bad_request("the protobuf body of the request could not be decoded")
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ApiError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.buf.split_first().ok_or_else(bad)?;
            self.buf = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad())
    }

    fn next(&mut self) -> Result<Option<(u64, Field<'a>)>, ApiError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field = match key & 7 {
            0 => Field::Varint(self.varint()?),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| bad())?;
                if len > self.buf.len() {
                    return Err(bad());
                }
                let (b, rest) = self.buf.split_at(len);
                self.buf = rest;
                Field::Bytes(b)
            }
            1 => {
                self.buf = self.buf.get(8..).ok_or_else(bad)?;
                Field::Varint(0)
            }
            5 => {
                self.buf = self.buf.get(4..).ok_or_else(bad)?;
                Field::Varint(0)
            }
            _ => return Err(bad()),
        };
        Ok(Some((key >> 3, field)))
    }
}

fn fields(buf: &[u8]) -> Result<Vec<(u64, Field<'_>)>, ApiError> {
    let mut r = Reader { buf };
    let mut out = Vec::new();
    while let Some(f) = r.next()? {
        out.push(f);
    }
    Ok(out)
}

fn text(b: &[u8]) -> Result<String, ApiError> {
    String::from_utf8(b.to_vec()).map_err(|_| bad())
}

/// A `map<string, string|bytes>` entry.
fn entry(b: &[u8], bytes: bool) -> Result<(String, Value), ApiError> {
    let mut k = String::new();
    let mut v = Value::String(String::new());
    for (n, f) in fields(b)? {
        match (n, f) {
            (1, Field::Bytes(x)) => k = text(x)?,
            (2, Field::Bytes(x)) if bytes => {
                v = json!(base64::engine::general_purpose::STANDARD.encode(x))
            }
            (2, Field::Bytes(x)) => v = json!(text(x)?),
            _ => {}
        }
    }
    Ok((k, v))
}

fn insert_entry(
    m: &mut Map<String, Value>,
    key: &str,
    b: &[u8],
    bytes: bool,
) -> Result<(), ApiError> {
    let (k, v) = entry(b, bytes)?;
    if let Value::Object(map) = m.entry(key).or_insert_with(|| json!({})) {
        map.insert(k, v);
    }
    Ok(())
}

fn time(b: &[u8]) -> Result<Value, ApiError> {
    let mut secs = 0i64;
    for (n, f) in fields(b)? {
        if let (1, Field::Varint(v)) = (n, f) {
            secs = i64::try_from(v).unwrap_or(0);
        }
    }
    Ok(
        chrono::DateTime::from_timestamp(secs, 0).map_or(Value::Null, |t| {
            json!(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        }),
    )
}

fn owner_reference(b: &[u8]) -> Result<Value, ApiError> {
    let mut m = Map::new();
    for (n, f) in fields(b)? {
        match (n, f) {
            (1, Field::Bytes(x)) => m.insert("kind".into(), json!(text(x)?)),
            (3, Field::Bytes(x)) => m.insert("name".into(), json!(text(x)?)),
            (4, Field::Bytes(x)) => m.insert("uid".into(), json!(text(x)?)),
            (5, Field::Bytes(x)) => m.insert("apiVersion".into(), json!(text(x)?)),
            (6, Field::Varint(v)) => m.insert("controller".into(), json!(v != 0)),
            (7, Field::Varint(v)) => m.insert("blockOwnerDeletion".into(), json!(v != 0)),
            _ => None,
        };
    }
    Ok(Value::Object(m))
}

fn object_meta(b: &[u8]) -> Result<Value, ApiError> {
    let mut m = Map::new();
    let strings = [
        (1, "name"),
        (2, "generateName"),
        (3, "namespace"),
        (5, "uid"),
        (6, "resourceVersion"),
    ];
    for (n, f) in fields(b)? {
        match (n, f) {
            // Go's zero values are "unset": an empty string is not written back in JSON
            (_, Field::Bytes([])) => {}
            (n, Field::Bytes(x)) if strings.iter().any(|(k, _)| *k == n) => {
                let name = strings.iter().find(|(k, _)| *k == n).map_or("", |(_, v)| v);
                m.insert(name.into(), json!(text(x)?));
            }
            (8, Field::Bytes(x)) => {
                m.insert("creationTimestamp".into(), time(x)?);
            }
            (11, Field::Bytes(x)) => insert_entry(&mut m, "labels", x, false)?,
            (12, Field::Bytes(x)) => insert_entry(&mut m, "annotations", x, false)?,
            (13, Field::Bytes(x)) => {
                let r = owner_reference(x)?;
                if let Value::Array(a) = m.entry("ownerReferences").or_insert_with(|| json!([])) {
                    a.push(r);
                }
            }
            (14, Field::Bytes(x)) => {
                let f = text(x)?;
                if let Value::Array(a) = m.entry("finalizers").or_insert_with(|| json!([])) {
                    a.push(json!(f));
                }
            }
            _ => {}
        }
    }
    Ok(Value::Object(m))
}

/// Decodes a protobuf request body of the built-ins kubectl writes with typed clients.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let unsupported = |what: &str| {
        ApiError::unsupported_media_type(
            MEDIA_TYPE,
            &["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"],
        )
        .with_message(format!("the fake API server decodes protobuf only for Secret, ConfigMap and Namespace, not {what}"))
    };
    let rest = body.strip_prefix(b"k8s\x00").ok_or_else(bad)?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (n, f) in fields(rest)? {
        match (n, f) {
            (1, Field::Bytes(tm)) => {
                for (n2, f2) in fields(tm)? {
                    match (n2, f2) {
                        (1, Field::Bytes(x)) => api_version = text(x)?,
                        (2, Field::Bytes(x)) => kind = text(x)?,
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(x)) => raw = x,
            _ => {}
        }
    }
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    if api_version != "v1" {
        return Err(unsupported(&format!("{api_version} {kind}")));
    }
    for (n, f) in fields(raw)? {
        match (kind.as_str(), n, f) {
            (_, 1, Field::Bytes(x)) => {
                obj.insert("metadata".into(), object_meta(x)?);
            }
            ("Secret", 2, Field::Bytes(x)) => insert_entry(&mut obj, "data", x, true)?,
            ("Secret", 3, Field::Bytes(x)) if !x.is_empty() => {
                obj.insert("type".into(), json!(text(x)?));
            }
            ("Secret", 4, Field::Bytes(x)) => insert_entry(&mut obj, "stringData", x, false)?,
            ("Secret", 5, Field::Varint(v)) | ("ConfigMap", 4, Field::Varint(v)) => {
                obj.insert("immutable".into(), json!(v != 0));
            }
            ("ConfigMap", 2, Field::Bytes(x)) => insert_entry(&mut obj, "data", x, false)?,
            ("ConfigMap", 3, Field::Bytes(x)) => insert_entry(&mut obj, "binaryData", x, true)?,
            ("Namespace", 2, Field::Bytes(x)) => {
                let mut finalizers = Vec::new();
                for (n2, f2) in fields(x)? {
                    if let (1, Field::Bytes(s)) = (n2, f2) {
                        finalizers.push(json!(text(s)?));
                    }
                }
                obj.insert("spec".into(), json!({"finalizers": finalizers}));
            }
            ("Secret" | "ConfigMap" | "Namespace", _, _) => {}
            _ => return Err(unsupported(&kind)),
        }
    }
    Ok(Value::Object(obj))
}
