#!/bin/sh
# muster next to the backend alone and the proxies users pick instead, through the shared
# side-by-side harness (perf/run.sh: the fast rmcp bench-backend, mcp-load, the npm and PyPI
# mcp-proxy peers; see its README). Builds the release binary first.
#
#   tests/benches/side_by_side.sh                       # direct, muster and every peer
#   SYSTEMS=direct,muster tests/benches/side_by_side.sh # only these
#   PERF_HARNESS=/path/to/perf/run.sh tests/benches/side_by_side.sh
#
# Any other knob of the harness (DURATION, CONCURRENCY, PIN, ...) passes through.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
harness=${PERF_HARNESS:-$root/../shared/perf/run.sh}
if [ ! -x "$harness" ]; then
    echo "side_by_side.sh: no harness at $harness; set PERF_HARNESS" >&2
    exit 2
fi
target=${CARGO_TARGET_DIR:-$root/target}
(cd "$root" && cargo build --release -p muster-bin)
MUSTER_BIN=${MUSTER_BIN:-$target/release/muster} exec "$harness" "$@"
