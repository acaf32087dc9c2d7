# shellcheck shell=bash
# Sourced by afxdp_test.sh and dpdk_test.sh: freezes chosen threads of a process alone, with the cgroup v1
# freezer (their thread ids in a cgroup's `tasks`; the process's other threads run on), for the stalled-RX-queue
# tests (docs/live-capture.md "Capture faults").
FREEZER=/sys/fs/cgroup/freezer
freezer_ready() { # the freezer hierarchy is mounted (mounted here if it is not): else fails, saying why
  [ -d "$FREEZER" ] && return 0
  mkdir -p "$FREEZER" && mount -t cgroup -o freezer none "$FREEZER" 2>/dev/null && return 0
  echo "needs the cgroup v1 freezer at $FREEZER (not mounted, cannot mount it)"
  return 1
}
freeze() { # CGROUP TID...: the threads into a new cgroup of that name, frozen (bounded wait for FROZEN)
  local cg=$FREEZER/$1 t
  shift
  mkdir -p "$cg" || return 1
  for t in "$@"; do echo "$t" >"$cg/tasks" || return 1; done
  echo FROZEN >"$cg/freezer.state"
  for _ in $(seq 1 100); do grep -q '^FROZEN' "$cg/freezer.state" && return 0; sleep 0.1; done
  echo "the threads did not freeze: $(cat "$cg/freezer.state")"
  return 1
}
thaw() { # CGROUP: thawed, its threads back in the root cgroup, the cgroup removed
  local cg=$FREEZER/$1 t
  echo THAWED >"$cg/freezer.state"
  for t in $(cat "$cg/tasks"); do echo "$t" >"$FREEZER/tasks"; done 2>/dev/null
  rmdir "$cg"
}
