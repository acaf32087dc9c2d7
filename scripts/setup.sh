#!/usr/bin/env bash
# Installs everything burstscope needs to build, run and test on Debian 12, and prepares the machine.
# Idempotent: safe to run again. Needs root (or sudo).
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

PKGS=(
  # toolchain and build
  build-essential g++ meson ninja-build pkg-config git
  clang llvm libclang-rt-14-dev
  # static analysis, formatting and fuzzing (scripts/lint.sh, scripts/fuzz.sh): libFuzzer comes with libclang-rt-14-dev
  clang-tidy clang-format cppcheck
  # libraries
  libdpdk-dev dpdk dpdk-dev libbpf-dev libxdp-dev bpftool
  prometheus-cpp-dev libabsl-dev libpcap-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libcap-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # the step-period search (autocorrelation by FFT, src/training)
  libfftw3-dev
  # compressed capture files, read as they stream (src/capture/pcap/input_stream.cc); zstd for the tests
  zlib1g-dev libzstd-dev zstd
  # the metrics endpoint's HTTP server and its TLS (src/export/http_server.cc); openssl makes the tests' certificates
  libmicrohttpd-dev libgnutls28-dev openssl
  # tools used by tests and benchmarks
  tshark tcpdump tcpreplay iproute2 ethtool procps python3-numpy python3-yaml bc curl
  # real PyTorch (gloo) training jobs on the testbed (tools/testbed, the testbed suite): run with /usr/bin/python3
  python3-torch
  # the report page's test (tests/report): headless Chromium renders report.html, Pillow checks the screenshot's chart
  # regions are not blank (run with /usr/bin/python3); DejaVu so the page's text has a font without a network
  chromium python3-pil fonts-dejavu-core
  # the monitoring stack the exporter, rules and dashboards are tested against
  prometheus prometheus-alertmanager
  # the man page, made from the CLI's own help at build time (meson.build); systemd-analyze checks the installed units
  help2man systemd
  # the shell completions' test runs them in real shells, bash's as bash-completion loads it (tests/cli)
  bash-completion zsh
  # the ship suite: the Debian package (debhelper, lintian), a fresh Debian root for it (mmdebstrap), the image (podman)
  debhelper dpkg-dev fakeroot lintian mmdebstrap podman
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer it so the install never waits for input.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# bpffs is needed by the AF_XDP path (libxdp pins its dispatcher there); hugepages are optional.
if [ "$(id -u)" -eq 0 ] && ! mountpoint -q /sys/fs/bpf 2>/dev/null; then
  mount -t bpf bpf /sys/fs/bpf 2>/dev/null || echo "note: could not mount bpffs at /sys/fs/bpf" >&2
fi
echo "setup: dependencies present"
