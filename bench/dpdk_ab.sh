#!/usr/bin/env bash
# Two builds of `burstscope run` alternated on the DPDK trace loop (the bundled trace's first 4000 frames at full
# length, looped by net_pcap, as bench/compare_dpdk.sh makes it), A B B A ..., ROUNDS times. Each run lasts
# SECONDS (at least 8) with 1 s intervals and prints:
#   - the median of the steady 1 s analysed rates (the first and last dropped), M packets/s;
#   - the ring drops, as a share of the frames the RX lcore received (the ledger at exit);
#   - the port worker's CPU (bs-port-0, /proc ticks from the 3rd to the 7th second): share of a core, and ns per
#     packet analysed at the median rate.
# RUN_ARGS adds options to both runs' `run` (e.g. RUN_ARGS="--ring-size 16777216": a ring of 1.2 GB, larger than the
# last-level cache, whose slots are never near the RX core).
# Needs root. usage: bench/dpdk_ab.sh BIN_A BIN_B [ROUNDS=3] [SECONDS=10]   (BIN: a build's burstscope binary)
set -euo pipefail
A=${1:?usage: dpdk_ab.sh BIN_A BIN_B [ROUNDS] [SECONDS]}
B=${2:?usage: dpdk_ab.sh BIN_A BIN_B [ROUNDS] [SECONDS]}
ROUNDS=${3:-3}
SECS=${4:-10}
[ "$SECS" -ge 8 ] || { echo "dpdk_ab.sh: SECONDS must be 8 or more (the worker is sampled from 3 s to 7 s)" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP" /var/run/dpdk/bsab_*' EXIT
WRAP=$(dirname "$A")/tools/wrap_trace
[ -x "$WRAP" ] || WRAP=$ROOT/build/tools/wrap_trace
"$WRAP" pad-usec "$ROOT/data/ddp-gloo-w3-3steps.pcap" "$TMP/full.pcap"
editcap -r "$TMP/full.pcap" "$TMP/loop.pcap" 1-4000
DEV="net_pcap0,rx_pcap=$TMP/loop.pcap,infinite_rx=1"
HZ=$(getconf CLK_TCK)

run() {  # BIN -> one line of figures
  # shellcheck disable=SC2086
  "$1" run --listen 127.0.0.1:0 --port net_pcap0 --vdev "$DEV" --duration "$SECS" --interval 1s ${RUN_ARGS:-} -- \
    -l 0-1 --no-huge -m 512 --no-pci --file-prefix=bsab_run >"$TMP/out" 2>&1 &
  local pid=$! tid="" c0 c1
  sleep 3
  for t in "/proc/$pid/task/"*; do [ "$(cat "$t/comm" 2>/dev/null)" = bs-port-0 ] && tid=${t##*/}; done
  [ -n "$tid" ] || { echo "no bs-port-0 thread in $1's run" >&2; wait "$pid" || true; return 1; }
  c0=$(awk '{print $14 + $15}' "/proc/$pid/task/$tid/stat")
  sleep 4
  c1=$(awk '{print $14 + $15}' "/proc/$pid/task/$tid/stat")
  wait "$pid" || true
  local rx drops mpps
  rx=$(awk '/received by RX/ {print $4}' "$TMP/out")
  drops=$(awk '/dropped, ring full/ {print $4}' "$TMP/out")
  mpps=$(awk '/ Mpps / && !/partial/ { for (i = 1; i <= NF; ++i) if ($i == "Mpps") m = $(i - 1); if (n++ > 0) print m }' \
    "$TMP/out" | sort -g | awk '{a[NR] = $1} END {print (NR ? a[int((NR + 1) / 2)] : 0)}')
  awk -v c=$((c1 - c0)) -v hz="$HZ" -v m="$mpps" -v rx="$rx" -v d="$drops" 'BEGIN {
    core = c / hz / 4
    printf "%7.3f Mpps  drops %6.3f%%  worker %3.0f%% of a core, %5.1f ns a packet", m, (rx > 0 ? 100 * d / rx : 0),
      100 * core, (m > 0 ? core * 1e3 / m : 0) }'
}

for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then a=$(run "$A"); b=$(run "$B"); else b=$(run "$B"); a=$(run "$A"); fi
  echo "round $r  A $a  |  B $b"
done
