#!/usr/bin/env bash
# README command (1): installs dependencies, builds, and runs burstscope's main job, live capture through
# DPDK, on its embedded default: the bundled trace of real PyTorch DDP training traffic, replayed by DPDK's
# pcap virtual device at the recorded pace (EAL with --no-huge --no-pci, so no NIC or hugepages needed). It
# prints a summary per 250 ms report interval and, when the replay goes quiet, the ledger. Needs root.
# Extra arguments go to `burstscope run` (e.g. --json, --interval 1s, --replay-speed 0 for full speed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ -d build/meson-info ]; then meson setup --reconfigure build >/dev/null; else meson setup build >/dev/null; fi
ninja -C build burstscope tools/wrap_trace
# net_pcap reports the captured length as the packet length and reads microseconds: give it the trace with
# every frame padded to its wire length (build/demo/, 54 MB, made once from data/).
mkdir -p build/demo
[ -s build/demo/ddp-gloo-w3-3steps.full.pcap ] ||
  ./build/tools/wrap_trace pad-usec data/ddp-gloo-w3-3steps.pcap build/demo/ddp-gloo-w3-3steps.full.pcap
exec ./build/burstscope run --port net_pcap0 --vdev net_pcap0,rx_pcap=build/demo/ddp-gloo-w3-3steps.full.pcap \
  --replay-speed 1 --idle-exit 1s --interval 250ms --baseline 10s "$@" \
  -- -l 0-1 --no-huge -m 512 --no-pci --file-prefix=burstscope-demo
