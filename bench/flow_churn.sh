#!/usr/bin/env bash
# Flow churn (issue 41): `burstscope analyze` of a capture whose packets are spread over 1 M random flows
# (bench/flow_churn.py) against the same packets in their real flows, in one run: wall time, CPU time (user +
# system, every thread) and peak resident memory of each, medians over alternating runs, and the ratios (goal:
# at most 1.5x, wall and memory); and the same without the pair and flow tables.
# usage: bench/flow_churn.sh [BUILD_DIR] [RUNS] [FLOWS]
# The real capture is compare_analyze.sh's: the bundled 3-step trace repeated 30 times (1.17 M packets).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RUNS=${2:-3}
FLOWS=${3:-1000000}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
[ -x /usr/bin/time ] || { echo "flow_churn.sh needs /usr/bin/time (Debian package time)" >&2; exit 1; }

python3 bench/repeat_trace.py data/ddp-gloo-w3-3steps.pcap "$TMP/real.pcap" 30 2 >/dev/null
python3 bench/flow_churn.py "$TMP/real.pcap" "$TMP/churn.pcap" "$FLOWS"
cat "$TMP/real.pcap" "$TMP/churn.pcap" >/dev/null  # into the page cache

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }
# Each capture as `analyze` runs by default, and without the pair and flow tables (--no-pairs-flows: no table to
# insert into or evict from), which shows what the other analyses' own per-flow state costs where flows churn.
# Wall time from the clock around the call (/usr/bin/time's has 10 ms steps, a sixth of the real capture's run);
# CPU and peak memory from /usr/bin/time.
runs=(real churn real-notables churn-notables)
for f in "${runs[@]}"; do : >"$TMP/$f.s"; : >"$TMP/$f.cpu"; : >"$TMP/$f.kb"; done
for _ in $(seq "$RUNS"); do
  for f in "${runs[@]}"; do
    opts=()
    [[ $f == *-notables ]] && opts=(--no-pairs-flows)
    t0=$(now)
    /usr/bin/time -f "%M %U %S" -o "$TMP/t" "$BUILD/burstscope" analyze "${opts[@]}" "$TMP/${f%-notables}.pcap" >/dev/null
    t1=$(now)
    read -r kb user sys <"$TMP/t"
    echo "$t1 - $t0" | bc -l >>"$TMP/$f.s"
    echo "$user + $sys" | bc -l >>"$TMP/$f.cpu"
    echo "$kb" >>"$TMP/$f.kb"
  done
done
for f in "${runs[@]}"; do
  printf "  %-66s %7.3f s  CPU %5.2f s  %8d KB peak\n" \
    "analyze$([[ $f == *-notables ]] && echo " --no-pairs-flows"), packets in their $([[ $f == real* ]] && echo "real flows" || echo "$FLOWS random flows")" \
    "$(median <"$TMP/$f.s")" "$(median <"$TMP/$f.cpu")" "$(median <"$TMP/$f.kb")"
done
ratio() { echo "$(median <"$TMP/$1") / $(median <"$TMP/$2")" | bc -l; }
printf "ratio churn / real: wall %.2f, peak memory %.2f   (goal <= 1.5), median of %s runs\n" \
  "$(ratio churn.s real.s)" "$(ratio churn.kb real.kb)" "$RUNS"
printf "  without the pair and flow tables: wall %.2f, peak memory %.2f\n" \
  "$(ratio churn-notables.s real-notables.s)" "$(ratio churn-notables.kb real-notables.kb)"
