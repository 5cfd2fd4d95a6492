//! Backend tests against real MCP servers: npm `@modelcontextprotocol/server-everything`
//! (stdio, sse, streamableHttp) and a Python server on the official `mcp` SDK
//! (`fixtures/py_server.py`), plus tiny HTTP servers for the failure statuses.
//!
//! The servers come from `MUSTER_TEST_DEPS` (default `$HOME/.cache/muster-test-deps`), filled
//! by `fixtures/install-test-deps.sh DIR`.

#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

mod backend {
    pub(crate) mod support;

    mod faults;
    mod lean;
    mod lean_sse;
    mod lifecycle;
    mod lifecycle_choice;
    mod processes;
    mod remote;
    mod status;
    mod status_writes;
    mod stdio;
}
