//! Backends: the connection to one MCP server (stdio child, streamable HTTP, legacy SSE), its
//! lifecycle state machine with backoff, and health probes. Not implemented yet.
