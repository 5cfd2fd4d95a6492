//! Credential values.
//!
//! Every credential muster holds (header values read from Secrets, forwarded tokens, client
//! secrets) is a [`SecretString`]: its `Debug` output is redacted and reading it takes an explicit
//! [`ExposeSecret::expose_secret`] call, so "no credentials in logs" holds by construction.

pub use secrecy::{ExposeSecret, SecretString};
