#!/usr/bin/env bash
# Every public header must compile on its own (STYLE.md): include each one alone in an empty unit.
# usage: check_headers.sh CXX SOURCE_ROOT [extra compiler flags...]
set -u
CXX=$1 ROOT=$2
shift 2
n=0 failed=0
for h in "$ROOT"/include/burstscope/*.h; do
  n=$((n + 1))
  name=${h#"$ROOT"/include/}
  if echo "#include <$name>" | "$CXX" -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$ROOT/include" "$@" \
      -x c++ - 2>"${TMPDIR:-/tmp}/hdr.err"; then
    echo "ok $n - $name compiles on its own"
  else
    failed=$((failed + 1))
    echo "not ok $n - $name"
    sed 's/^/# /' "${TMPDIR:-/tmp}/hdr.err"
  fi
done
echo "1..$n"
[ "$failed" -eq 0 ]
