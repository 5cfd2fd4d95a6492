#!/usr/bin/env bash
# Tells how much of symbol-order.txt the linker could still use: the share of its functions
# that exist under the same name in a release build of muster. Symbol names carry hashes
# that change with the code (most often the `.llvm.<hash>` of functions LLVM promoted), and
# a function whose name changed falls out of the layout; each one that runs then pulls
# 64 KB of code around it into memory. Exits 1 when fewer than MIN_PERCENT (default 97) of
# the entries match: time to run generate.sh.
#
#   cargo build --release -p muster-bin && crates/muster-bin/layout/check.sh [BINARY]
set -euo pipefail

layout=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$layout/../../.." && pwd)
binary=${1:-${CARGO_TARGET_DIR:-$root/target}/release/muster}
min=${MIN_PERCENT:-97}
command -v nm >/dev/null || { echo "check.sh: nm not found" >&2; exit 2; }
[ -x "$binary" ] || { echo "check.sh: no executable $binary" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nm --defined-only "$binary" | awk '{ print $3 }' | sort -u >"$work/binary"
sort -u "$layout/symbol-order.txt" >"$work/listed"
listed=$(wc -l <"$work/listed")
matched=$(comm -12 "$work/binary" "$work/listed" | wc -l)
promoted=$(comm -13 "$work/binary" "$work/listed" | grep -c '\.llvm\.' || true)
percent=$((matched * 100 / listed))
echo "$matched of $listed listed functions are in $binary ($percent %);" \
    "$((listed - matched)) are not ($promoted of them LLVM-promoted locals)"
if [ "$percent" -lt "$min" ]; then
    echo "the layout is stale: run crates/muster-bin/layout/generate.sh" >&2
    exit 1
fi
