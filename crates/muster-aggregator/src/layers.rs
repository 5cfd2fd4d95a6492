//! Cross-cutting concerns of backend calls as tower layers, one folder each in tower's shape
//! (`<name>.rs` with the service, `<name>/layer.rs`, `<name>/error.rs`).
//!
//! - [`timeout`]: the per-call budget of `spec.timeout`, restarted by every progress
//!   notification up to `spec.progress.maxDuration`.

pub mod timeout;

pub use timeout::{Elapsed, ProgressTimeout, ProgressTimeoutLayer};
