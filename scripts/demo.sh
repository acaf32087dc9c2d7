#!/usr/bin/env bash
# README command (1): installs dependencies, builds, and runs burstscope on its embedded default, the
# bundled trace of real PyTorch DDP training traffic. Extra arguments go to `burstscope analyze`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ -d build/meson-info ]; then meson setup --reconfigure build >/dev/null; else meson setup build >/dev/null; fi
ninja -C build burstscope
exec ./build/burstscope analyze "$@" data/ddp-gloo-w3-3steps.pcap
