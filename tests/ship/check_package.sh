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
cleanup() {
  ship_cleanup
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/ship.sh"

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
  ./usr/share/burstscope/alerts/burstscope.rules.yml ./usr/share/doc/burstscope/examples/burstscope.yaml \
  ./usr/share/bash-completion/completions/burstscope ./usr/share/zsh/vendor-completions/_burstscope; do
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
check "its JSON equals the build tree's (but the file's path and the time analysis took)" \
  same_analysis "$TMP/build.json" "$TMP/root.json"
check "--version in the root equals the build tree's (package version and git revision)" \
  test "$(chroot "$R" burstscope --version)" = "$("$BUILD/burstscope" --version)"
check "the units are installed, not enabled (a capture daemon needs its configuration first)" sh -c \
  "test -f '$R/lib/systemd/system/burstscope.service' && ! ls '$R'/etc/systemd/system/*.wants/burstscope* 2>/dev/null"

check_null_capture "in the root" "$R" burstscope
finish
