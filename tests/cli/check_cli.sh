#!/usr/bin/env bash
# The command line's own texts, byte for byte (TAP, meson suite unit): `burstscope --help`, each command's
# --help and the usage and flag errors that src/app/ writes, with their exit codes, against the golden files in
# tests/cli/golden/ (one per case: the exit code, then stdout, then stderr). A change to the help or to an
# error's words is a change to these files, made on purpose:
#   tests/cli/check_cli.sh BURSTSCOPE SOURCE_ROOT --update
# The binary runs from the source root (the bundled trace by a relative path), as "burstscope" (the usage line
# names argv[0]), with stdin from /dev/null.
# usage: check_cli.sh BURSTSCOPE SOURCE_ROOT [--update]
set -u
BS=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$2" && pwd)
UPDATE=${3:-}
GOLDEN=$ROOT/tests/cli/golden
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export LC_ALL=C
n=0 failed=0

T=data/ddp-gloo-w3-3steps.pcap
# name|arguments (split on spaces)
cases=(
  "help|--help"
  "analyze_help|analyze --help"
  "report_help|report --help"
  "compare_help|compare --help"
  "run_help|run --help"
  "whatif_help|whatif --help"
  "hash_password_help|hash-password --help"
  "no_command|"
  "unknown_command|frobnicate"
  "unknown_flag|analyze --bogus $T"
  "analyze_no_files|analyze"
  "analyze_missing_file|analyze /nonexistent/burstscope-cli-test.pcap"
  "analyze_not_a_number|analyze --workers x $T"
  "analyze_bad_list|analyze --scales-us 1,x $T"
  "analyze_bad_vlan_tags|analyze --mirror-vlan-tags 9 $T"
  "analyze_bad_dedup|analyze --dedup-window 0 $T"
  "analyze_bad_evidence|analyze --evidence-after soon $T"
  "analyze_bad_local_net|analyze --local-net foo $T"
  "analyze_bad_reorder|analyze --reorder-us -1 $T"
  "report_no_out|report $T"
  "compare_max_k|compare --max-k 1 $T"
  "run_no_port|run --check-config"
  "run_check_xdp|run --check-config --xdp lo"
  "run_check_dpdk|run --check-config --port 0 --vdev net_null0 --listen none -- -l 0-1"
  "run_two_backends|run --check-config --xdp lo --port 0"
  "run_eal_with_xdp|run --check-config --xdp lo -- -l 0"
  "run_vdev_before_dashes|run --check-config --port 0 --vdev -- -l 0"
  "run_bad_label|run --check-config --xdp lo --label foo"
  "run_bad_xdp_mode|run --check-config --xdp lo --xdp-mode bogus"
  "run_bad_timestamps|run --check-config --port 0 --timestamps kernel"
  "run_bad_interval|run --check-config --port 0 --interval 5x"
  "whatif_no_jobs|whatif"
  "whatif_bad_rate|whatif $T --rate 7Q"
  "whatif_bad_grid|whatif $T --search-grid 0"
  "whatif_empty_scales|whatif $T --scales-us ,"
  "hash_password_empty|hash-password"
)

# One case's result as its golden file holds it.
run_case() {
  local args=$1
  # shellcheck disable=SC2086  # the arguments are words split on spaces
  (cd "$ROOT" && exec -a burstscope "$BS" $args </dev/null >"$TMP/stdout" 2>"$TMP/stderr")
  local code=$?
  printf 'exit %d\n--- stdout\n' "$code"
  cat "$TMP/stdout"
  printf -- '--- stderr\n'
  cat "$TMP/stderr"
}

for c in "${cases[@]}"; do
  name=${c%%|*} args=${c#*|}
  n=$((n + 1))
  run_case "$args" >"$TMP/$name"
  if [ "$UPDATE" = --update ]; then
    mkdir -p "$GOLDEN"
    cp "$TMP/$name" "$GOLDEN/$name.txt"
    echo "ok $n - burstscope $args: written to tests/cli/golden/$name.txt"
  elif cmp -s "$GOLDEN/$name.txt" "$TMP/$name"; then
    echo "ok $n - burstscope $args: as tests/cli/golden/$name.txt"
  else
    echo "not ok $n - burstscope $args: differs from tests/cli/golden/$name.txt"
    diff -u "$GOLDEN/$name.txt" "$TMP/$name" 2>&1 | sed 's/^/# /' | head -40
    failed=$((failed + 1))
  fi
done

# --version names the revision built from, which no golden file can: its form only.
n=$((n + 1))
version=$("$BS" --version)
if [[ $version =~ ^burstscope\ [0-9][0-9.]*\ \(revision\ [^\ ]+\)$ ]]; then
  echo "ok $n - burstscope --version: $version"
else
  echo "not ok $n - burstscope --version: '$version' is not 'burstscope VERSION (revision REV)'"
  failed=$((failed + 1))
fi

echo "1..$n"
[ "$failed" -eq 0 ]
