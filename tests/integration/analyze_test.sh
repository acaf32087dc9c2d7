#!/usr/bin/env bash
# End-to-end checks of `burstscope analyze` on the bundled real trace (TAP output for meson).
# usage: analyze_test.sh BURSTSCOPE WRAP_TRACE SOURCE_ROOT
set -u
BS=$1 WRAP=$2 ROOT=$3
TRACE=$ROOT/data/ddp-gloo-w3-3steps.pcap
ORACLE=$ROOT/tests/data/ddp-gloo-w3-3steps.oracle.json
COMPARE=$ROOT/scripts/compare_oracle.py
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local name=$1; shift; if "$@" >"$TMP/out" 2>&1; then ok "$name"; else notok "$name"; sed 's/^/# /' "$TMP/out"; fi; }
json() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }

# 1. The bundled trace equals the reference oracle's output on it.
"$BS" analyze --json "$TRACE" >"$TMP/plain.json"
check "analyze equals the oracle on the bundled trace" python3 "$COMPARE" "$TMP/plain.json" "$ORACLE"
check "ledger balances" test "$(json "$TMP/plain.json" "d['ledger']['balanced']")" = True
check "microburst histograms cover every microburst" test "$(json "$TMP/plain.json" \
  "(lambda m: m['count'] > 0 and m['histograms']['durations_s']['count'] == m['count'] and m['histograms']['gaps_s']['count'] == m['count'] - 1)(d['microbursts'])")" = True

# 2. The same trace as every mirror encapsulation: the inner frames' bytes are what count.
for mode in erspan1 erspan2 erspan3 erspan3-sub teb vxlan qinq; do
  "$WRAP" "$mode" "$TRACE" "$TMP/$mode.pcap"
  extra=""
  [ "$mode" = qinq ] && extra="--mirror-vlan-tags 2"
  # shellcheck disable=SC2086
  "$BS" analyze --json $extra "$TMP/$mode.pcap" >"$TMP/$mode.json"
  check "$mode-wrapped trace equals the oracle" python3 "$COMPARE" "$TMP/$mode.json" "$ORACLE"
  if [ "$mode" != qinq ]; then
    check "$mode: every frame counted as encapsulated" test \
      "$(json "$TMP/$mode.json" "d['decode']['encapsulated']")" = "$(json "$TMP/plain.json" "d['packets']")"
  fi
done

# 3. pcapng (through libpcap) gives the same numbers as pcap.
if command -v editcap >/dev/null; then
  editcap -F pcapng "$TRACE" "$TMP/trace.pcapng"
  "$BS" analyze --json "$TMP/trace.pcapng" >"$TMP/ng.json"
  check "pcapng equals the oracle" python3 "$COMPARE" "$TMP/ng.json" "$ORACLE"
else
  echo "ok $((n += 1)) - pcapng # SKIP editcap (wireshark-common) not installed"
fi

# 4. Mirror loss shows up as ERSPAN sequence gaps: every 100th frame left out.
"$WRAP" erspan2 "$TRACE" "$TMP/lossy.pcap" --drop-every 100
"$BS" analyze --json "$TMP/lossy.pcap" >"$TMP/lossy.json"
packets=$(json "$TMP/plain.json" "d['packets']")
check "ERSPAN sequence gaps count the frames the mirror lost" test \
  "$(json "$TMP/lossy.json" "d['decode']['mirror_seq_gaps']")" = "$(( (packets - 1) / 100 ))"

# 4b. A looped replay (wrap_trace pad-usec --repeat, what the exporter tests feed DPDK) continues the TCP
#     connections from copy to copy: three copies hold three times one copy's retransmissions and
#     out-of-order segments, not every later segment counted as sent again.
"$WRAP" pad-usec "$TRACE" "$TMP/once.pcap"
"$WRAP" pad-usec "$TRACE" "$TMP/thrice.pcap" --repeat 3
"$BS" analyze --json "$TMP/once.pcap" >"$TMP/once.json"
"$BS" analyze --json "$TMP/thrice.pcap" >"$TMP/thrice.json"
tcp_counts="(lambda t: (t['tcp_data_segments'], t['tcp_retransmissions'], t['tcp_out_of_order']))(d['evidence']['totals'])"
check "pad-usec --repeat 3 continues the connections: 3x one copy's data, retransmitted and out-of-order segments" \
  test "$(json "$TMP/thrice.json" "$tcp_counts")" = "$(json "$TMP/once.json" "tuple(3 * x for x in $tcp_counts)")"

