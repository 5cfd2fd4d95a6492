//! Serde for a [`SecretString`] kept by a store: written out as the plain value, for the
//! stores that persist entries (sealed when an encryption key is set).

use muster_core::secret::{ExposeSecret as _, SecretString};
use serde::{Deserialize, Deserializer, Serializer};

pub(crate) fn serialize<S: Serializer>(value: &SecretString, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(value.expose_secret())
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SecretString, D::Error> {
    String::deserialize(d).map(SecretString::from)
}

/// The same for an optional secret.
pub(crate) mod option {
    use muster_core::secret::{ExposeSecret as _, SecretString};
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        value: &Option<SecretString>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => s.serialize_some(v.expose_secret()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<SecretString>, D::Error> {
        Option::<String>::deserialize(d).map(|v| v.map(SecretString::from))
    }
}
