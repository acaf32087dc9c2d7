#!/usr/bin/env bash
# Soak test (not in CI's default run): burstscope captures through AF_XDP on a veth pair in two network
# namespaces while tcpreplay loops the bundled DDP trace into it at a steady rate, for SOAK_MINUTES (default
# 10). Every SAMPLE_S seconds it records RSS, open fds, threads and the time one /metrics scrape takes.
# Pass: after a warm-up of a tenth of the run, RSS grows by less than 8 MiB, fds and threads never change,
# no scrape takes over a second; at the end the ledger balances. Samples go to soak.csv in the output dir.
#
#   sudo scripts/soak.sh [BUILD_DIR] [OUT_DIR]        # SOAK_MINUTES=60 SOAK_PPS=50000 to push harder
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-$(mktemp -d /tmp/burstscope-soak.XXXX)}
MINUTES=${SOAK_MINUTES:-10}
PPS=${SOAK_PPS:-20000}
SAMPLE_S=${SAMPLE_S:-10}
BS=$PWD/$BUILD/burstscope
TRACE=$PWD/data/ddp-gloo-w3-3steps.pcap
PORT=19470
NS_RX=bssoak_rx_$$ NS_TX=bssoak_tx_$$ V0=bssk0 V1=bssk1
[ "$(id -u)" = 0 ] || { echo "soak: needs root (namespaces, XDP)" >&2; exit 2; }
mkdir -p "$OUT"
cleanup() {
  kill "${replay:-}" "${pid:-}" 2>/dev/null || true
  wait 2>/dev/null || true
  ip netns del "$NS_RX" 2>/dev/null || true
  ip netns del "$NS_TX" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$NS_RX" && ip netns add "$NS_TX"
ip link add "$V0" netns "$NS_TX" type veth peer name "$V1" netns "$NS_RX"
ip -n "$NS_TX" link set "$V0" up && ip -n "$NS_RX" link set "$V1" up && ip -n "$NS_RX" link set lo up
# tcpreplay sends the captured bytes; pad each frame to its wire length so the monitor sees the real sizes.
"$BUILD/tools/wrap_trace" pad-usec "$TRACE" "$OUT/pad.pcap"

ip netns exec "$NS_RX" "$BS" run --xdp "$V1" --listen "127.0.0.1:$PORT" --json -q >"$OUT/run.json" 2>"$OUT/run.err" &
pid=$!
for _ in $(seq 1 100); do grep -q "metrics at" "$OUT/run.err" 2>/dev/null && break; sleep 0.1; done
ip netns exec "$NS_TX" tcpreplay -i "$V0" --loop 0 --pps "$PPS" "$OUT/pad.pcap" >"$OUT/tcpreplay.out" 2>&1 &
replay=$!

echo "t_s,rss_kb,fds,threads,scrape_s" >"$OUT/soak.csv"
end=$((SECONDS + MINUTES * 60))
start=$SECONDS
while [ $SECONDS -lt $end ]; do
  sleep "$SAMPLE_S"
  kill -0 "$pid" || { echo "soak: burstscope exited early" >&2; cat "$OUT/run.err" >&2; exit 1; }
  rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status)
  fds=$(ls /proc/$pid/fd | wc -l)
  threads=$(awk '/^Threads/ {print $2}' /proc/$pid/status)
  scrape=$(ip netns exec "$NS_RX" curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$PORT/metrics")
  echo "$((SECONDS - start)),$rss,$fds,$threads,$scrape" | tee -a "$OUT/soak.csv"
done
kill "$replay"; wait "$replay" 2>/dev/null || true
sleep 1
kill -TERM "$pid"; wait "$pid"; rc=$?
pid=

python3 - "$OUT/soak.csv" "$OUT/run.json" "$rc" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
warm = rows[max(1, len(rows) // 10):]
rss = [int(r["rss_kb"]) for r in warm]
fds = {r["fds"] for r in warm}
threads = {r["threads"] for r in warm}
worst = max(float(r["scrape_s"]) for r in rows)
ledger = json.load(open(sys.argv[2]))["ports"][0]["ledger"]
checks = {
    f"RSS growth after warm-up {rss[-1] - rss[0]} kB < 8192 kB": rss[-1] - rss[0] < 8192,
    f"fds constant {sorted(fds)}": len(fds) == 1,
    f"threads constant {sorted(threads)}": len(threads) == 1,
    f"slowest scrape {worst:.3f} s < 1 s": worst < 1,
    f"exit status {sys.argv[3]}, ledger balanced (received {ledger['received']})": sys.argv[3] == "0" and ledger["balanced"],
}
for what, good in checks.items():
    print(("PASS " if good else "FAIL ") + what)
sys.exit(0 if all(checks.values()) else 1)
PY
echo "soak: samples in $OUT/soak.csv"
