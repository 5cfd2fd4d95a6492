//! The front door end to end: a real rmcp client talks streamable HTTP (and legacy SSE) to
//! `Aggregator::router()` served on 127.0.0.1, in front of a real rmcp server wrapped as a
//! backend and in-process providers.

#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

#[path = "front/support.rs"]
mod support;

#[path = "front/call_tool.rs"]
mod call_tool;
#[path = "front/discovery.rs"]
mod discovery;
#[path = "front/family.rs"]
mod family;
#[path = "front/limits.rs"]
mod limits;
#[path = "front/listen.rs"]
mod listen;
#[path = "front/protocol.rs"]
mod protocol;
#[path = "front/sse.rs"]
mod sse;
#[path = "front/stateless.rs"]
mod stateless;
