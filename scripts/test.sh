#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test suite: the release build (unit + integration), an
# ASan+UBSan build of the same suites, a ThreadSanitizer build of the threaded tests, static analysis
# (clang-tidy, cppcheck) and a bounded fuzzing run of every libFuzzer target. Called by .ci/run.
# With ../shared beside the repo (the project's shared traces and reference oracle), it also checks
# `analyze` against the oracle on the full traces and in every mirror encapsulation.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc)

bash scripts/setup.sh

# Each stage says how long the one before it took (CI's budget is 90 minutes on a loaded 2-core machine).
STAGE_START=$SECONDS
step() {
  echo "--- $((SECONDS - STAGE_START)) s"
  STAGE_START=$SECONDS
  echo
  echo "=== $*"
}
# meson setup with these options, or again over an existing build directory (options given win).
configure() { # DIR OPTION...
  local dir=$1
  shift
  if [ -d "$dir/meson-info" ]; then meson setup --reconfigure "$dir" "$@" >/dev/null; else meson setup "$dir" "$@" >/dev/null; fi
}

step "documentation: every relative link in the Markdown resolves"
python3 scripts/check_links.py

# Warnings are errors here, in every build below, so that the tree stays warning-free; a user's or a
# packager's build (werror off by default) never fails on a warning a newer compiler adds.
step "release build (-O3, warnings are errors)"
configure build -Dwerror=true
ninja -C build -j "$JOBS"
meson test -C build --no-rebuild --print-errorlogs --num-processes "$JOBS"

# At -O1: the sanitizers check behaviour, and gcc compiles the instrumented tree 2.5x faster at -O1 than at -O3
# (src/app/analyze.cc: 46 s against 116 s), which is minutes of CI's budget. Warnings at -O3, where gcc's
# flow-based ones (stringop-overflow and the like) appear, are the release build's check above.
step "AddressSanitizer + UndefinedBehaviorSanitizer build (-O1): unit and integration tests"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
configure build-asan -Doptimization=1 -Ddebug=true -Db_sanitize=address,undefined -Db_lundef=false \
  -Dbenchmarks=disabled -Dwerror=true
ninja -C build-asan -j "$JOBS"
# The DPDK suite runs in the release build only: the EAL's own allocations at exit are not ours to fix. The
# stress suite (10 M flows) too: it checks memory and scale, which the sanitizers' shadow memory would blur. The
# testbed suite (real PyTorch jobs) too: its live capture path is the afxdp suite's, run here, and its figures
# turn on the training jobs' timing, which the instrumented capture beside them disturbs (minutes of CI saved).
# The source suite too: checks of the tree's text and structure, which run none of the product's code on packets.
meson test -C build-asan --print-errorlogs --num-processes "$JOBS" --no-suite dpdk --no-suite stress --no-suite ship \
  --no-suite testbed --no-suite source

step "ThreadSanitizer build: ring, pipeline, live merge, overload bins, live view, flight recorder, exporter and AF_XDP capture tests"
configure build-tsan -Dbuildtype=debugoptimized -Db_sanitize=thread -Db_lundef=false -Dbenchmarks=disabled \
  -Dwerror=true
ninja -C build-tsan -j "$JOBS" tests/ring_test tests/live_test tests/overload_test tests/live_view_test tests/flight_recorder_test tests/export_test tests/http_server_test burstscope \
  tools/wrap_trace
TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs --no-rebuild ring live overload live_view flight_recorder export http_server analyze \
  afxdp

step "static analysis: clang-tidy and cppcheck (check sets in .clang-tidy and scripts/lint.sh)"
bash scripts/lint.sh build

step "fuzzing: the committed corpus replayed, then ${FUZZ_SECONDS:-30} s per target (clang, ASan+UBSan)"
bash scripts/fuzz.sh

SHARED=$ROOT/../shared
if [ -f "$SHARED/reference/burst_oracle.py" ] && [ -d "$SHARED/traces" ]; then
  step "cross-check against the reference oracle in ../shared"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # The oracle itself, run now on the bundled trace, must agree with the committed fixture.
  /usr/bin/python3 "$SHARED/reference/burst_oracle.py" data/ddp-gloo-w3-3steps.pcap --rate-gbps 1,10,25,100 \
    >"$tmp/oracle.json"
  ./build/burstscope analyze --json data/ddp-gloo-w3-3steps.pcap >"$tmp/ours.json"
  python3 scripts/compare_oracle.py "$tmp/ours.json" "$tmp/oracle.json"
  for oracle in "$SHARED"/traces/*.oracle.json; do
    trace=${oracle%.oracle.json}.pcap
    for mode in plain erspan2 erspan3 vxlan qinq; do
      in=$trace extra=""
      if [ "$mode" != plain ]; then
        ./build/tools/wrap_trace "$mode" "$trace" "$tmp/w.pcap"
        in=$tmp/w.pcap
      fi
      [ "$mode" = qinq ] && extra="--mirror-vlan-tags 2"
      # shellcheck disable=SC2086
      ./build/burstscope analyze --json $extra "$in" >"$tmp/ours.json"
      echo -n "$(basename "$trace") [$mode]: "
      python3 scripts/compare_oracle.py "$tmp/ours.json" "$oracle" | tail -1
    done
  done
fi

step "all tests passed"
# One closing line over every meson run above (release, ASan+UBSan, TSan), in the plain form CI reads.
python3 - build/meson-logs/testlog.json build-asan/meson-logs/testlog.json build-tsan/meson-logs/testlog.json <<'PY'
import json, sys
passed = failed = 0
for log in sys.argv[1:]:
    try:
        with open(log) as f:
            for line in f:
                result = json.loads(line).get("result")
                if result == "OK":
                    passed += 1
                elif result not in ("SKIP", None):
                    failed += 1
    except FileNotFoundError:
        pass
print(f"tests: {passed} passed, {failed} failed")
PY
