#!/usr/bin/env bash
# The whole live pipeline (RX lcore: rx_burst -> decode -> timestamp -> ring; worker on the main lcore: merge,
# every default scale, backlog, microbursts, pairs and flows) against `dpdk-testpmd --forward-mode=rxonly`
# on the same virtual device with the same cores (-l 0-1: one RX lcore), alternating, ROUNDS times per
# device. Both report packets per second of steady state (the median of their 1 s figures, the first dropped):
# testpmd its Rx-pps; burstscope the packets its worker analysed (pipeline) and those its RX lcore took from
# the device (RX = analysed + ring drops). The ratios' medians over the rounds are printed last.
# Needs root. usage: bench/compare_dpdk.sh BUILD_DIR [ROUNDS=3] [SECONDS=6]
set -euo pipefail
BUILD=${1:?usage: compare_dpdk.sh BUILD_DIR [ROUNDS] [SECONDS]}
ROUNDS=${2:-3}
SECS=${3:-6}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BS=$BUILD/burstscope
TMP=$(mktemp -d)
trap 'rm -rf "$TMP" /var/run/dpdk/bsbench_*' EXIT
EAL="-l 0-1 --no-huge -m 512 --no-pci"
HZ=$(awk '/^cpu MHz/ {print $4 * 1e6; exit}' /proc/cpuinfo)

median() { sort -g | awk '{a[NR] = $1} END {if (NR == 0) print 0; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

testpmd_pps() {  # VDEV -> median steady Rx-pps
  # shellcheck disable=SC2086
  (sleep $((SECS + 2)) | timeout -s INT "$SECS" dpdk-testpmd $EAL --file-prefix=bsbench_tp --vdev "$1" -- \
    --forward-mode=rxonly --total-num-mbufs=16384 -a --stats-period 1 2>&1 || true) |
    awk '/Rx-pps:/ {print $2}' | tail -n +3 | median
}

burstscope_pps() {  # VDEV -> "analysed_pps rx_pps" (medians of steady 1 s intervals)
  # shellcheck disable=SC2086
  "$BS" run --listen 127.0.0.1:0 --port "${1%%,*}" --vdev "$1" --duration "$SECS" --interval 1s -- $EAL --file-prefix=bsbench_bs \
    >"$TMP/bs.out" 2>&1 || true
  # "... 42.539 Mpps ... drops ring N": analysed in the interval, and the cumulative ring drops.
  awk '/ Mpps / && !/partial/ {
         for (i = 1; i <= NF; ++i) { if ($i == "Mpps") mpps = $(i - 1); if ($i == "ring") drops = $(i + 1) }
         if (n++ > 0) print mpps * 1e6, mpps * 1e6 + (drops - last); last = drops }' "$TMP/bs.out" |
    tail -n +2 >"$TMP/rates"
  echo "$(cut -d' ' -f1 "$TMP/rates" | median) $(cut -d' ' -f2 "$TMP/rates" | median)"
}

# The bundled trace's first 4000 frames at full length: real headers and sizes, looped by net_pcap from
# mbufs (infinite_rx keeps the whole file in the mempool, so it must fit).
"$BUILD/tools/wrap_trace" pad-usec "$ROOT/data/ddp-gloo-w3-3steps.pcap" "$TMP/full.pcap"
editcap -r "$TMP/full.pcap" "$TMP/loop.pcap" 1-4000
declare -A DEVICES=(
  [null-64B]="net_null0"
  [null-1500B]="net_null0,size=1500"
  [null-64B-copy]="net_null0,copy=1"
  [pcap-trace-loop]="net_pcap0,rx_pcap=$TMP/loop.pcap,infinite_rx=1"
)
printf '%-16s %5s %14s %14s %14s %9s %9s %10s %10s\n' device round testpmd_pps rx_pps analysed_pps rx_ratio ratio \
  cyc/pkt_tp cyc/pkt_bs
summary=()
for name in ${BENCH_DEVICES:-null-64B null-1500B null-64B-copy pcap-trace-loop}; do
  dev=${DEVICES[$name]}
  : >"$TMP/ratios" && : >"$TMP/rx_ratios"
  for round in $(seq 1 "$ROUNDS"); do
    tp=$(testpmd_pps "$dev")
    read -r analysed rx <<<"$(burstscope_pps "$dev")"
    ratio=$(awk -v a="$analysed" -v b="$tp" 'BEGIN {printf "%.3f", (b > 0 ? a / b : 0)}')
    rx_ratio=$(awk -v a="$rx" -v b="$tp" 'BEGIN {printf "%.3f", (b > 0 ? a / b : 0)}')
    echo "$ratio" >>"$TMP/ratios"
    echo "$rx_ratio" >>"$TMP/rx_ratios"
    printf '%-16s %5s %14.0f %14.0f %14.0f %9s %9s %10.1f %10.1f\n' "$name" "$round" "$tp" "$rx" "$analysed" \
      "$rx_ratio" "$ratio" "$(awk -v h="$HZ" -v p="$tp" 'BEGIN {print (p > 0 ? h / p : 0)}')" \
      "$(awk -v h="$HZ" -v p="$analysed" 'BEGIN {print (p > 0 ? h / p : 0)}')"
  done
  summary+=("$(printf '%-16s median RX/testpmd %s, pipeline/testpmd %s' "$name" "$(median <"$TMP/rx_ratios")" \
    "$(median <"$TMP/ratios")")")
done
echo
printf '%s\n' "${summary[@]}"
