# shellcheck shell=bash
# TAP helpers shared by the integration scripts that source it (after setting TMP to their scratch directory).
#   check "description" command...   one TAP line; the command's output follows as comments when it fails
#                                     (on stdout, and on stderr, which meson's --print-errorlogs shows)
#                                     (and its first lines when CHECK_SHOW_PASS=1)
#   wait_for SECONDS command...       polls (every WAIT_INTERVAL, default 0.2 s) until the command succeeds; the last try's output shows
# Background processes the script starts go into PIDS: they are killed, and TMP removed, when it exits.
# A script ends with `echo "1..$n"; exit $((failed > 0))`.
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
n=0 failed=0
check() {
  local what=$1
  shift
  n=$((n + 1))
  if "$@" >"$TMP/check.out" 2>&1; then
    echo "ok $n - $what"
    [ "${CHECK_SHOW_PASS:-0}" = 1 ] && sed 's/^/# /' "$TMP/check.out" | head -10
  else
    echo "not ok $n - $what"
    sed 's/^/# /' "$TMP/check.out" | head -40
    # meson shows a failing TAP test's stderr, not its stdout: the reason goes there too, for CI's log.
    { echo "not ok $n - $what"; sed 's/^/# /' "$TMP/check.out" | head -40; } >&2
    failed=$((failed + 1))
  fi
  return 0
}
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      "$@"
      return 1
    fi
    sleep "${WAIT_INTERVAL:-0.2}"
  done
}
