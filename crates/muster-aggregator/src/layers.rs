//! Cross-cutting concerns of backend calls as tower layers: timeout with progress extension,
//! concurrency cap, token forwarding, redaction. Not implemented yet.
