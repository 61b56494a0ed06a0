#!/usr/bin/env bash
# The library exports exactly the functions the headers declare
# (include/krabka_coord.h and include/krabka_coord_testing.h, which
# includes it): no more (the
# version script hides the Go runtime and cgo), no less (every declared
# function is implemented). Function names are taken from the preprocessed
# header, so comments never count.
set -euo pipefail
cd "$(dirname "$0")/../.."
LIB=${1:-build/libkrabka_coord.so}
CC=${CC:-cc}
declared=$("$CC" -E -P -Iinclude include/krabka_coord_testing.h | grep -oE '\bkrabka_[A-Za-z0-9_]+[[:space:]]*\(' |
    sed 's/[[:space:]]*($//' | sort -u)
exported=$(nm -D --defined-only "$LIB" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
if ! diff <(echo "$declared") <(echo "$exported") >/tmp/krabka-symbols.$$; then
    echo "symbols: FAIL: exports differ from the header (< header only, > library only):"
    cat /tmp/krabka-symbols.$$
    rm -f /tmp/krabka-symbols.$$
    exit 1
fi
rm -f /tmp/krabka-symbols.$$
echo "symbols: ok: $(echo "$declared" | wc -l) functions declared, the same exported, nothing else"
