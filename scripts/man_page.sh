#!/usr/bin/env bash
# Makes burstscope.1 from the binary's own help (called by meson.build at build time):
# help2man for the top level, and a COMMANDS section with each command's --help.
# usage: man_page.sh HELP2MAN BURSTSCOPE OUT
set -euo pipefail
HELP2MAN=$1 BS=$2 OUT=$3
include=$(mktemp)
trap 'rm -f "$include"' EXIT
{
  echo "[COMMANDS]"
  for cmd in run analyze report compare whatif hash-password; do
    if "$BS" "$cmd" --help >/dev/null 2>&1; then
      echo ".SS \"burstscope $cmd\""
      echo ".nf"
      "$BS" "$cmd" --help | sed -e 's/\\/\\e/g' -e 's/^\./\\\&./'
      echo ".fi"
    fi
  done
  echo "[FILES]"
  echo "/etc/burstscope/burstscope.yaml: the configuration the systemd units read;"
  echo "annotated examples in /usr/share/doc/burstscope/examples."
  echo ".br"
  echo "/usr/share/burstscope: dashboards, alert rules, deployment examples and the bundled training trace."
  echo "[SEE ALSO]"
  echo "/usr/share/doc/burstscope/README.md and the documents beside it (operations.md, runbook.md, SPEC.md)."
} >"$include"
"$HELP2MAN" --no-info --no-discard-stderr --section 1 \
  --name "measure bursts of ML training traffic on a mirror port" --include "$include" --output "$OUT" "$BS"
