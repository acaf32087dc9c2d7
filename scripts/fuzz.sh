#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) in build-fuzz/, replays the committed corpus through each,
# then fuzzes each for FUZZ_SECONDS (default 30: CI's bounded run). Any crash, sanitizer report, leak or
# timeout fails, and the input that caused it is left in build-fuzz/findings/. New interesting inputs collect
# in build-fuzz/corpus-TARGET/ (not committed; a finding worth keeping goes into tools/make_corpus.py).
#
#   scripts/fuzz.sh                      # CI: replay + 30 s per target
#   FUZZ_SECONDS=3600 scripts/fuzz.sh    # before a release: an hour per target (docs/DEVELOPING.md)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${FUZZ_SECONDS:-30}
B=build-fuzz
if [ ! -d $B/meson-info ]; then
  CC=clang CXX=clang++ meson setup $B -Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debugoptimized -Ddpdk=disabled -Dafxdp=disabled -Dtests=disabled -Dbenchmarks=disabled >/dev/null
fi
ninja -C $B fuzz/decode_fuzz fuzz/pcap_fuzz fuzz/config_fuzz
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
mkdir -p $B/findings

# target: seed directories from the committed corpus (and the example configurations)
declare -A seeds=(
  [decode_fuzz]="tests/corpus/frames"
  [pcap_fuzz]="tests/corpus/files data"
  [config_fuzz]="tests/corpus/config etc"
)
# One target: replay its seeds, then fuzz it. The three run side by side (each fuzzer is one process, and CI's
# machine has two cores): a minute and more of CI's time, with their output printed after, one target at a time.
fuzz_target() { # TARGET
  local target=$1
  # shellcheck disable=SC2206
  local dirs=(${seeds[$target]})
  echo "--- $target: replay ${dirs[*]}"
  # The bundled traces are large: replay them, but seed the fuzzing from the small corpus files only.
  "$B/fuzz/$target" -runs=0 -rss_limit_mb=4096 "${dirs[@]}" 2>&1 | tail -1
  mkdir -p "$B/corpus-$target"
  echo "--- $target: fuzz ${SECONDS_PER_TARGET}s"
  "$B/fuzz/$target" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$B/findings/$target-" -print_final_stats=1 "$B/corpus-$target" "${dirs[0]}" \
    >"$B/$target.log" 2>&1 || { tail -40 "$B/$target.log"; echo "fuzz: $target failed; input in $B/findings/"; return 1; }
  grep -E '^stat::number_of_executed_units|^Done' "$B/$target.log" | tr '\n' ' '; echo
}
targets=(decode_fuzz pcap_fuzz config_fuzz)
pids=()
for target in "${targets[@]}"; do
  fuzz_target "$target" >"$B/$target.out" 2>&1 &
  pids+=("$!")
done
failed=0
for i in "${!targets[@]}"; do
  wait "${pids[$i]}" || failed=1
  cat "$B/${targets[$i]}.out"
done
[ "$failed" = 0 ] || exit 1
echo "fuzz: no findings"
