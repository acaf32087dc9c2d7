#!/usr/bin/env bash
# Flow churn (issue 41): `burstscope analyze` of a capture whose packets are spread over 1 M random flows
# (bench/flow_churn.py) against the same packets in their real flows, in one run: wall time, CPU time (user +
# system, every thread) and peak resident memory of each, medians over alternating runs, and the ratios (goal:
# at most 1.5x, wall and memory).
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
for f in real churn; do : >"$TMP/$f.s"; : >"$TMP/$f.cpu"; : >"$TMP/$f.kb"; done
for _ in $(seq "$RUNS"); do
  for f in real churn; do
    /usr/bin/time -f "%e %M %U %S" -o "$TMP/t" "$BUILD/burstscope" analyze "$TMP/$f.pcap" >/dev/null
    read -r s kb user sys <"$TMP/t"
    echo "$s" >>"$TMP/$f.s"
    echo "$user + $sys" | bc -l >>"$TMP/$f.cpu"
    echo "$kb" >>"$TMP/$f.kb"
  done
done
for f in real churn; do
  printf "  %-40s %7.2f s  CPU %5.2f s  %8d KB peak\n" \
    "analyze, packets in their $([ $f = real ] && echo "real flows" || echo "$FLOWS random flows")" \
    "$(median <"$TMP/$f.s")" "$(median <"$TMP/$f.cpu")" "$(median <"$TMP/$f.kb")"
done
printf "ratio churn / real: wall %.2f, peak memory %.2f   (goal <= 1.5), median of %s runs\n" \
  "$(echo "$(median <"$TMP/churn.s") / $(median <"$TMP/real.s")" | bc -l)" \
  "$(echo "$(median <"$TMP/churn.kb") / $(median <"$TMP/real.kb")" | bc -l)" "$RUNS"
