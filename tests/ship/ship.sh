# Shared by the ship suite's scripts (sourced): TAP helpers, the JSON comparison with the build tree, and a
# DPDK capture inside an installed root. Each script sets TMP before sourcing and calls ship_cleanup on exit.
n=0 failed=0
SHIP_MOUNTS=()
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local name=$1; shift; if "$@" >"$TMP/out" 2>&1; then ok "$name"; else notok "$name"; sed 's/^/# /' "$TMP/out" | tail -40; fi; }
finish() { echo "1..$n"; [ "$failed" -eq 0 ]; exit; }
ship_cleanup() { for m in "${SHIP_MOUNTS[@]}"; do umount -R "$m" 2>/dev/null; done; }

# same_analysis BUILD.json OTHER.json: equal but for the file's path and the time the analysis took.
same_analysis() {
  python3 - "$1" "$2" <<'PYEOF'
import json, sys
def strip(d):
    d.pop('files')
    for f in d['inputs']['files']:
        f.pop('path')
    d['training'].pop('analysis_ms')
    return d
a, b = (strip(json.load(open(p))) for p in sys.argv[1:3])
sys.exit(0 if a == b else 1)
PYEOF
}

# check_null_capture WHAT ROOT BINARY: in ROOT (with /proc, /sys and /dev bound in), BINARY runs DPDK's EAL on a
# null device for a second and ends with a balanced ledger.
check_null_capture() {
  local what=$1 root=$2 bin=$3 m
  for m in proc sys dev; do
    mkdir -p "$root/$m"
    if [ "$m" = proc ]; then mount -t proc proc "$root/proc"; else mount --rbind "/$m" "$root/$m"; fi
    SHIP_MOUNTS+=("$root/$m")
  done
  check "$what: burstscope run on a DPDK null device for 1 s exits 0 with a balanced ledger" sh -c \
    "timeout 60 chroot '$root' $bin run --listen none -q --port net_null0 --vdev net_null0 --duration 1 -- -l 0-1 --no-huge -m 512 --no-pci --file-prefix bs_ship_$$ 2>&1 | tee /dev/stderr | grep -q '^  balanced'"
}
