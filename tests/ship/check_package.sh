#!/usr/bin/env bash
# The Debian package and the container image made from it (debian/, Containerfile, docs/install.md), TAP output
# for meson (suite ship). One compile: the Containerfile's build stage runs dpkg-buildpackage, its `package`
# stage installs that .deb with apt into the debian:12 base, and the image is that stage plus the NIC drivers the
# package recommends, the unprivileged user and the labels.
# No image registry is reachable here, so the debian:12 base is made locally (mmdebstrap from Debian's mirror,
# `podman import`): it is the fresh Debian 12 root the package is installed into. The image is built with
# `--pull=never --isolation chroot --storage-driver vfs` in a private podman store, from a copy of the source tree
# (so the three builds below share their cached layers even if the tree changes meanwhile).
# Containers cannot run here (no cgroup control): images are mounted (`podman image mount`) and run with chroot.
#   the package (taken out of the build stage): lintian without errors or warnings, its files, its Depends;
#   the package stage (base + the .deb by apt, no Recommends): `analyze` of the installed trace equals the build
#     tree's, --version names the build tree's version and revision, the units are installed but not enabled,
#     `run` captures from a DPDK virtual device with a balanced ledger (the drivers DPDK loads at run time come
#     with the package's dependencies);
#   the image: its OCI labels, the unprivileged user by default, no build tools, the package's own binary, the NIC
#     drivers, and as uid 10001 `analyze` equals the build tree's, --version, and the DPDK capture again.
# usage: check_package.sh BUILD_DIR SOURCE_ROOT     (root; network to deb.debian.org)
set -u
BUILD=$1 ROOT=$2
TMP=$(mktemp -d /var/tmp/bs-package.XXXXXX)
P=(podman --root "$TMP/storage" --runroot "$TMP/run" --storage-driver vfs)
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  ship_cleanup
  "${P[@]}" image unmount --all >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/ship.sh"

for tool in podman mmdebstrap lintian dpkg-deb; do
  command -v "$tool" >/dev/null || { notok "$tool is installed (scripts/setup.sh installs it)"; finish; }
done
# The source tree as committed plus what is changed in it (git metadata included: the revision), without builds.
mkdir -p "$TMP/src"
tar -C "$ROOT" --exclude='./build*' --exclude='./obj-*' --exclude='./debian/.debhelper' --exclude='./debian/burstscope' \
  -cf - . | tar -C "$TMP/src" -xf -
version_line=$("$BUILD/burstscope" --version)
version=$(echo "$version_line" | awk '{print $2}')
revision=$(echo "$version_line" | sed -E 's/.*\(revision (.*)\)$/\1/')
"$BUILD/burstscope" analyze --json "$ROOT/data/ddp-gloo-w3-3steps.pcap" >"$TMP/build.json"
# shellcheck disable=SC2317  # run through check
# same_version WHAT ROOT BINARY: BINARY's --version in ROOT is the build tree's.
same_version() {
  local v
  v=$(chroot "$2" "$3" --version)
  [ "$v" = "$version_line" ] || { echo "$1: '$v', the build tree: '$version_line'"; return 1; }
}
# podman build TARGET-OPTIONS...: the same build arguments each time, so the later builds reuse the cached stages.
# shellcheck disable=SC2317  # run through check
pbuild() {
  "${P[@]}" build --pull=never --isolation chroot -f "$TMP/src/Containerfile" --build-arg VERSION="$version" \
    --build-arg REVISION="$revision" "$@" "$TMP/src" >>"$TMP/build.log" 2>&1 || { tail -40 "$TMP/build.log"; return 1; }
}

start=$SECONDS
check "the debian:12 base made locally (a fresh Debian 12 root): mmdebstrap bookworm | podman import" sh -c \
  "mmdebstrap --variant=apt --quiet bookworm - http://deb.debian.org/debian | ${P[*]} import - docker.io/library/debian:12"
echo "# base made in $((SECONDS - start)) s"
start=$SECONDS
mkdir -p "$TMP/deb"
check "the build stage builds the package (dpkg-buildpackage -us -uc -b); --target deb --output takes it out" \
  pbuild --target deb --output "type=local,dest=$TMP/deb"
echo "# package built in $((SECONDS - start)) s"
deb=$(find "$TMP/deb" -name 'burstscope_*_*.deb' | head -1)
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
# The drivers DPDK loads at run time, which no shared-library scan sees (debian/control, docs/install.md).
check "it depends on the mempool, bus and virtual-device drivers (ring, vdev, pci, pcap, null, af_packet)" sh -c \
  "for p in librte-mempool-ring23 librte-bus-vdev23 librte-bus-pci23 librte-net-pcap23 librte-net-null23 librte-net-af-packet23; do dpkg-deb -f '$deb' Depends | tr ',' '\n' | grep -qx \" *\$p\" || { echo \"no \$p\"; exit 1; }; done"

# The package stage: the fresh Debian 12 root with the package installed by apt (its dependencies from Debian's
# mirror, not its Recommends: what the package's Depends give must be enough to capture).
start=$SECONDS
check "apt installs the package into the fresh Debian 12 root (the Containerfile's package stage)" \
  pbuild --target package -t localhost/burstscope-package:test
echo "# package installed in $((SECONDS - start)) s"
"${P[@]}" image exists localhost/burstscope-package:test || finish
# The image: the package stage plus the NIC drivers, the user and the labels; the build reuses both stages.
start=$SECONDS
check "podman build --pull=never --isolation chroot builds the image from the Containerfile" \
  pbuild -t localhost/burstscope:test