# 5. Bad input: one clear error line, non-zero exit, no core dump.
expect_error() {  # name, expected exit code, pattern, command...
  local name=$1 code=$2 pattern=$3; shift 3
  "$@" >"$TMP/stdout" 2>"$TMP/stderr"
  local rc=$?
  if [ "$rc" -eq "$code" ] && [ "$(wc -l <"$TMP/stderr")" -ge 1 ] && grep -q -- "$pattern" "$TMP/stderr"; then
    ok "$name"
  else
    notok "$name (exit $rc)"; sed 's/^/# /' "$TMP/stderr"
  fi
}
expect_error "missing file" 2 "does not exist" "$BS" analyze "$TMP/nope.pcap"
printf 'not a capture file at all, just text\n' >"$TMP/text.pcap"
expect_error "not a capture file" 1 "cannot read" "$BS" analyze "$TMP/text.pcap"
python3 -c "
import struct, sys
hdr = struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 105)  # LINKTYPE_IEEE802_11
rec = struct.pack('<IIII', 1, 0, 20, 20) + bytes([0x45] + [0] * 19)
open(sys.argv[1], 'wb').write(hdr + rec)" "$TMP/wifi.pcap"
expect_error "unsupported link type" 1 "link type IEEE802_11" "$BS" analyze "$TMP/wifi.pcap"
expect_error "bad scale names the option" 2 "scales" "$BS" analyze --scales-us 150 "$TRACE"
expect_error "bad list value names the option" 2 "rates-gbps" "$BS" analyze --rates-gbps 1,x "$TRACE"
expect_error "bad prefix names the option" 2 "local-net" "$BS" analyze --local-net 10.0.0.0/40 "$TRACE"

# 6. A file cut off mid-record: what was read is analysed, the loss is said and counted, exit 0.
size=$(stat -c %s "$TRACE")
head -c $((size / 2 + 7)) "$TRACE" >"$TMP/cut.pcap"
"$BS" analyze --json "$TMP/cut.pcap" >"$TMP/cut.json" 2>"$TMP/cut.err"
rc=$?
if [ $rc -eq 0 ] && grep -q "truncated" "$TMP/cut.err" &&
   [ "$(json "$TMP/cut.json" "d['ledger']['truncated_records']")" = 1 ] &&
   [ "$(json "$TMP/cut.json" "d['packets'] > 0 and d['packets'] < $packets")" = True ]; then
  ok "truncated file: partial analysis, loss reported"
else
  notok "truncated file (exit $rc)"; sed 's/^/# /' "$TMP/cut.err"
fi

# 7. The text report an operator reads.
"$BS" analyze "$TRACE" >"$TMP/report.txt"
check "text report has burstiness, backlog, microbursts, pairs, ledger" \
  grep -q "Ledger: received $packets = analysed $packets + dropped 0 (balanced)" "$TMP/report.txt"
for section in "Burstiness" "Virtual backlog" "Microbursts" "Top host pairs" "Top flows" "Decoding"; do
  check "text report: $section" grep -q "$section" "$TMP/report.txt"
done

# 8. The analysis split over 2 and 3 workers per port (docs/workers.md): the same JSON but for the training
# analysis's own duration. --no-pairs-flows and --no-training leave their sections out, and nothing else moves.
strip() { python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
d.get('training', {}).pop('analysis_ms', None)
for k in sys.argv[2:]: d.pop(k, None)
print(json.dumps(d, sort_keys=True))" "$@"; }
strip "$TMP/plain.json" >"$TMP/one.txt"
for w in 2 3; do
  "$BS" analyze --json --workers "$w" "$TRACE" >"$TMP/w$w.json"
  strip "$TMP/w$w.json" >"$TMP/w$w.txt"
  check "analyze --workers $w: the same JSON as one worker" cmp "$TMP/one.txt" "$TMP/w$w.txt"
done
"$BS" analyze --json --no-training "$TRACE" >"$TMP/nt.json"
check "--no-training: no training section" test "$(json "$TMP/nt.json" "'training' in d")" = False
check "--no-training: the burst figures unchanged" python3 "$COMPARE" "$TMP/nt.json" "$ORACLE"
"$BS" analyze --json --no-pairs-flows "$TRACE" >"$TMP/np.json"
check "--no-pairs-flows: no pairs or flows" test "$(json "$TMP/np.json" "(d['pairs']['top'], d['flows']['top'])")" = "([], [])"
check "--no-pairs-flows: the port's figures unchanged" python3 "$COMPARE" "$TMP/np.json" "$ORACLE"

echo "1..$n"
[ "$failed" -eq 0 ]
