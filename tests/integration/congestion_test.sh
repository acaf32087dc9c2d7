#!/usr/bin/env bash
# Congestion evidence end to end on real training traffic (docs/evidence.md, docs/testbed.md): a 4-rank PyTorch
# DDP ring job on the testbed with a bottleneck toward worker 3 (`testbed up --bottleneck 3:RATE`: a tbf queue on
# the switch's port toward it, which drops the excess of every burst). burstscope runs live on the mirror
# (AF_XDP), tcpdump records a second SPAN port of the same switch. Checked:
#   - the switch dropped and TCP resent (the kernel's qdisc counter, tshark);
#   - burstscope's TCP retransmissions (live and `analyze` of tcpdump's file) within 5% of tshark's
#     tcp.analysis.retransmission on the same frames;
#   - per destination, analyze's retransmissions are tshark's (live: resent + out of order, against analyze's, within
#     5% of the job's resends), and the bottlenecked worker received some;
#   - analyze's microbursts and congesting bursts are those computed from scratch (congesting_bursts.py) from
#     tshark's frames and retransmissions, with evidence.after at 5 Q/R: TCP learns of a drop one round trip
#     later, and a full queue of Q bytes at rate R makes the round trip at least Q/R (TCP repairs a burst's
#     losses over several round trips: RACK-TLP's probe timeout is 2 SRTT). How many retransmissions fall in
#     those windows is TCP's timing (a slower machine resends later): printed, not asserted;
#   - without the bottleneck, the same job: the switch drops nothing, and `analyze` counts what tshark counts
#     (a few, not zero: on a loaded 2-core machine an ACK can come later than a tail-loss probe or the
#     retransmission timer, and TCP resends what was not lost; the count is printed, not bounded); live, the
#     same retransmitted + out-of-order segments (their split turns on timing, see the check).
# TAP output for meson. Needs root, Debian's python3-torch, tshark, tcpdump, ethtool (scripts/setup.sh).
# usage: congestion_test.sh BURSTSCOPE SOURCE_ROOT
set -u
BS=$1 ROOT=$2
TB=$ROOT/tools/testbed/testbed
PY=/usr/bin/python3
TMP=$(mktemp -d)
NAME=c$(printf %x $$) # unique per run; interface names stay within 15 characters
WORKER=3 RATE=200mbit # the bottleneck: the switch's port toward worker 3 drains at 200 Mbit/s
STEPS=8
# shellcheck source=tests/integration/tap.sh
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/integration/testbed_lib.sh
. "$(dirname "$0")/testbed_lib.sh"
trap 'cleanup; "$TB" down "$NAME" >/dev/null 2>&1' EXIT
trap "exit 1" TERM INT
bail() {
  echo "Bail out! $*"
  exit 1
}

if [ "$(id -u)" != 0 ]; then
  echo "1..0 # SKIP needs root (network namespaces, tc, BPF)"
  exit 0
fi
"$PY" -c 'import torch.distributed' 2>/dev/null || bail "Debian's python3-torch is missing (scripts/setup.sh installs it)"
for t in tshark tcpdump ethtool; do
  command -v "$t" >/dev/null || bail "$t is missing (scripts/setup.sh installs it)"
done
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