echo "# image built in $((SECONDS - start)) s"
"${P[@]}" image exists localhost/burstscope:test || finish
echo "# image size: $(("$("${P[@]}" image inspect localhost/burstscope:test --format '{{.Size}}')" / 1000000)) MB"
check "one compile: the package and image builds reused the build stage (dpkg-buildpackage ran once)" \
  test "$(grep -c '^dpkg-buildpackage: info: source package burstscope' "$TMP/build.log")" = 1

# Every build comes before any chroot: the DPDK capture binds /proc, /sys and /dev into a mounted image, i.e.
# into its vfs layer directory, which a later build from that stage would try to copy.
# The package stage, mounted: the fresh root the package was installed into.
R=$("${P[@]}" image mount localhost/burstscope-package:test)
[ -x "$R/usr/bin/burstscope" ] || { notok "the package stage has /usr/bin/burstscope"; finish; }

check "in the root: burstscope analyze /usr/share/burstscope/traces/ddp-gloo-w3-3steps.pcap --json runs" sh -c \
  "chroot '$R' burstscope analyze /usr/share/burstscope/traces/ddp-gloo-w3-3steps.pcap --json >'$TMP/root.json'"
check "its JSON equals the build tree's (but the file's path and the time analysis took)" \
  same_analysis "$TMP/build.json" "$TMP/root.json"
check "--version in the root equals the build tree's (package version and git revision)" \
  same_version "in the root" "$R" burstscope
check "the units are installed, not enabled (a capture daemon needs its configuration first)" sh -c \
  "test -f '$R/lib/systemd/system/burstscope.service' && ! ls '$R'/etc/systemd/system/*.wants/burstscope* 2>/dev/null"
check_null_capture "in the root" "$R" burstscope

# The image.
inspect() { "${P[@]}" image inspect localhost/burstscope:test --format "$1"; }
check "OCI labels: version $version and revision $revision" \
  test "$(inspect '{{index .Config.Labels "org.opencontainers.image.version"}} {{index .Config.Labels "org.opencontainers.image.revision"}}')" = "$version $revision"
check "OCI labels: title, source and licenses" sh -c \
  "${P[*]} image inspect localhost/burstscope:test --format '{{json .Config.Labels}}' | grep -q '\"org.opencontainers.image.title\":\"burstscope\"' && ${P[*]} image inspect localhost/burstscope:test --format '{{json .Config.Labels}}' | grep -q '\"org.opencontainers.image.licenses\":\"Apache-2.0\"' && ${P[*]} image inspect localhost/burstscope:test --format '{{json .Config.Labels}}' | grep -q 'org.opencontainers.image.source'"
check "the image runs as the unprivileged user (10001) by default, burstscope as its entrypoint" \
  test "$(inspect '{{.Config.User}} {{json .Config.Entrypoint}}')" = '10001 ["/usr/bin/burstscope"]'

mnt=$("${P[@]}" image mount localhost/burstscope:test)
check "podman image mount gives the image's root" test -x "$mnt/usr/bin/burstscope"
[ -x "$mnt/usr/bin/burstscope" ] || finish
check "the image holds no compiler and no -dev headers" sh -c \
  "! test -e '$mnt/usr/bin/g++' && ! test -e '$mnt/usr/bin/cc' && ! test -d '$mnt/usr/include/dpdk'"
check "the user burstscope (10001) exists in the image" grep -q '^burstscope:x:10001:' "$mnt/etc/passwd"
mkdir -p "$TMP/x"
dpkg-deb -x "$deb" "$TMP/x"
check "the image's burstscope is the checked package's, installed by dpkg (one artefact)" sh -c \
  "cmp '$TMP/x/usr/bin/burstscope' '$mnt/usr/bin/burstscope' && chroot '$mnt' dpkg-query -W -f '\${Status} \${Version}\n' burstscope | tee /dev/stderr | grep -qx 'install ok installed $version'"
# Each NIC driver the package recommends (the old image's list: mlx5, ice, i40e, ixgbe, bnxt, virtio, af_xdp).
for drv in $(dpkg-deb -f "$deb" Recommends | grep -o 'librte-[a-z0-9.+-]*'); do
  check "the image has the DPDK driver $drv the package recommends" sh -c \
    "chroot '$mnt' dpkg-query -W -f '\${Status}\n' $drv | grep -qx 'install ok installed'"
done
check "the image's drivers include mlx5, ice, i40e, ixgbe, bnxt, virtio and af_xdp" sh -c \
  "for p in librte-net-mlx5-23 librte-net-ice23 librte-net-i40e23 librte-net-ixgbe23 librte-net-bnxt23 librte-net-virtio23 librte-net-af-xdp23; do chroot '$mnt' dpkg-query -W -f '\${Status}\n' \$p | grep -qx 'install ok installed' || { echo \"no \$p\"; exit 1; }; done"
check "the image has no prometheus (the package recommends it, the image does not want it)" \
  test ! -e "$mnt/usr/bin/prometheus"

check "chroot into the image as uid 10001: burstscope analyze of the bundled trace runs" sh -c \
  "chroot --userspec=10001:10001 '$mnt' /usr/bin/burstscope analyze --json /usr/share/burstscope/traces/ddp-gloo-w3-3steps.pcap >'$TMP/image.json'"
check "its JSON equals the build tree's (but the file's path and the time analysis took)" \
  same_analysis "$TMP/build.json" "$TMP/image.json"
check "--version in the image equals the build tree's" same_version "in the image" "$mnt" /usr/bin/burstscope
check_null_capture "chroot into the image" "$mnt" /usr/bin/burstscope
finish
