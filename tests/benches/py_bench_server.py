#!/usr/bin/env python3
"""The Python MCP server some benches put behind muster: the official SDK, one tool `echo`,
streamable HTTP at /mcp (stateless, JSON replies) and legacy SSE at /sse + /messages/, both
from one process and one uvicorn, so that two muster backend hops to it differ only in the
transport.

    python py_bench_server.py PORT
"""

import sys
port = int(sys.argv[1])
try:
    from mcp.server.mcpserver import MCPServer          # mcp 2.x
    server = MCPServer("bench-py", log_level="WARNING")
    def apps():
        return (server.sse_app(host="127.0.0.1"),
                server.streamable_http_app(stateless_http=True, json_response=True,
                                           host="127.0.0.1"))
except ImportError:
    from mcp.server.fastmcp import FastMCP              # mcp 1.x
    server = FastMCP("bench-py", host="127.0.0.1", port=port, stateless_http=True,
                     json_response=True, log_level="WARNING")
    def apps():
        return server.sse_app(), server.streamable_http_app()

@server.tool()
def echo(message: str) -> str:
    """Returns the message."""
    return message

import uvicorn
from starlette.applications import Starlette
sse, http = apps()
# The SSE app has no lifespan; the streamable HTTP one runs its session manager in its own.
app = Starlette(routes=[*sse.routes, *http.routes], lifespan=http.router.lifespan_context)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