# tshark's retransmissions in a capture, each as "destination address" on a line.
tshark_retx() { tshark -n -r "$1" -Y tcp.analysis.retransmission -T fields -e ip.dst 2>/dev/null; }
# The testbed's bottleneck queue, dropped frames so far (the tbf qdisc on the switch's port).
qdisc_dropped() {
  ip netns exec "bstb-$NAME-sw" tc -s qdisc show dev "${NAME}p$WORKER" | awk '/dropped/ { gsub(",", ""); print $7; exit }'
}
# One job on testbed $NAME with burstscope live on the SPAN port and tcpdump on the tap: LABEL.out (the
# live JSON), LABEL.pcap, LABEL.json (the job's metadata), LABEL.analyze.json.
run_job() { # LABEL
  local label=$1 bs td rc
  start_span "$label.bs" "burstscope run: ${NAME}m1 (" "$BS" run --listen none --json -q --top-k 100 --link-gbps 10 \
    --xdp-mode skb -c "$TMP/run.yaml" --xdp "${NAME}m1" || bail "burstscope did not start"
  bs=$pid
  start_span "$label.tcpdump" "listening on" tcpdump -Z root -n -i "${NAME}t1" -s 96 --time-stamp-precision=nano \
    -w "$TMP/$label.pcap" || bail "tcpdump did not start"
  td=$pid
  check "$label: ring DDP job, 4 ranks, $STEPS steps, every rank exits 0" \
    "$TB" run "$NAME" --out "$TMP/$label" --timeout 240 ddp-ring --steps "$STEPS" --width 192
  check "$label: the mirror goes quiet after the job (bounded)" "$TB" quiet "$NAME" --for 1 --timeout 60
  stop "$bs" TERM
  rc=$?
  check "$label: burstscope exits 0 on SIGTERM" test "$rc" = 0
  stop "$td" INT
  rc=$?
  check "$label: tcpdump exits 0 and dropped nothing" sh -c \
    "test $rc = 0 && grep -q '^0 packets dropped by kernel' '$TMP/$label.tcpdump.err'"
  "$BS" analyze --json --top-k 100 --link-gbps 10 --evidence-after "$AFTER" "$TMP/$label.pcap" \
    >"$TMP/$label.analyze.json" 2>"$TMP/$label.analyze.err"
  check "$label: analyze reads tcpdump's file" test -s "$TMP/$label.analyze.json"
  tshark_retx "$TMP/$label.pcap" >"$TMP/$label.retx"
}

# 1. With the bottleneck.
"$TB" up --workers 4 --tap --bottleneck "$WORKER:$RATE" --name "$NAME" >"$TMP/up.out" 2>"$TMP/up.err" ||
  { sed 's/^/# /' "$TMP/up.err"; bail "testbed up failed"; }
