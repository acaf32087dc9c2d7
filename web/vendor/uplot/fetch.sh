#!/bin/sh
# Re-fetches the vendored uPlot from the npm registry and checks it against the hashes committed here.
# Run from this directory: ./fetch.sh
set -eu
VERSION=1.6.32
TGZ_SHA256=4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "uplot@$VERSION" >/dev/null)
echo "$TGZ_SHA256  $tmp/uplot-$VERSION.tgz" | sha256sum -c -
tar -xzf "$tmp/uplot-$VERSION.tgz" -C "$tmp"
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$tmp/package/LICENSE" .
sha256sum -c SHA256SUMS
