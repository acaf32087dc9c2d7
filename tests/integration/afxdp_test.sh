#!/usr/bin/env bash
# End-to-end checks of `burstscope run --xdp`: our XDP program and AF_XDP sockets on a veth pair across two
# network namespaces made here, fed by tcpreplay from the peer namespace at a bounded rate. The ledger must
# close exactly against what tcpreplay sent; per-flow bytes must equal `analyze` of the same file; no XDP
# program may stay on the interface after any exit (idle, SIGTERM); a stale one is replaced, a foreign one
# is refused. TAP output for meson. Needs root (namespaces, BPF).
# usage: afxdp_test.sh BURSTSCOPE WRAP_TRACE SOURCE_ROOT
set -u
BS=$1 WRAP=$2 ROOT=$3
TRACE=$ROOT/data/ddp-gloo-w3-3steps.pcap
TMP=$(mktemp -d)
NS_RX=bsx_rx_$$ NS_TX=bsx_tx_$$
V0=bsx0_$$ V1=bsx1_$$
cleanup() {
  ip netns del "$NS_RX" 2>/dev/null
  ip netns del "$NS_TX" 2>/dev/null
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap "exit 1" TERM INT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local name=$1; shift; if "$@" >"$TMP/out" 2>&1; then ok "$name"; else notok "$name"; sed 's/^/# /' "$TMP/out"; fi; }
json() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }
rx() { ip netns exec "$NS_RX" "$@"; }
tx() { ip netns exec "$NS_TX" "$@"; }
xdp_progs() { rx ip -d link show "$V1" | grep -c "prog/xdp"; }

if [ "$(id -u)" != 0 ]; then
  echo "1..0 # SKIP needs root (network namespaces, BPF)"
  exit 0
fi
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

ip netns add "$NS_RX" && ip netns add "$NS_TX"
# Two queues each way: in native mode veth delivers a frame on the RX queue matching the peer's TX queue.
ip link add "$V0" numtxqueues 2 numrxqueues 2 type veth peer name "$V1" numtxqueues 2 numrxqueues 2
ip link set "$V0" netns "$NS_TX" && ip link set "$V1" netns "$NS_RX"
for ns in "$NS_TX" "$NS_RX"; do
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
tx ip link set "$V0" up
rx ip link set "$V1" up

