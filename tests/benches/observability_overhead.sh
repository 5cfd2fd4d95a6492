#!/usr/bin/env bash
# What metrics, traces and call logs cost a proxied call, in instructions (callgrind, see
# call_instructions.sh): the same measurement with everything off, with the defaults
# (metrics on), with traces exported to an OTLP/HTTP receiver (every call sampled, one in ten,
# none), and with call logs on.
#
#   MUSTER_BIN=target/release/muster tests/benches/observability_overhead.sh [CALLS]
#
# The receiver is a small HTTP server on loopback that answers every export with an empty
# ExportTraceServiceResponse and counts the bytes it got, so the exporter does its whole
# job (protobuf encoding, HTTP) without a collector installed.
set -euo pipefail

calls=${1:-400}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
sink_pid=
cleanup() {
    [ -n "$sink_pid" ] && kill "$sink_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/sink.py" <<'EOF'
import http.server, sys
class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    received = 0
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        Sink.received += n
        with open(sys.argv[2], "w") as f:
            f.write(str(Sink.received))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)
server.serve_forever()
EOF
python3 "$work/sink.py" x "$work/received" >"$work/sink.port" &
sink_pid=$!
for _ in $(seq 1 50); do [ -s "$work/sink.port" ] && break; sleep 0.1; done
sink_port=$(head -n1 "$work/sink.port")

measure() {
    local label=$1 extra=$2
    local out
    out=$(MUSTER_CONFIG_EXTRA="$extra" "$here/call_instructions.sh" "$calls")
    printf '%-34s %s\n' "$label" "${out##*, }"
}

measure "metrics, traces, call logs off" $'observability:\n  metrics:\n    enabled: false'
measure "defaults (metrics on)" ""
measure "metrics on, traces to OTLP" $'observability:\n  tracing:\n    enabled: true\n    endpoint: http://127.0.0.1:'"$sink_port"
measure "traces at sampleRatio 0.1" $'observability:\n  tracing:\n    enabled: true\n    sampleRatio: 0.1\n    endpoint: http://127.0.0.1:'"$sink_port"
measure "traces at sampleRatio 0" $'observability:\n  tracing:\n    enabled: true\n    sampleRatio: 0\n    endpoint: http://127.0.0.1:'"$sink_port"
measure "metrics, traces and call logs on" $'observability:\n  logs:\n    calls: true\n  tracing:\n    enabled: true\n    endpoint: http://127.0.0.1:'"$sink_port"
echo "the OTLP receiver got $(cat "$work/received" 2>/dev/null || echo 0) bytes of spans"
