//! Keys of a JSON object read as what a function makes of their text, without allocating
//! them: serde hands a key over as borrowed text wherever it can (one with escapes comes
//! unescaped), and the function names it.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, Visitor};

/// Reads a key as `self.0` names its text (`MapAccess::next_key_seed`).
pub(crate) struct KeySeed<K>(pub(crate) fn(&str) -> K);

impl<'de, K> DeserializeSeed<'de> for KeySeed<K> {
    type Value = K;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<K, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<K> Visitor<'_> for KeySeed<K> {
    type Value = K;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<K, E> {
        Ok((self.0)(key))
    }
}
