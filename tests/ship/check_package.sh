#!/usr/bin/env bash
# The Debian package (debian/, docs/install.md), TAP output for meson (suite ship): built with the ordinary
# tools from a copy of the source tree, lintian without errors or warnings, installed into a fresh Debian 12
# root made by mmdebstrap from Debian's mirror, and run there (chroot): `analyze` of the installed trace equals
# the build tree's result, --version names the build tree's version and revision, the units are installed but
# not enabled, and `run` captures from a DPDK virtual device with a balanced ledger (the drivers DPDK loads at
# run time come with the package's dependencies).
# usage: check_package.sh BUILD_DIR SOURCE_ROOT     (root; network to deb.debian.org)
set -u
BUILD=$1 ROOT=$2
TMP=$(mktemp -d /var/tmp/bs-package.XXXXXX)
MNT=()
cleanup() {
  for m in "${MNT[@]}"; do umount -R "$m" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local name=$1; shift; if "$@" >"$TMP/out" 2>&1; then ok "$name"; else notok "$name"; sed 's/^/# /' "$TMP/out" | tail -40; fi; }
finish() { echo "1..$n"; [ "$failed" -eq 0 ]; exit; }

for tool in dpkg-buildpackage dh lintian mmdebstrap; do
  command -v "$tool" >/dev/null || { notok "$tool is installed (scripts/setup.sh installs it)"; finish; }
done

# The source tree as committed plus what is changed in it (git metadata included: the revision), without builds.
mkdir -p "$TMP/src"
tar -C "$ROOT" --exclude='./build*' --exclude='./obj-*' --exclude='./debian/.debhelper' --exclude='./debian/burstscope' \
  -cf - . | tar -C "$TMP/src" -xf -
start=$SECONDS
check "dpkg-buildpackage -us -uc -b builds the package" sh -c "cd '$TMP/src' && dpkg-buildpackage -us -uc -b -j$(nproc) >'$TMP/build.log' 2>&1 || { tail -40 '$TMP/build.log'; exit 1; }"
echo "# package built in $((SECONDS - start)) s"
deb=$(ls "$TMP"/burstscope_*_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || finish

check "lintian: no error or warning (docs/install.md explains the info tags left)" sh -c \
  "lintian --tag-display-limit 0 '$deb' 2>&1 | grep -v 'running with root privileges' | tee /dev/stderr | (! grep -Eq '^[EW]: ')"
dpkg -c "$deb" | awk '{print $6}' >"$TMP/contents"
for f in ./usr/bin/burstscope ./lib/systemd/system/burstscope.service ./lib/systemd/system/burstscope-afxdp.service \
  ./usr/share/man/man1/burstscope.1.gz ./usr/share/burstscope/traces/ddp-gloo-w3-3steps.pcap \
  ./usr/share/burstscope/alerts/burstscope.rules.yml ./usr/share/doc/burstscope/examples/burstscope.yaml; do
  check "the package holds $f" grep -qx "$f" "$TMP/contents"
done
check "its dependencies come from the binary's libraries (shlibs) and DPDK's run-time drivers" sh -c \
  "dpkg-deb -f '$deb' Depends | tee /dev/stderr | grep -q 'librte-eal23' && dpkg-deb -f '$deb' Depends | grep -q 'libxdp1' && dpkg-deb -f '$deb' Depends | grep -q 'librte-mempool-ring23'"

# A fresh Debian 12 root with the package installed by apt (its dependencies from Debian's mirror).
R=$TMP/root
start=$SECONDS
check "mmdebstrap makes a Debian 12 root and apt installs the package into it" \
  mmdebstrap --variant=apt --quiet --customize-hook="copy-in $deb /tmp" \
  --customize-hook="chroot \"\$1\" sh -c 'apt-get install -y -q /tmp/$(basename "$deb") >/dev/null'" \
  bookworm "$R" http://deb.debian.org/debian
echo "# root made and package installed in $((SECONDS - start)) s"
[ -x "$R/usr/bin/burstscope" ] || finish

"$BUILD/burstscope" analyze --json "$ROOT/data/ddp-gloo-w3-3steps.pcap" >"$TMP/build.json"
check "in the root: burstscope analyze /usr/share/burstscope/traces/ddp-gloo-w3-3steps.pcap --json runs" sh -c \
  "chroot '$R' burstscope analyze /usr/share/burstscope/traces/ddp-gloo-w3-3steps.pcap --json >'$TMP/root.json'"
check "its JSON equals the build tree's (but the file's path and the time analysis took)" python3 -c "
import json, sys
a, b = json.load(open('$TMP/build.json')), json.load(open('$TMP/root.json'))
def strip(d):
    d.pop('files')
    for f in d['inputs']['files']:
        f.pop('path')
    d['training'].pop('analysis_ms')
    return d
sys.exit(0 if strip(a) == strip(b) else 1)"
check "--version in the root equals the build tree's (package version and git revision)" \
  test "$(chroot "$R" burstscope --version)" = "$("$BUILD/burstscope" --version)"
check "the units are installed, not enabled (a capture daemon needs its configuration first)" sh -c \
  "test -f '$R/lib/systemd/system/burstscope.service' && ! ls '$R'/etc/systemd/system/*.wants/burstscope* 2>/dev/null"

# Live capture in the root: DPDK's EAL on a null device for a second.
for m in proc sys dev; do
  mkdir -p "$R/$m"
  if [ "$m" = proc ]; then mount -t proc proc "$R/proc"; else mount --rbind "/$m" "$R/$m"; fi
  MNT+=("$R/$m")
done
check "in the root: burstscope run on a DPDK null device for 1 s exits 0 with a balanced ledger" sh -c \
  "timeout 60 chroot '$R' burstscope run --listen none -q --port net_null0 --vdev net_null0 --duration 1 -- -l 0-1 --no-huge -m 512 --no-pci --file-prefix bs_pkg_$$ 2>&1 | tee /dev/stderr | grep -q '^  balanced'"
finish
