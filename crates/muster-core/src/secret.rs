//! Credential values, and keeping them out of every text muster produces.
//!
//! Every credential muster holds (header values read from Secrets, forwarded tokens, client
//! secrets) is a [`SecretString`]: its `Debug` output is redacted and reading it takes an explicit
//! [`ExposeSecret::expose_secret`] call, so "no credentials in logs" holds by construction.
//!
//! Values that are not credentials by type but may be (the `env` of a stdio server, the
//! `headers` of a remote one, the user and password or query of its URL) are collected into a
//! [`Redactor`] per server ([`Redactor::for_spec`]) and cut out of every text that leaves the
//! server's backend: errors, `lastError`, events, status, tool errors and log lines
//! ([`RedactorSet`] gathers the redactors of every live server for the log writer).

mod redact;

pub use redact::{MIN_SECRET_LEN, REDACTED, Redactor, RedactorSet, url_secrets};
pub use secrecy::{ExposeSecret, SecretString};
