#!/usr/bin/env bash
# Side by side on one capture file, in one run: `burstscope analyze` (all scales exact, pairs and flows on;
# also with --json and with --no-training)
# against a bare libpcap read loop (bench/pcap_read_loop.c) and against `tshark -q -z io,stat,0.001`.
# Prints packets/s of each and the ratios, medians over alternating runs (file in the page cache).
# usage: bench/compare_analyze.sh [BUILD_DIR] [FILE] [RUNS]
# Without FILE it builds a longer trace: the bundled 3-step trace repeated 30 times back to back, 2 s apart
# (1.17 M packets, 128 MB, 59 s), so that process start-up (about 15 ms) does not dominate; bench/repeat_trace.py
# moves each repeat's TCP sequence numbers on, so that the repeats continue the connections rather than
# resend their bytes (plain copies made every data segment a retransmission to the TCP analysis).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
FILE=${2:-}
RUNS=${3:-7}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [ -z "$FILE" ]; then
  python3 bench/repeat_trace.py data/ddp-gloo-w3-3steps.pcap "$TMP/long.pcap" 30 2
  FILE=$TMP/long.pcap
fi
cat "$FILE" >/dev/null  # into the page cache

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

packets=$("$BUILD/bench/pcap_read_loop" "$FILE" | cut -d' ' -f1)
: >"$TMP/loop" ; : >"$TMP/analyze" ; : >"$TMP/json" ; : >"$TMP/bursts"
# analyze three ways: as an operator runs it (text; the training analysis of the whole file at the end), with
# --json (every evidence and mirror bin listed: megabytes of JSON on a long file), and the packet path alone
# (--no-training: reading, decoding, the engine, evidence and mirror checks; text).
for _ in $(seq "$RUNS"); do
  t0=$(now); "$BUILD/bench/pcap_read_loop" "$FILE" >/dev/null; t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$TMP/loop"
  t0=$(now); "$BUILD/burstscope" analyze "$FILE" >/dev/null; t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$TMP/analyze"
  t0=$(now); "$BUILD/burstscope" analyze --json "$FILE" >/dev/null; t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$TMP/json"
  t0=$(now); "$BUILD/burstscope" analyze --no-training "$FILE" >/dev/null; t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$TMP/bursts"
done
loop=$(median <"$TMP/loop")
analyze=$(median <"$TMP/analyze")
json=$(median <"$TMP/json")
bursts=$(median <"$TMP/bursts")

tshark_s=""
if command -v tshark >/dev/null; then
  : >"$TMP/tshark"
  for _ in 1 2 3; do
    t0=$(now); tshark -q -z io,stat,0.001 -r "$FILE" >/dev/null 2>&1; t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$TMP/tshark"
  done
  tshark_s=$(median <"$TMP/tshark")
fi

echo "file: $FILE ($packets packets), median of $RUNS runs (tshark: 3), wall time per whole run"
printf "  %-36s %8.3f s  %7.2f Mpackets/s\n" "bare libpcap read loop" "$loop" "$(echo "$packets / $loop / 1000000" | bc -l)"
printf "  %-36s %8.3f s  %7.2f Mpackets/s\n" "burstscope analyze (all on)" "$analyze" "$(echo "$packets / $analyze / 1000000" | bc -l)"
printf "  %-36s %8.3f s  %7.2f Mpackets/s\n" "burstscope analyze --json" "$json" "$(echo "$packets / $json / 1000000" | bc -l)"
printf "  %-36s %8.3f s  %7.2f Mpackets/s\n" "burstscope analyze --no-training" "$bursts" "$(echo "$packets / $bursts / 1000000" | bc -l)"
[ -n "$tshark_s" ] && printf "  %-36s %8.3f s  %7.2f Mpackets/s\n" "tshark -q -z io,stat,0.001" "$tshark_s" "$(echo "$packets / $tshark_s / 1000000" | bc -l)"
printf "ratio analyze / bare read loop (packets/s): %.2f; packet path (--no-training) %.2f   (goal >= 0.8)\n" \
  "$(echo "$loop / $analyze" | bc -l)" "$(echo "$loop / $bursts" | bc -l)"
# The same ratio run by run (each analyze against the loop run just before it: pairs share the machine's state), so
# that a claim can say how far the runs spread around the goal.
paste "$TMP/loop" "$TMP/analyze" | awk '{print $1 / $2}' | sort -g |
  awk '{a[NR] = $1} END {printf "  run by run: min %.2f, median %.2f, max %.2f (%d pairs)\n", a[1], a[int((NR + 1) / 2)], a[NR], NR}'
[ -n "$tshark_s" ] && printf "ratio analyze / tshark (packets/s): %.1f   (goal >= 100)\n" "$(echo "$tshark_s / $analyze" | bc -l)"