check "testbed up with a bottleneck toward worker $WORKER ($(tail -1 "$TMP/up.err"))" true
# evidence.after = 5 Q/R, from the queue the testbed made (its testbed.json says the bytes and the rate).
AFTER=$("$PY" - "${TESTBED_STATE_DIR:-/run/burstscope-testbed}/$NAME/testbed.json" <<'PY'
import json, re, sys
b = json.load(open(sys.argv[1]))["bottleneck"][0]
n, unit = re.fullmatch(r"(\d+)([kmg]?bit)", b["rate"]).groups()
rate = int(n) * {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[unit] / 8  # bytes per second
print(f"{round(5 * b['limit_bytes'] / rate * 1e6)}us")
PY
) || bail "no bottleneck in the testbed's description"
printf 'evidence:\n  after: %s\n' "$AFTER" >"$TMP/run.yaml"
echo "# evidence.after = 5 x the bottleneck queue's drain time = $AFTER"
run_job bn
DROPPED=$(qdisc_dropped)
check "bn: the bottleneck dropped frames (tbf: ${DROPPED:-?} dropped) and TCP resent at least 20 segments (tshark: $(wc -l <"$TMP/bn.retx"))" \
  sh -c "test '${DROPPED:-0}' -gt 0 && test $(wc -l <"$TMP/bn.retx") -ge 20"

check "bn: TCP retransmissions, burstscope live and analyze of tcpdump's file, within 5% of tshark's on the same frames" \
  "$PY" - "$TMP/bn.bs.out" "$TMP/bn.analyze.json" "$TMP/bn.retx" <<'PY'
import json, sys
live = json.load(open(sys.argv[1]))["ports"][0]
off = json.load(open(sys.argv[2]))
ts = len(open(sys.argv[3]).read().split())
a, b = live["evidence"]["totals"]["tcp_retransmissions"], off["evidence"]["totals"]["tcp_retransmissions"]
print(f"tshark {ts}, burstscope live {a}, analyze {b}; live packets {live['packets']}, file {off['packets']}, "
      f"ledger balanced {live['ledger']['balanced']}")
sys.exit(0 if ts > 0 and abs(a - ts) <= 0.05 * ts and abs(b - ts) <= 0.05 * ts and live["ledger"]["balanced"] else 1)
PY

# Which destinations TCP resent toward, and how many of its resends fell near a burst, are TCP's doing (a slower
# or busier machine stalls receivers past a sender's timers and resends later and elsewhere): those are printed.
# What is asserted is what burstscope computes from the same frames: `analyze` of tcpdump's file (tcpdump's
# timestamps, tshark's frames) per destination within 5% or 2 of tshark. Live, burstscope's own timestamps decide
# whether a segment below the highest one seen is a retransmission or out of order (see the plain case below; CI's
# AddressSanitizer run failed the older check that held live's retransmissions alone), so live is held per
# destination to the sum of the two against analyze's. And live's SPAN port is not tcpdump's: each mirrored copy
# reaches its port through the backlog of the CPU that forwarded it, so on a loaded machine a data segment and the
# ACK for it (forwarded on other CPUs) can cross on the way to one port and not the other, and a data segment
# seen after its own ACK is, by Wireshark's rule, a spurious retransmission. CI saw it: live counted 61 toward
# one worker where analyze of tcpdump's file counted 56, both captures holding the same 26,359 frames. Those
# inversions fall over the whole job, not in proportion to one destination's resends, so a destination's count
# is held to within 5% of the job's resends (or 2), plus the frames the captures differ by.
check "bn: burstscope's retransmissions per destination are tshark's (within 5% or 2; live: resent + out of order, within 5% of all), and the bottlenecked worker received some" \
  "$PY" - "$TMP/bn.bs.out" "$TMP/bn.analyze.json" "$TMP/bn.retx" "$TMP/bn.json" "$WORKER" <<'PY'
import collections, json, sys
live_port, off_port = json.load(open(sys.argv[1]))["ports"][0], json.load(open(sys.argv[2]))
live, off = live_port["evidence"], off_port["evidence"]
tshark = collections.Counter(open(sys.argv[3]).read().split())
# The two captures are two SPAN ports stopped one after the other: a frame one has and the other has not (live
# fell behind, or a resend came after tcpdump stopped: CI once saw live count 6 resent toward a worker where
# tcpdump's file held 1, live having more frames) moves a destination's count by at most one: allowed.
missed = abs(off_port["packets"] - live_port["packets"])
job = json.load(open(sys.argv[4]))["jobs"][0]
ip = [r["ip"] for r in job["ranks"] if r["host"] == f"h{sys.argv[5]}"][0]
def toward(ev, keys):
    c = collections.Counter()
    for p in ev["pairs"]:
        c[p["dst"]] += sum(p[k] for k in keys)
    return c
def near(a, b, slack=0, of_total=False):
    total = sum(b.values())
    return all(abs(a[d] - b[d]) <= max(2, 0.05 * (total if of_total else b[d])) + slack for d in set(a) | set(b))
resent, late = ["tcp_retransmissions"], ["tcp_retransmissions", "tcp_out_of_order"]
off_resent, off_both, live_both = toward(off, resent), toward(off, late), toward(live, late)
print(f"tshark: {dict(tshark)}\nanalyze: {dict(off_resent)}\nlive resent: {dict(toward(live, resent))}")
print(f"resent + out of order: live {dict(live_both)}, analyze {dict(off_both)}; frames: live {live_port['packets']}, "
      f"tcpdump's file {off_port['packets']}")
checks = {"the bottlenecked worker received resent segments (tshark)": tshark[ip] > 0,
          "analyze per destination within 5% or 2 of tshark": near(off_resent, tshark),
          "live resent + out of order per destination within 5% of the job's (or 2; + the frames the captures differ "
          "by) of analyze's": near(live_both, off_both, missed, of_total=True)}
for what, ok in checks.items():
    print(("ok: " if ok else "FAILED: ") + what)
print(f"measured: {tshark[ip]} of {sum(tshark.values())} resent toward the bottlenecked worker {ip}")
sys.exit(0 if all(checks.values()) else 1)
PY

# The microbursts and their congesting verdicts from scratch (tests/integration/congesting_bursts.py: the SPEC's
# definitions over tshark's frames and retransmissions) against analyze's; the live run's congesting bursts are
# printed beside them (its timestamps are its own, so its bursts may differ).
echo "# live: $("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1]))["ports"][0]["evidence"]["microbursts"]; print(m["congesting"], "of", m["count"], "microbursts congesting")' "$TMP/bn.bs.out")"
check "bn: analyze's microbursts and congesting bursts are the ones computed from scratch from tshark's frames and retransmissions" \
  "$PY" "$ROOT/tests/integration/congesting_bursts.py" "$TMP/bn.pcap" "$TMP/bn.analyze.json"

