#!/usr/bin/env bash
# `meson install` puts every part where docs/install.md says (TAP output for meson, suite ship):
# the list of installed files, the units' paths, systemd-analyze verify on the units at their installed paths
# (the destdir's prefix bind-mounted over the real one in a private mount namespace), the man page, and the
# installed binary on the installed trace giving the build tree's result.
# usage: check_install.sh BUILD_DIR SOURCE_ROOT PREFIX
set -u
BUILD=$1 ROOT=$2 PREFIX=$3
TMP=$(mktemp -d)
trap 'ship_cleanup; rm -rf "$TMP"' EXIT
. "$(dirname "$0")/ship.sh"

DEST=$TMP/dest
check "meson install --destdir succeeds" meson install -C "$BUILD" --destdir "$DEST" --no-rebuild --quiet
P=$DEST$PREFIX
if [ "$PREFIX" = /usr ]; then UNITDIR=$DEST/lib/systemd/system; else UNITDIR=$P/lib/systemd/system; fi
expected=(
  "$P/bin/burstscope"
  "$UNITDIR/burstscope.service" "$UNITDIR/burstscope-afxdp.service"
  "$P/share/man/man1/burstscope.1"
  "$P/share/burstscope/alerts/burstscope.rules.yml" "$P/share/burstscope/alerts/tests/burstscope_test.yml"
  "$P/share/burstscope/traces/ddp-gloo-w3-3steps.pcap"
  "$P/share/burstscope/deploy/prometheus/prometheus.yml" "$P/share/burstscope/deploy/alertmanager/alertmanager.yml"
  "$P/share/burstscope/deploy/grafana/provisioning/dashboards/burstscope.yml"
  "$P/share/burstscope/deploy/kubernetes/burstscope-dpdk.yaml"
  "$P/share/doc/burstscope/examples/burstscope.yaml" "$P/share/doc/burstscope/examples/burstscope-afxdp.yaml"
  "$P/share/doc/burstscope/examples/web-config.yml"
  "$P/share/doc/burstscope/README.md" "$P/share/doc/burstscope/index.md" "$P/share/doc/burstscope/operations.md" "$P/share/doc/burstscope/runbook.md"
)
for d in "$ROOT"/dashboards/*.json; do expected+=("$P/share/burstscope/dashboards/$(basename "$d")"); done
expected+=("$P/share/bash-completion/completions/burstscope")
if [ "$PREFIX" = /usr ]; then expected+=("$P/share/zsh/vendor-completions/_burstscope"); else expected+=("$P/share/zsh/site-functions/_burstscope"); fi
for f in "${expected[@]}"; do
  check "installed: ${f#"$DEST"}" test -s "$f"
done
check "the installed README.md is the front page and index.md the docs index (one does not overwrite the other)" \
  sh -c "cmp -s '$ROOT/README.md' '$P/share/doc/burstscope/README.md' && cmp -s '$ROOT/docs/README.md' '$P/share/doc/burstscope/index.md'"
check "nothing of the build's own tools or tests is installed (only the binary in bin)" \
  test "$(find "$P/bin" -type f | wc -l)" = 1

# The units name what was installed: the binary and the documentation under the prefix.
for unit in burstscope burstscope-afxdp; do
  check "$unit.service: ExecStart and Documentation point into $PREFIX" sh -c \
    "grep -q '^ExecStart=$PREFIX/bin/burstscope ' '$UNITDIR/$unit.service' && grep -q '^Documentation=file://$PREFIX/share/doc/burstscope/' '$UNITDIR/$unit.service'"
  if [ "$PREFIX" != /usr/local ]; then
    check "$unit.service: no path left in /usr/local" sh -c "! grep -n '/usr/local/' '$UNITDIR/$unit.service'"
  fi
done
if ! command -v systemd-analyze >/dev/null; then
  notok "systemd-analyze is missing (Debian's systemd; scripts/setup.sh installs it)"
else
  # The installed tree at its real place, seen only by this process: the units verify with their own paths.
  if [ "$PREFIX" = /usr ]; then over=$DEST/usr; under=/usr; else over=$P; under=$PREFIX; fi
  check "systemd-analyze verify is clean on the installed units at the installed paths" unshare -m sh -c \
    "mount --make-rprivate / && mkdir -p '$under' && mount --bind '$over' '$under' && out=\$(systemd-analyze verify '$under/lib/systemd/system/burstscope.service' '$under/lib/systemd/system/burstscope-afxdp.service' 2>&1); rc=\$?; echo \"\$out\"; test \$rc = 0 && test -z \"\$out\""
fi

# The man page: groff reads it without a warning, and it holds every command's options.
check "the man page renders without groff warnings" sh -c \
  "groff -man -Tutf8 -ww -z '$P/share/man/man1/burstscope.1' 2>&1 | tee /dev/stderr | (! grep -q .)"
for cmd in run analyze report compare whatif; do
  check "the man page documents burstscope $cmd" grep -q "burstscope $cmd" "$P/share/man/man1/burstscope.1"
done

# The installed binary on the installed trace: the build tree's result.
"$BUILD/burstscope" analyze --json "$ROOT/data/ddp-gloo-w3-3steps.pcap" >"$TMP/build.json"
check "the installed burstscope analyses the installed trace" sh -c \
  "'$P/bin/burstscope' analyze --json '$P/share/burstscope/traces/ddp-gloo-w3-3steps.pcap' >'$TMP/installed.json'"
check "its JSON equals the build tree's on the source trace (but the file's path and the time analysis took)" \
  same_analysis "$TMP/build.json" "$TMP/installed.json"
check "--version of the installed binary names the version and revision" sh -c \
  "'$P/bin/burstscope' --version | grep -Eq '^burstscope [0-9.]+ \\(revision [^)]+\\)\$'"

finish
