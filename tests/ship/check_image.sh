#!/usr/bin/env bash
# The container image (Containerfile, docs/install.md), TAP output for meson (suite ship). No image registry is
# reachable here, so the debian:12 base is made locally (mmdebstrap from Debian's mirror, `podman import`), and
# the image is built with `--pull=never --isolation chroot --storage-driver vfs` in a private podman store.
# Containers cannot run here (no cgroup control): the image is mounted (`podman image mount`) and its binary
# run with chroot: analyze of the bundled trace equals the build tree's, a DPDK null-device capture balances,
# and the image has its OCI labels, runs as the unprivileged user by default and carries no build tools.
# usage: check_image.sh BUILD_DIR SOURCE_ROOT     (root; network to deb.debian.org)
set -u
BUILD=$1 ROOT=$2
TMP=$(mktemp -d /var/tmp/bs-image.XXXXXX)
P=(podman --root "$TMP/storage" --runroot "$TMP/run" --storage-driver vfs)
cleanup() {
  ship_cleanup
  "${P[@]}" image unmount --all >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/ship.sh"

for tool in podman mmdebstrap; do
  command -v "$tool" >/dev/null || { notok "$tool is installed (scripts/setup.sh installs it)"; finish; }
done
version_line=$("$BUILD/burstscope" --version)
version=$(echo "$version_line" | awk '{print $2}')
revision=$(echo "$version_line" | sed -E 's/.*\(revision (.*)\)$/\1/')

start=$SECONDS
check "the debian:12 base made locally: mmdebstrap bookworm | podman import" sh -c \
  "mmdebstrap --variant=apt --quiet bookworm - http://deb.debian.org/debian | ${P[*]} import - docker.io/library/debian:12"
check "podman build --pull=never --isolation chroot builds the image from the Containerfile" sh -c \
  "${P[*]} build --pull=never --isolation chroot -f '$ROOT/Containerfile' --build-arg VERSION=$version \
     --build-arg REVISION=$revision -t localhost/burstscope:test '$ROOT' >'$TMP/build.log' 2>&1 || { tail -40 '$TMP/build.log'; exit 1; }"
echo "# base and image built in $((SECONDS - start)) s"
"${P[@]}" image exists localhost/burstscope:test || finish

inspect() { "${P[@]}" image inspect localhost/burstscope:test --format "$1"; }
check "OCI labels: version $version and revision $revision" sh -c \
  "test \"\$(${P[*]} image inspect localhost/burstscope:test --format '{{index .Config.Labels \"org.opencontainers.image.version\"}} {{index .Config.Labels \"org.opencontainers.image.revision\"}}')\" = '$version $revision'"
check "OCI labels: title, source and licenses" sh -c \
  "${P[*]} image inspect localhost/burstscope:test --format '{{json .Config.Labels}}' | grep -q '\"org.opencontainers.image.licenses\":\"Apache-2.0\"' && ${P[*]} image inspect localhost/burstscope:test --format '{{json .Config.Labels}}' | grep -q 'org.opencontainers.image.source'"
check "the image runs as the unprivileged user (10001) by default, burstscope as its entrypoint" \
  test "$(inspect '{{.Config.User}} {{json .Config.Entrypoint}}')" = '10001 ["/usr/bin/burstscope"]'

mnt=$("${P[@]}" image mount localhost/burstscope:test)
check "podman image mount gives the image's root" test -x "$mnt/usr/bin/burstscope"
[ -x "$mnt/usr/bin/burstscope" ] || finish
check "the runtime stage holds no compiler and no -dev headers" sh -c \
  "! test -e '$mnt/usr/bin/g++' && ! test -e '$mnt/usr/bin/cc' && ! test -d '$mnt/usr/include/dpdk'"
check "the user burstscope (10001) exists in the image" grep -q '^burstscope:x:10001:' "$mnt/etc/passwd"

"$BUILD/burstscope" analyze --json "$ROOT/data/ddp-gloo-w3-3steps.pcap" >"$TMP/build.json"
check "chroot into the image: burstscope analyze of the bundled trace runs" sh -c \
  "chroot --userspec=10001:10001 '$mnt' /usr/bin/burstscope analyze --json /usr/share/burstscope/traces/ddp-gloo-w3-3steps.pcap >'$TMP/image.json'"
check "its JSON equals the build tree's (but the file's path and the time analysis took)" \
  same_analysis "$TMP/build.json" "$TMP/image.json"
check "--version in the image equals the build tree's" test "$(chroot "$mnt" /usr/bin/burstscope --version)" = "$version_line"

check_null_capture "chroot into the image" "$mnt" /usr/bin/burstscope
finish
