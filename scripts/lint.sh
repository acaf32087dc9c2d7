#!/usr/bin/env bash
# Static analysis, as CI runs it: clang-tidy with the check set in .clang-tidy (each exclusion says why) and
# cppcheck with the set below, over the sources of the product and its tools (src, tools). Clean is the pass;
# a finding prints and fails. Needs a configured build/ (for compile_commands.json): scripts/test.sh makes it.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
[ -f "$BUILD/compile_commands.json" ] || { echo "lint: no $BUILD/compile_commands.json (meson setup $BUILD first)" >&2; exit 2; }
# Generated headers (bpftool's skeletons) are built into the build tree before they can be analysed.
ninja -C "$BUILD" bpf/capture.skel.h bpf/capture_plain.skel.h >/dev/null 2>&1 || true

# Not bench/: Google Benchmark's `for (auto _ : state)` idiom is all the analyzer finds there. Not fuzz/: built
# by clang with -fsanitize=fuzzer in its own build, which build/'s compile_commands.json does not describe.
mapfile -t sources < <(git ls-files 'src/*.cc' 'tools/*.cc')
out=$(mktemp)
trap 'rm -f "$out"' EXIT

echo "clang-tidy: ${#sources[@]} files"
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -n 1 clang-tidy -p "$BUILD" --quiet >"$out" 2>/dev/null || true
# Findings in our files only: the clang analyzer also walks bpftool's generated skeletons, which are not ours.
findings=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' "$out" | grep -vE '/bpf/capture(_plain)?\.skel\.h:' | sort -u || true)
if [ -n "$findings" ]; then
  echo "$findings"
  echo "clang-tidy: $(echo "$findings" | wc -l) findings"
  exit 1
fi
echo "clang-tidy: clean"

# cppcheck: warnings, performance and portability (style is clang-tidy's and the compiler's); the
# suppressions are for what cppcheck cannot see (system headers, libraries' macros). Not tools/testbed/bpf:
# BPF C for clang -target bpf, with settings given at compile time (-DLOSS_THRESHOLD), which a C++ analysis
# without them refuses; clang -Wall -Werror checks it when the testbed builds it.
echo "cppcheck: src tools"
cppcheck --quiet --error-exitcode=1 --std=c++20 --language=c++ --inline-suppr \
  --enable=warning,performance,portability --suppress=missingIncludeSystem --suppress=unknownMacro \
  -I include -I . -D__linux__ -DBURSTSCOPE_HAVE_DPDK -DBURSTSCOPE_HAVE_AFXDP -i tools/testbed/bpf src tools
echo "cppcheck: clean"

# Formatting: .clang-format for the C++, bpf/.clang-format for the BPF C. `clang-format -i FILE` mends one.
mapfile -t formatted < <(git ls-files 'include/*.h' 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' \
  'bench/*.h' 'fuzz/*.cc' 'tools/*.cc' 'bpf/*.c' 'bpf/*.h')
echo "clang-format: ${#formatted[@]} files"
clang-format --dry-run --Werror "${formatted[@]}"
echo "clang-format: clean"