# 2. The same job without the bottleneck (a fresh testbed, the same options otherwise).
BN_RETX=$(wc -l <"$TMP/bn.retx")
"$TB" down "$NAME" >/dev/null 2>&1
"$TB" up --workers 4 --tap --name "$NAME" >"$TMP/up.out" 2>"$TMP/up.err" ||
  { sed 's/^/# /' "$TMP/up.err"; bail "testbed up failed"; }
run_job plain
switch_dropped() { # frames the switch's ports dropped on the way out to the workers
  local i
  for i in 0 1 2 3; do ip netns exec "bstb-$NAME-sw" cat "/sys/class/net/${NAME}p$i/statistics/tx_dropped"; done |
    awk '{ s += $1 } END { print s + 0 }'
}
check "plain: the switch dropped nothing on the way to the workers (veth TX drops: $(switch_dropped))" \
  test "$(switch_dropped)" = 0
check "plain: analyze of tcpdump's file counts the retransmissions tshark counts; burstscope live saw the same resent and late segments (within 5% or 2)" \
  "$PY" - "$TMP/plain.bs.out" "$TMP/plain.analyze.json" "$TMP/plain.retx" "$BN_RETX" "$TMP/plain.pcap" <<'PY'
import json, subprocess, sys
live = json.load(open(sys.argv[1]))["ports"][0]["evidence"]["totals"]
off = json.load(open(sys.argv[2]))["evidence"]["totals"]
ts, bn = len(open(sys.argv[3]).read().split()), int(sys.argv[4])
spurious = subprocess.run(["tshark", "-n", "-r", sys.argv[5], "-Y", "tcp.analysis.spurious_retransmission"],
                          capture_output=True, text=True).stdout.count("\n")
# Nothing was lost, yet TCP may resend: on a loaded 2-core machine an ACK can come later than a tail-loss probe
# or even the retransmission timer (tshark calls those whose data was acknowledged before spurious).
print(f"tshark {ts} ({spurious} spurious), burstscope live {live['tcp_retransmissions']}, analyze "
      f"{off['tcp_retransmissions']}; with the bottleneck {bn}")
# Live timestamps are burstscope's, the file's tcpdump's: whether a segment below the highest one seen is a
# retransmission or out of order turns on the first round trip, timed differently by the two (on a loaded CI
# machine, 114 against 99 once, with nothing lost), so live is held to the sum of the two, which timing
# cannot move: every segment the flow had already carried or filled late. The bottleneck case above holds
# live's retransmissions themselves within 5%.
both = lambda e: e["tcp_retransmissions"] + e["tcp_out_of_order"]
print(f"retransmitted + out of order: live {both(live)}, analyze {both(off)}")
# analyze against tshark on the same file: the same count. CI saw tshark 3 (1 spurious) against analyze 2 once, in a
# run not reproduced since (cause not found): a difference prints tshark's segments, for the next look.
if off["tcp_retransmissions"] != ts:
    print(subprocess.run(["tshark", "-n", "-r", sys.argv[5], "-Y", "tcp.analysis.retransmission", "-T", "fields",
                          "-e", "frame.number", "-e", "frame.time_epoch", "-e", "ip.src", "-e", "tcp.srcport", "-e",
                          "ip.dst", "-e", "tcp.dstport", "-e", "tcp.seq_raw", "-e", "tcp.len", "-e", "tcp.flags.str",
                          "-e", "_ws.expert.message"], capture_output=True, text=True).stdout)
sys.exit(0 if off["tcp_retransmissions"] == ts and abs(both(live) - both(off)) <= max(2, 0.05 * both(off)) else 1)
PY
"$TB" down "$NAME" 2>/dev/null
check "testbed down removes every namespace of the testbed" sh -c "! ip netns list | grep -q '^bstb-$NAME-'"

echo "1..$n"
exit $((failed > 0))
