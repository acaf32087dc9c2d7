# shellcheck shell=bash
# Helpers of the scripts that run burstscope, tcpdump and jobs on a testbed (tools/testbed): testbed_test.sh and
# congestion_test.sh source it. They use the caller's NAME (the testbed), TMP (scratch) and PIDS (killed at exit).
#   start_span LABEL PATTERN CMD...   starts CMD in the testbed's span namespace, its stdout in TMP/LABEL.out and
#                                     stderr in TMP/LABEL.err, and waits (30 s at most) for PATTERN in its
#                                     stderr; sets $pid
#   stop PID SIGNAL                   signals and waits (60 s at most); returns the process's exit status
start_span() {
  local name=$1 pattern=$2
  shift 2
  # Not through a shell function: a background function is a subshell, and signals must reach the process.
  ip netns exec "bstb-$NAME-span" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
  pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 300); do
    grep -q -- "$pattern" "$TMP/$name.err" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  sed 's/^/# /' "$TMP/$name.err"
  return 1
}
stop() {
  local p=$1
  kill -"$2" "$p" 2>/dev/null
  for _ in $(seq 1 600); do
    kill -0 "$p" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$p" 2>/dev/null && { kill -KILL "$p"; echo "# $p did not exit within 60 s"; }
  wait "$p"
}