# Starts burstscope in the RX namespace (its arguments, or a whole setpriv command line), waits for its start
# line; sets $pid. Metrics off unless LISTEN says where.
start() {
  local name=$1; shift
  # Not through rx(): a background function is a subshell, and signals must reach burstscope itself
  # (ip netns exec execs it, so $! is burstscope's pid).
  if [ "$1" = setpriv ]; then
    ip netns exec "$NS_RX" "$@" >"$TMP/$name.json" 2>"$TMP/$name.err" &
  else
    ip netns exec "$NS_RX" "$BS" run --listen "${LISTEN:-none}" --json -q "$@" >"$TMP/$name.json" 2>"$TMP/$name.err" &
  fi
  pid=$!
  for _ in $(seq 1 600); do
    grep -q "burstscope run: $V1 (" "$TMP/$name.err" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
# Waits (bounded: N tenths of a second) for a line of the log.
wait_for() {  # SECONDS COMMAND...: polls COMMAND until it succeeds, at most SECONDS
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do [ $SECONDS -ge $deadline ] && return 1; sleep 0.1; done
}
wait_line() {  # PATTERN FILE N
  for _ in $(seq 1 "$3"); do
    grep -q -- "$1" "$2" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
# The distinct effective and permitted capability sets of every thread of $1 (least privilege after set-up).
thread_caps() {
  for t in /proc/"$1"/task/*; do awk '/^Cap(Eff|Prm)/ {printf "%s ", $2} END {print ""}' "$t/status"; done | sort -u
}
# Replays a file into the peer; prints how many packets tcpreplay says it sent.
send() {  # tcpreplay options..., the file last
  tx tcpreplay -i "$V0" "$@" >"$TMP/tcpreplay.out" 2>&1
  grep -o 'Actual: [0-9]*' "$TMP/tcpreplay.out" | grep -o '[0-9]*'
}
ledger_closes() {  # JSON SENT: seen = sent = received + drops before RX + filtered, and the ledger balanced
  python3 - "$1" "$2" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["ports"][0]
d, l, sent = p["device"], p["ledger"], int(sys.argv[2])
before = sum(d["drop_stages"].values())
print("sent", sent, "seen", d["seen"], "received", l["received"], "stages", d["drop_stages"], "filtered",
      d["filtered"], "ring", l["dropped"]["ring_full"], "analysed", l["analysed"])
ok = d["seen"] == sent == l["received"] + before + d["filtered"] and l["received"] == l["analysed"] + \
     l["dropped"]["ring_full"] and l["balanced"]
sys.exit(0 if ok else 1)
PY
}

# 1. The bundled DDP trace, frames padded to their wire length, at 20 kpps into queue 0 and 1, native mode.
"$WRAP" pad-usec "$TRACE" "$TMP/pad.pcap"
"$BS" analyze --json --top-k 100 "$TMP/pad.pcap" >"$TMP/pad-analyze.json"
# The ThreadSanitizer build's RX threads run many times slower: at 20 kpps one fell behind its RX ring on a slow
# machine (7,439 frames lost, counted). There each socket gets rings and frames for the whole trace (38,837
# frames), so that no frame can be lost however slowly the RX threads take them, and every check below still holds
# the capture to every frame; the run ends once no packet has come for 3 s, so it waits for the last one taken.
trace_args=()
if ldd "$BS" | grep -q libtsan; then
  printf 'af-xdp:\n  frames: 65536\n  frame-size: 2048\n  rx-ring: 65536\n' >"$TMP/whole-trace.yaml"
  trace_args=(--config "$TMP/whole-trace.yaml")
fi
start trace --xdp "$V1" --top-k 100 --idle-exit 3s "${trace_args[@]}"
check "trace: burstscope starts (native mode, copy)" grep -q "XDP native mode, 2 AF_XDP sockets, copy mode" "$TMP/trace.err"
check "trace: the program is attached while it runs" test "$(xdp_progs)" = 1
check "trace: after set-up every thread holds only CAP_NET_ADMIN (root run)" test "$(thread_caps "$pid")" = \
  "0000000000001000 0000000000001000 "
sent=$(send --pps 20000 "$TMP/pad.pcap")
wait $pid
rc=$?
check "trace: exits 0 after the idle timeout" test "$rc" = 0
check "trace: tcpreplay sent every frame of the file" test "$sent" = "$(json "$TMP/pad-analyze.json" "d['packets']")"
check "trace: ledger closes exactly: seen = sent = received + dropped before RX + filtered" \
  ledger_closes "$TMP/trace.json" "$sent"
check "trace: packets and bytes (wire lengths) equal analyze of the file" test "$(json "$TMP/trace.json" \
  "(d['ports'][0]['packets'], d['ports'][0]['bytes'])")" = "$(json "$TMP/pad-analyze.json" "(d['packets'], d['bytes'])")"
check "trace: long frames were cut to the snap length in the kernel" test "$(json "$TMP/trace.json" \
  "d['ports'][0]['device']['extra']['xdp_truncated'] > 0")" = True
check "trace: per-flow bytes equal analyze's" test "$(json "$TMP/trace.json" \
  "sorted((f['key'], f['packets'], f['bytes']) for f in d['ports'][0]['flows']['top'])")" = \
  "$(json "$TMP/pad-analyze.json" "sorted((f['key'], f['packets'], f['bytes']) for f in d['flows']['top'])")"
check "trace: TCP evidence equals analyze's (data segments; retransmitted + out-of-order, whose split depends on pace)" \
  test "$(json "$TMP/trace.json" "(lambda t: (t['tcp_data_segments'], t['tcp_retransmissions'] + t['tcp_out_of_order']))(d['ports'][0]['evidence']['totals'])")" = \
  "$(json "$TMP/pad-analyze.json" "(lambda t: (t['tcp_data_segments'], t['tcp_retransmissions'] + t['tcp_out_of_order']))(d['evidence']['totals'])")"
check "trace: per-pair bytes equal analyze's" test "$(json "$TMP/trace.json" \
  "sorted((f['key'], f['bytes']) for f in d['ports'][0]['pairs']['top'])")" = \
  "$(json "$TMP/pad-analyze.json" "sorted((f['key'], f['bytes']) for f in d['pairs']['top'])")"
check "trace: timestamps from the kernel clock at XDP time" test "$(json "$TMP/trace.json" "d['timestamps']['source']")" = kernel
check "trace: no XDP program left on the interface" test "$(xdp_progs)" = 0

# 2. Two queues: 64 flows spread over both RX queues (native mode), each frame measured once.
python3 "$ROOT/tests/integration/make_flows.py" "$TMP/flows.pcap" 64 40
"$BS" analyze --json --top-k 64 "$TMP/flows.pcap" >"$TMP/flows-analyze.json"
# With the flight recorder on: SIGUSR2 once the frames are sent asks for a file around the newest frame the
# sockets have taken; its window (30 s each way) holds every frame sent however far behind a loaded machine's
# RX threads are when the signal comes, and the file is written at the idle exit at the latest.
printf 'flight-recorder:\n  enabled: true\n  before: 30s\n  after: 30s\n' >"$TMP/flight.yaml"
# SIGUSR2 is honoured once the recorder's rings are allocated (its start-up line, which comes after the capture
# line start() waits for: under a sanitizer on a loaded machine, seconds later), and writes a file once a frame
# has been captured: wait for the first, then signal until the log says a file is to come (bounded).
start flows --xdp "$V1" --top-k 64 --idle-exit 3s --config "$TMP/flight.yaml" --flight-recorder "$TMP/flight"
wait_line "burstscope run: flight recorder into" "$TMP/flows.err" 600
sent=$(send --pps 5000 "$TMP/flows.pcap")
for _ in $(seq 1 50); do
  kill -0 "$pid" 2>/dev/null || break
  before=$(grep -c "flight recorder (SIGUSR2)" "$TMP/flows.err")
  kill -USR2 "$pid"
  for _ in $(seq 1 100); do
    [ "$(grep -c "flight recorder (SIGUSR2)" "$TMP/flows.err")" -gt "$before" ] && break
    sleep 0.1
  done
  grep -q "flight recorder (SIGUSR2): $V1: /" "$TMP/flows.err" && break
  sleep 0.2
done
check "two queues: SIGUSR2 is answered in the log with the file to come" grep "flight recorder (SIGUSR2): $V1: /" "$TMP/flows.err"
wait $pid
check "two queues: exits 0" test $? = 0
flight=$(ls "$TMP"/flight/burstscope-*-on_demand.pcapng 2>/dev/null | head -1)
check "two queues: SIGUSR2 wrote one flight recorder file" test "$(ls "$TMP/flight" | wc -l)" = 1 -a -n "$flight"
check "two queues: it holds every frame sent (both queues merged), as analyze and tshark read it" test \
  "$("$BS" analyze --json "$flight" | python3 -c 'import json,sys; print(json.load(sys.stdin)["packets"])') $(tshark -r "$flight" 2>/dev/null | wc -l)" = "$sent $sent"
check "two queues: both sockets carried traffic and they sum to the total" test "$(json "$TMP/flows.json" \
  "(lambda p: len(p['queues']) == 2 and all(q['received'] > 0 for q in p['queues']) and sum(q['received'] for q in p['queues']) == p['ledger']['received'])(d['ports'][0])")" = True
check "two queues: ledger closes exactly" ledger_closes "$TMP/flows.json" "$sent"
check "two queues: per-flow bytes equal analyze's" test "$(json "$TMP/flows.json" \
  "sorted((f['key'], f['bytes']) for f in d['ports'][0]['flows']['top'])")" = \
  "$(json "$TMP/flows-analyze.json" "sorted((f['key'], f['bytes']) for f in d['flows']['top'])")"

# 2b. NIC timestamps: the device-bound program with the XDP RX-timestamp kfunc loads on veth in native mode;
#     veth has no hardware clock, so every frame falls back to the kernel clock, counted.
start nic --xdp "$V1" --timestamps nic --idle-exit 3s
check "NIC timestamps: the device-bound kfunc program is attached" \
  test "$(rx ip -d link show "$V1" | grep -c 'name bs_capture_nic')" = 1
sent=$(send --pps 5000 "$TMP/flows.pcap")
wait $pid
check "NIC timestamps: exits 0, ledger closes exactly" ledger_closes "$TMP/nic.json" "$sent"
check "NIC timestamps: source nic, and veth gave none (all stamped by the kernel clock, counted)" \
  test "$(json "$TMP/nic.json" "(d['timestamps']['source'], d['ports'][0]['device']['extra']['xdp_nic_timestamps'], d['ports'][0]['device']['extra']['xdp_redirected'] == $sent)")" = "('nic', 0, True)"
check "NIC timestamps in skb mode: refused with the reason" sh -c \
  "ip netns exec '$NS_RX' '$BS' run --listen none --xdp '$V1' --xdp-mode skb --timestamps nic 2>&1 | grep -q 'NIC timestamps need native XDP mode'"

# 3. Generic (skb) mode, IP-only filter: ARP frames left to the kernel and counted as filtered.
python3 - "$TMP/flows.pcap" "$TMP/mixed.pcap" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
out, off, i = [data[:24]], 24, 0
arp = bytes.fromhex("ffffffffffff020000000001" "0806" "0001080006040001" "020000000001" "0a000001" "000000000000" "0a000002")
arp += bytes(60 - len(arp))
while off < len(data):
    ts_s, ts_u, cap, orig = struct.unpack("<IIII", data[off:off + 16])
    out.append(data[off:off + 16 + cap]); off += 16 + cap; i += 1
    if i % 10 == 0:
        out.append(struct.pack("<IIII", ts_s, ts_u, len(arp), len(arp)) + arp)
open(sys.argv[2], "wb").write(b"".join(out))
PY
start skb --xdp "$V1" --xdp-mode skb --ip-only --idle-exit 3s
check "skb mode: started in generic mode" grep -q "XDP skb mode" "$TMP/skb.err"
sent=$(send --pps 5000 "$TMP/mixed.pcap")
wait $pid
check "skb mode: exits 0" test $? = 0
check "skb mode: ledger closes exactly with the filtered frames" ledger_closes "$TMP/skb.json" "$sent"
check "skb mode: every ARP frame filtered, every IP frame received" test "$(json "$TMP/skb.json" \
  "(d['ports'][0]['device']['filtered'], d['ports'][0]['ledger']['received'])")" = "(256, 2560)"
check "skb mode: no XDP program left" test "$(xdp_progs)" = 0

# 4. Overload: tcpreplay at full speed into tiny rings while burstscope is stopped (SIGSTOP), so that the
#    drops do not depend on which of two threads a loaded machine runs faster: the XDP program keeps
#    redirecting into the 64-entry socket ring, which fills, and the kernel counts the rest at their stage.
#    After SIGCONT the ledger must still close exactly.
cat >"$TMP/tiny.yaml" <<YAML
capture: af_xdp
af-xdp:
  ports: [{interface: $V1, queues: 1}]
  frames: 64
  rx-ring: 64
  batch: 8
ring-size: 1024
YAML
# veth in native mode would put half of the flows on queue 1, which has no socket here: that is a counted
# stage too (xdp_no_socket), so this run checks it as well.
start tiny -c "$TMP/tiny.yaml" --idle-exit 3s
kill -STOP "$pid"
sent=$(send --topspeed --loop 3 "$TMP/flows.pcap")
kill -CONT "$pid"
wait $pid
check "overload: exits 0" test $? = 0
check "overload: ledger closes exactly" ledger_closes "$TMP/tiny.json" "$sent"
check "overload: frames on the queue without a socket counted as xdp_no_socket" test "$(json "$TMP/tiny.json" \
  "d['ports'][0]['device']['drop_stages']['xdp_no_socket'] > 0")" = True
check "overload: drops counted before or at the ring" test "$(json "$TMP/tiny.json" \
  "(lambda p: p['device']['drop_stages']['xsk_rx_ring_full'] + p['device']['drop_stages']['xsk_rx_dropped'] + p['ledger']['dropped']['ring_full'] > 0)(d['ports'][0])")" = True
# SPEC "Overload" with the kernel's bins: the XDP program counted every frame it would capture before the socket
# ring could lose it, so the port's 100 us series holds every frame sent at its bytes (the file's, three times),
# although the RX thread saw 64 of them; the frames lost before the RX thread are exactly the kernel's stages
# after the program (no socket, socket ring full, dropped), and every lost frame lies in a degraded interval.
check "overload: the series holds every frame sent (the XDP program's bins): packets and bytes of the file, 3 times" \
  test "$(json "$TMP/tiny.json" "(d['ports'][0]['overload']['series_packets'], d['ports'][0]['overload']['series_bytes'])")" = \
  "$(json "$TMP/flows-analyze.json" "(3 * d['packets'], 3 * d['bytes'])")"
check "overload: frames lost before the RX thread in the series = the kernel's stages after the program" \
  test "$(json "$TMP/tiny.json" "(lambda p: p['overload']['series_kernel_lost'] == sum(n for k, n in p['device']['drop_stages'].items() if not k.startswith('nic_')) > 0)(d['ports'][0])")" = True
check "overload: every lost frame (kernel and ring) lies in a degraded interval, at its exact bytes (plain frames)" \
  test "$(json "$TMP/tiny.json" "(lambda p: sum(x['lost_packets'] for x in p['overload']['degraded']) == p['overload']['series_kernel_lost'] + p['ledger']['dropped']['ring_full'] and all('bytes_upper' not in x for x in p['overload']['degraded']) and 'series_bytes_upper' not in p['overload'])(d['ports'][0])")" = True

# 5. SIGTERM mid-replay: the summary and ledger are written, the program detached, exit 0.
start term --xdp "$V1" --interval 100ms
tx tcpreplay --pps 5000 -i "$V0" "$TMP/flows.pcap" >/dev/null 2>&1 &
txpid=$!
sleep 0.3
kill -TERM "$pid"
wait $pid
rc=$?
wait $txpid
check "SIGTERM: exits 0" test "$rc" = 0
check "SIGTERM: ledger balanced" test "$(json "$TMP/term.json" "d['ports'][0]['ledger']['balanced'] and d['stop_reason'] == 'signal'")" = True
check "SIGTERM: no XDP program left" test "$(xdp_progs)" = 0

# 5b. Least privilege: an unprivileged user with only CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN, CAP_NET_RAW and
#     CAP_IPC_LOCK (docs/af-xdp.md) captures, closes its ledger and detaches.
CAPS=+bpf,+perfmon,+net_admin,+net_raw,+ipc_lock
if id nobody >/dev/null 2>&1; then
  start nonroot setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all,$CAPS \
    --ambient-caps=-all,$CAPS --bounding-set=-all,$CAPS -- "$BS" run --listen none --json -q --xdp "$V1" --idle-exit 3s
  check "non-root: after set-up every thread holds only CAP_NET_ADMIN" test "$(thread_caps "$pid")" = \
    "0000000000001000 0000000000001000 "
  sent=$(send --pps 5000 "$TMP/flows.pcap")
  wait $pid
  check "non-root with five capabilities: exits 0" test $? = 0
  check "non-root: ledger closes exactly" ledger_closes "$TMP/nonroot.json" "$sent"
  check "non-root: no XDP program left" test "$(xdp_progs)" = 0
fi

# 6. A crashed run (SIGKILL) leaves its program; the next run removes it, says so, and leaves nothing.
start crash --xdp "$V1"
kill -KILL "$pid"
wait $pid 2>/dev/null
check "crash: the killed run's program is still attached" test "$(xdp_progs)" = 1
start stale --xdp "$V1" --duration 1s
wait $pid
check "stale: the next run replaces it and says so" grep -q "removed a stale burstscope XDP program" "$TMP/stale.err"
check "stale: no XDP program left" test "$(xdp_progs)" = 0

# 6b. Capture faults (docs/live-capture.md "Capture faults"): while burstscope runs, the interface goes down and
#     up, is deleted (with its peer) and re-created under the same name. Each change is logged once with its
#     time and counted, the metrics say it while it lasts, capture resumes on the new interface (program and
#     sockets re-attached by the monitor thread) and the ledger closes exactly over both interfaces.
rx ip link set lo up # the metrics endpoint, on the namespace's loopback
LISTEN=127.0.0.1:0 start fault --xdp "$V1" --interval 100ms
metric() { # NAME: its value for this port, from the run's own endpoint
  local url
  url=$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$TMP/fault.err" | head -1) &&
    rx curl -sf "$url" | awk -v m="$1" '$1 ~ "^"m"[{]" && $1 ~ /port="'"$V1"'"/ {print $NF + 0}'
}
metric_is() { test "$(metric "$1")" = "$2"; }
wait_metric() { # NAME VALUE: bounded (30 s)
  for _ in $(seq 1 300); do
    metric_is "$1" "$2" && return 0
    sleep 0.1
  done
  echo "$1 = $(metric "$1"), want $2"
  return 1
}
link_metrics() { # up present downs reattached
  echo "$(metric burstscope_capture_link_up) $(metric burstscope_capture_link_present)" \
    "$(metric burstscope_capture_link_downs_total) $(metric burstscope_capture_reattached_total)"
}
link_metrics_are() { # "UP PRESENT DOWNS REATTACHED": bounded wait (30 s)
  for _ in $(seq 1 300); do
    [ "$(link_metrics)" = "$1" ] && return 0
    sleep 0.1
  done
  echo "link metrics (up present downs reattached): $(link_metrics), want $1"
  return 1
}
check "faults: link up, present, no downs, no re-attach at start (metrics)" link_metrics_are "1 1 0 0"
sent1=$(send --pps 5000 "$TMP/flows.pcap")
rx ip link set "$V1" down
check "faults: link down logged once with its time" wait_line "port '$V1': link down at 20[0-9-]*T[0-9:.]*Z" "$TMP/fault.err" 300
check "faults: burstscope_capture_link_up 0 while down" wait_metric burstscope_capture_link_up 0
check "faults: burstscope_capture_link_downs_total 1" metric_is burstscope_capture_link_downs_total 1
rx ip link set "$V1" up
check "faults: link up logged with how long it was down" wait_line "port '$V1': link up at .*(down for [0-9.]* s)" "$TMP/fault.err" 300
check "faults: burstscope_capture_link_up 1 again" wait_metric burstscope_capture_link_up 1
rx ip link del "$V1"
check "faults: removal logged" wait_line "port '$V1': interface removed at" "$TMP/fault.err" 300
check "faults: burstscope_capture_link_present 0 while it is gone" wait_metric burstscope_capture_link_present 0
check "faults: the capture keeps running without its interface" kill -0 "$pid"
# The same pair again, made in the namespaces themselves (their IPv6 is off: nothing but the replay is sent).
ip -n "$NS_TX" link add "$V0" numtxqueues 2 numrxqueues 2 type veth peer name "$V1" numtxqueues 2 numrxqueues 2 \
  netns "$NS_RX"
tx ip link set "$V0" up
rx ip link set "$V1" up
check "faults: re-created interface re-attached (program and both sockets), logged" \
  wait_line "port '$V1': interface back at .*: XDP program and 2 AF_XDP sockets re-attached" "$TMP/fault.err" 300
check "faults: our program is on the new interface" test "$(xdp_progs)" = 1
check "faults: link up and present again, 2 downs, one re-attach (metrics)" link_metrics_are "1 1 2 1"
received1=$(metric burstscope_capture_received_packets_total) # the first replay's, long arrived
sent2=$(send --pps 5000 "$TMP/flows.pcap")
# Every frame of the second replay has reached the program (wait for that state, bounded), then stop: stopping
# drains the sockets, so what RX has not taken yet is still counted.
for _ in $(seq 1 300); do
  [ "$(metric burstscope_capture_seen_packets_total)" -ge $((sent1 + sent2)) ] 2>/dev/null && break
  sleep 0.1
done
kill -TERM "$pid"
wait $pid
check "faults: exits 0 on SIGTERM" test $? = 0
check "faults: each change logged once (down, up, removed, back, up: link lines 2 down 2 up)" test \
  "$(grep -c "port '$V1': link down at" "$TMP/fault.err") $(grep -c "port '$V1': link up at" "$TMP/fault.err") $(grep -c "port '$V1': interface removed at" "$TMP/fault.err") $(grep -c "port '$V1': interface back at" "$TMP/fault.err")" = "2 2 1 1"
check "faults: run --json link: up, present, 2 downs (down, removal), 1 re-attach" test "$(json "$TMP/fault.json" \
  "(lambda l: (l['up'], l['present'], l['downs'], l['reattached']))(d['ports'][0]['link'])")" = "(True, True, 2, 1)"
check "faults: capture resumed on the new interface: frames of the second replay received (from ${received1:-?})" \
  test "$(json "$TMP/fault.json" "d['ports'][0]['ledger']['received'] > ${received1:-0} > 0")" = True
check "faults: ledger closes exactly over both interfaces (the program's verdicts, every socket's counts)" \
  ledger_closes "$TMP/fault.json" "$((sent1 + sent2))"
check "faults: no XDP program left" test "$(xdp_progs)" = 0

# 6c. A stalled RX queue (docs/live-capture.md "Capture faults"): the port's RX threads alone are frozen (the
#     cgroup v1 freezer, their thread ids in its `tasks`; the monitor thread and the rest of the process run on)
#     while frames come. The monitor sees frames waiting in a socket's RX ring and none taken for a second: one
#     log line per queue and the metric; thawed, the queue resumes (logged), and the ledger closes exactly (what
#     the frozen ring could not hold is xsk_rx_ring_full).
# shellcheck source=tests/integration/freezer.sh
. "$ROOT/tests/integration/freezer.sh"
if ! freezer_ready >"$TMP/out" 2>&1; then
  notok "stall: $(cat "$TMP/out")"
else
  LISTEN=127.0.0.1:0 start stall --xdp "$V1" --interval 100ms
  stall_url() { grep -o 'http://127.0.0.1:[0-9]*/metrics' "$TMP/stall.err" | head -1; }  # once it is served
  queues_stalled() { # N M: N queues' stalled gauges are exported, M of them at 1
    local url
    url=$(stall_url) && [ -n "$url" ] && rx curl -sf "$url" >"$TMP/stall.metrics" &&
      awk -v n="$1" -v m="$2" '$1 ~ /^burstscope_capture_queue_stalled[{]/ {k++; s += $NF}
        END {exit !(k == n && s == m)}' "$TMP/stall.metrics"
  }
  wait_queues() { # N M: queues_stalled N M within 30 s, else says what the metrics were
    wait_for 30 queues_stalled "$1" "$2" && return 0
    echo "metrics at '$(stall_url)': $(grep '^burstscope_capture_queue_stall' "$TMP/stall.metrics" 2>/dev/null |
      tr '\n' ' ')"
    return 1
  }
  check "stall: no queue stalled at start (metric per queue, bounded wait)" wait_queues 2 0
  tids=$(grep -l "^bs-xsk-0-" /proc/"$pid"/task/*/comm | cut -d/ -f5)
  check "stall: two RX threads found" test "$(echo "$tids" | wc -w)" = 2
  # shellcheck disable=SC2086
  check "stall: the RX threads are frozen" freeze "bsx_stall_$$" $tids
  # The file's flows spread over the sender's two TX queues, each the peer's RX queue of the same number.
  sent3=$(send --pps 2000 "$TMP/flows.pcap")
  check "stall: a stalled queue logged with its time" \
    wait_line "port '$V1': RX queue [01] stalled at 20[0-9-]*T[0-9:.]*Z (frames wait, none taken" "$TMP/stall.err" 300
  n_stalled=$(grep -c "port '$V1': RX queue [01] stalled at" "$TMP/stall.err")
  check "stall: burstscope_capture_queue_stalled 1 for each stalled queue ($n_stalled)" \
    wait_queues 2 "$n_stalled"
  thaw "bsx_stall_$$"
  check "stall: each stalled queue resumed, logged" wait_line "port '$V1': RX queue [01] resumed at" "$TMP/stall.err" 300
  check "stall: no queue stalled after the thaw" wait_queues 2 0
  for _ in $(seq 1 300); do
    [ "$(rx curl -sf "$(stall_url)" | awk '$1 ~ /^burstscope_capture_seen_packets_total[{]/ {print $NF + 0}')" -ge \
      "$sent3" ] 2>/dev/null && break
    sleep 0.1
  done
  kill -TERM "$pid"
  wait $pid
  check "stall: exits 0 on SIGTERM" test $? = 0
  check "stall: run --json counts the stalls ($n_stalled) and no queue stalled at the end" test "$(json "$TMP/stall.json" \
    "(lambda l: (l['stalls'], l['queue_stalled']))(d['ports'][0]['link'])")" = "($n_stalled, [False, False])"
  check "stall: each stall logged once, each resumed once" test \
    "$(grep -c "RX queue [01] stalled at" "$TMP/stall.err")" = "$(grep -c "RX queue [01] resumed at" "$TMP/stall.err")"
  check "stall: ledger closes exactly across the stall" ledger_closes "$TMP/stall.json" "$sent3"
fi

# 7. Bad input: one clear error line, exit 1, nothing left attached.
bad() {  # NAME PATTERN -- command...
  local name=$1 pattern=$2
  shift 3
  "$@" >"$TMP/bad.out" 2>"$TMP/bad.err"
  local rc=$?
  if [ "$rc" = 1 ] && [ "$(grep -c '^burstscope: ' "$TMP/bad.err")" = 1 ] && grep -q -- "$pattern" "$TMP/bad.err"; then
    ok "$name (exit $rc: $(grep '^burstscope: ' "$TMP/bad.err"))"
  else
    notok "$name (exit $rc, want 1 and one line matching '$pattern')"
    sed 's/^/# /' "$TMP/bad.err"
  fi
}
bad "missing interface" "interface 'nosuch0' does not exist" -- rx "$BS" run --listen none --xdp nosuch0
rx ip link set lo up
bad "driver without native XDP names the mode tried" "native mode: .*no XDP support in this mode" -- \
  rx "$BS" run --listen none --xdp lo --xdp-mode native
cat >"$TMP/other.c" <<'C'
#include <linux/bpf.h>
__attribute__((section("xdp"), used)) int other_prog(struct xdp_md *ctx) { return XDP_PASS; }
char LICENSE[] __attribute__((section("license"), used)) = "GPL";
C
if clang -O2 -target bpf -I/usr/include/"$(gcc -print-multiarch)" -c "$TMP/other.c" -o "$TMP/other.o" 2>"$TMP/clang.err"; then
  rx ip link set dev "$V1" xdpgeneric obj "$TMP/other.o" sec xdp
  bad "another program on the interface is refused, named" "already has XDP program other_prog" -- \
    rx "$BS" run --listen none --xdp "$V1"
  check "the other program is left in place" test "$(rx ip -d link show "$V1" | grep -c 'name other_prog')" = 1
  rx ip link set dev "$V1" xdpgeneric off
else
  notok "compile a foreign XDP program"; sed 's/^/# /' "$TMP/clang.err"
fi
if id nobody >/dev/null 2>&1; then
  bad "without BPF permission: says which capabilities" "needs CAP_BPF" -- \
    rx setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all --bounding-set=-all \
    "$BS" run --listen none --xdp "$V1"
fi
check "after the errors no XDP program is left" test "$(xdp_progs)" = 0

echo "1..$n"
[ "$failed" = 0 ]
