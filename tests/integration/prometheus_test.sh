#!/usr/bin/env bash
# The exporter, rules and dashboards against the real servers (Debian's prometheus and
# prometheus-alertmanager), all on loopback and bounded in time:
#   sensor-a  replays the bundled DDP trace through DPDK net_pcap at the recorded pace, on a 1 Gbit/s link
#             with a 2 MB switch buffer: the congestion alerts must fire;
#   sensor-b  replays the same into a 16-record ring: it drops, and the drop alert must fire;
#   a third target where nothing listens: "down".
# The trace loops for as long as the test runs (wrap_trace writes copy after copy into a named pipe that
# net_pcap reads), so whatever a check samples, at whatever moment a loaded machine lets it run, the traffic
# is still there; every check waits for its state with a bound instead of looking once at a chosen moment.
# One Prometheus (1 s scrapes, the rules in alerts/) scrapes all three and sends alerts to an Alertmanager
# whose webhook receiver is a small HTTP server in this script. Then every PromQL expression of every
# dashboard panel and every rule must return data, the fleet rule must equal the sum over the two sensors,
# the congestion alert must reach the webhook, and `promtool check metrics` must pass on a live scrape.
# usage: prometheus_test.sh BURSTSCOPE WRAP_TRACE SOURCE_ROOT   (TAP on stdout; needs root for DPDK)
set -u
BS=$1 WRAP=$2 ROOT=$(cd "$3" && pwd)
TMP=$(mktemp -d)

WAIT_INTERVAL=0.5  # each try is a PromQL query
# shellcheck source=tests/integration/tap.sh
. "$(dirname "$0")/tap.sh"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_sensor() {  # start_sensor NAME EXTRA-ARGS...; sets SENSOR_PID
  local name=$1
  shift
  # The trace, 1.4 s long, 1000 times over (23 minutes, longer than the test's own timeout) into a pipe; the
  # writer ends when the sensor closes the pipe.
  mkfifo "$TMP/$name.pcap"
  # shellcheck disable=SC2086
  "$WRAP" pad-usec "$ROOT/data/ddp-gloo-w3-3steps.pcap" "$TMP/$name.pcap" --repeat 1000 ${MIRROR_FAULTS:-} 2>/dev/null &
  PIDS+=($!)
  # shellcheck disable=SC2068
  "$BS" run -q --listen 127.0.0.1:0 --port net_pcap0 --vdev "net_pcap0,rx_pcap=$TMP/$name.pcap" --replay-speed 1 \
    --interval 1s --baseline 10s --sensor "$name" --label training_job=resnet $@ \
    -- -l 0-1 --no-huge -m 512 --no-pci --file-prefix "bsprom_${name}_$$" >"$TMP/$name.out" 2>&1 &
  SENSOR_PID=$!
  PIDS+=("$SENSOR_PID")
}
# sensor-a's mirror is a faulty one: it copies every 50th frame twice and loses every 300th, so the mirror
# self-check rules (docs/mirror.md) see duplicates and holes the receivers acknowledged. Not sensor-b: its
# ring drops most frames, and holes the capture made outnumber the two tracked per direction.
# sensor-a also runs the flight recorder (its dashboard row and series; files of microbursts over 200 kB).
MIRROR_FAULTS="--duplicate-every 50 --drop-every 300" start_sensor sensor-a --link-gbps 1 --switch-buffer-bytes 2e6 \
  --flight-recorder "$TMP/flight-a" --flight-microburst-bytes 200000
A_PID=$SENSOR_PID
start_sensor sensor-b --link-gbps 10 --ring-size 16
B_PID=$SENSOR_PID
for s in sensor-a sensor-b; do
  wait_for 60 grep -q "metrics at" "$TMP/$s.out" || { echo "Bail out! $s did not start"; cat "$TMP/$s.out"; exit 1; }
done
A_PORT=$(grep -o 'metrics at http://127.0.0.1:[0-9]*' "$TMP/sensor-a.out" | grep -o '[0-9]*$')
B_PORT=$(grep -o 'metrics at http://127.0.0.1:[0-9]*' "$TMP/sensor-b.out" | grep -o '[0-9]*$')
DEAD_PORT=$(free_port)
PROM_PORT=$(free_port)
AM_PORT=$(free_port)
HOOK_PORT=$(free_port)

# The webhook receiver: appends every POSTed notification to a file.
cat >"$TMP/hook.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[2], "ab") as f:
            f.write(body + b"\n")
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
python3 "$TMP/hook.py" "$HOOK_PORT" "$TMP/hook.log" &
PIDS+=($!)

cat >"$TMP/am.yml" <<EOF
route:
  receiver: hook
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: http://127.0.0.1:$HOOK_PORT/
EOF
check "amtool accepts the test Alertmanager configuration" amtool check-config "$TMP/am.yml"
prometheus-alertmanager --config.file="$TMP/am.yml" --storage.path="$TMP/am" \
  --web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= --log.level=warn >"$TMP/am.log" 2>&1 &
PIDS+=($!)

cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $ROOT/alerts/burstscope.rules.yml
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:$AM_PORT"]
scrape_configs:
  - job_name: burstscope
    static_configs:
      - targets: ["127.0.0.1:$A_PORT", "127.0.0.1:$B_PORT", "127.0.0.1:$DEAD_PORT"]
EOF
check "promtool accepts the test Prometheus configuration" promtool check config "$TMP/prometheus.yml"
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$TMP/prom.log" 2>&1 &
PIDS+=($!)
API="http://127.0.0.1:$PROM_PORT/api/v1"
has_data() { curl -sf "$API/query" --data-urlencode "query=$1" | python3 -c \
  'import json,sys; sys.exit(0 if json.load(sys.stdin)["data"]["result"] else 1)'; }
wait_for 60 has_data 'up' || { echo "Bail out! Prometheus did not come up"; cat "$TMP/prom.log"; exit 1; }

# The baseline (10 s) must be full for every PtM series, and rate() over 1 minute windows needs two scrapes.
check "both sensors report a peak-to-mean ratio at 5 ms" wait_for 90 has_data \
  'count(burstscope_peak_to_mean_ratio{scale="0.005", direction="all"}) == 2'

curl -sf "http://127.0.0.1:$A_PORT/metrics" >"$TMP/scrape.txt"
check "promtool check metrics is clean on a live scrape" sh -c "promtool check metrics <'$TMP/scrape.txt'"
check "a scrape has every metric family the dashboards and rules use" grep -q '^burstscope_window_utilization_ratio_bucket' "$TMP/scrape.txt"

# Every expression of every dashboard panel and every rule, with the dashboards' variables set to match all.
/usr/bin/python3 - "$ROOT" >"$TMP/exprs.tsv" <<'EOF'
import glob, json, re, sys
root = sys.argv[1]
subst = [(r'\$__rate_interval', '30s'), (r'\$__range', '5m'), (r'"\$scale"', '"0.005"'),
         (r'=~"\$\w+"', '=~".*"')]  # sensor, port, job, destination: All
def clean(e):
    for a, b in subst:
        e = re.sub(a, b, e)
    return " ".join(e.split())
for f in sorted(glob.glob(f"{root}/dashboards/*.json")):
    for p in json.load(open(f))["panels"]:
        for t in p.get("targets", []):
            print(f"{f.split('/')[-1]}: {p['title']}\t{clean(t['expr'])}")
import yaml  # Debian python3-yaml (scripts/setup.sh)
for g in yaml.safe_load(open(f"{root}/alerts/burstscope.rules.yml"))["groups"]:
    for r in g["rules"]:
        print(f"rule {r.get('alert') or r.get('record')}\t{clean(r['expr'])}")
EOF
# Rules that return data only in a failure the testbed cannot stage while the others run: no burstscope target
# at all, a capture that stalls while its HTTP server keeps answering, a job whose steps slow down against
# its own half-hour baseline (the replayed job keeps its period and the test lasts minutes), a job that
# stops sending (the replay loops), and congestion evidence the replayed TCP trace does not hold at the alerts'
# rates (RoCEv2 CNPs and resends, PFC pauses; congesting bursts and TCP retransmissions are far below their
# thresholds) - the PFC panel too, since pause series appear with the first pause frame - a flight recorder
# that cannot write, and a capture link that is down (the net_pcap and net_null ports here have no link to take
# down; dpdk_test.sh and afxdp_test.sh take real links down and read burstscope_capture_link_up).
# promtool covers them (alerts/tests).
ONLY_PROMTOOL="rule BurstscopeAbsent|rule BurstscopeNotReporting|rule BurstscopeJobStepSlowdown|rule BurstscopeJobSilent"
ONLY_PROMTOOL+="|rule BurstscopeCongestingMicrobursts|rule BurstscopeHighCnpRate|rule BurstscopeRoceGoBackNStorm"
ONLY_PROMTOOL+="|rule BurstscopeHighPfcPauseFraction|rule BurstscopeHighTcpRetransmissionRatio"
ONLY_PROMTOOL+="|rule BurstscopeFlightRecorderFailing|rule BurstscopeCaptureLinkDown|rule BurstscopeCaptureQueueStalled"
ONLY_PROMTOOL+="|burstscope-overview.json: PFC paused fraction by priority"
exprs=0 empty=0
while IFS=$'\t' read -r where expr; do
  exprs=$((exprs + 1))
  if echo "$where" | grep -Eq "^($ONLY_PROMTOOL)$"; then
    check "$where: a valid expression (data only on its failure; see alerts/tests)" \
      curl -sf "$API/query" --data-urlencode "query=$expr"
    continue
  fi
  check "$where returns data" wait_for 60 has_data "$expr"
done <"$TMP/exprs.tsv"
check "found the dashboards' and rules' expressions ($exprs)" test "$exprs" -ge 45

# The mirror self-check rules name the faulty mirror and only it.
rule_expr() { awk -F'\t' -v w="rule $1" '$1 == w {print $2}' "$TMP/exprs.tsv"; }
only_sensor_a() { curl -sf "$API/query" --data-urlencode "query=$1" | python3 -c \
  'import json,sys; r=json.load(sys.stdin)["data"]["result"]; sys.exit(0 if r and {x["metric"]["sensor"] for x in r} == {"sensor-a"} else 1)'; }
for rule in BurstscopeMirrorDuplicating BurstscopeMirrorLosingFrames; do
  check "rule $rule holds for sensor-a (faulty mirror) only" wait_for 60 only_sensor_a "$(rule_expr $rule)"
done

# The fleet rule equals the sum of the two sensors' own rates at the rule's evaluation time.
cat >"$TMP/fleet.py" <<'EOF'
import json, sys, urllib.parse, urllib.request
api = sys.argv[1]
import time
t0 = time.time() - 2  # both queries below see the same latest recorded sample
def query(q, t=t0):
    args = {"query": q}
    if t is not None:
        args["time"] = t
    with urllib.request.urlopen(f"{api}/query?{urllib.parse.urlencode(args)}") as r:
        return json.load(r)["data"]["result"]
# An instant query answers at the query's time; the recorded sample's own time is its evaluation time.
rule = query('training_job:burstscope_bytes:rate1m{training_job="resnet"}')
at = query('timestamp(training_job:burstscope_bytes:rate1m{training_job="resnet"})')
ts, agg = float(at[0]["value"][1]), float(rule[0]["value"][1])
per = query('rate(burstscope_bytes_total{direction="all", training_job="resnet"}[1m])', ts)
sensors = sorted(s["metric"]["sensor"] for s in per)
total = sum(float(s["value"][1]) for s in per)
print("rule", agg, "sensors", sensors, "sum", total, [float(s["value"][1]) for s in per])
ok = sensors == ["sensor-a", "sensor-b"] and all(float(s["value"][1]) > 0 for s in per)
sys.exit(0 if ok and abs(agg - total) <= 1e-9 * max(1, total) else 1)
EOF
check "fleet: training_job:burstscope_bytes:rate1m = sum over sensor-a and sensor-b" \
  wait_for 60 python3 "$TMP/fleet.py" "$API"

echo "# microbursts per second: $(curl -sf "$API/query" --data-urlencode 'query=burstscope:microbursts:rate1m' | python3 -c \
  'import json,sys; print([(r["metric"]["sensor"], r["value"][1]) for r in json.load(sys.stdin)["data"]["result"]])')"
alerts_firing() { curl -sf "$API/alerts" | python3 -c \
  'import json,sys; print(" ".join(sorted({a["labels"]["alertname"] for a in json.load(sys.stdin)["data"]["alerts"] if a["state"]=="firing"})))'; }
cat >"$TMP/congestion.py" <<'EOF'
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/alerts") as r:
    alerts = json.load(r)["data"]["alerts"]
a = [x for x in alerts if x["labels"]["alertname"] == "BurstscopeBacklogExceedsSwitchBuffer"]
print(a)
sys.exit(0 if a and all(x["labels"]["sensor"] == "sensor-a" and x["state"] == "firing" for x in a) else 1)
EOF
check "the congestion alert fires for sensor-a only" wait_for 90 python3 "$TMP/congestion.py" "$API"
echo "# firing: $(alerts_firing)"
# The sensor counts every interval over the buffer, whatever the scrapes saw; without a buffer, no series.
over_buffer() { curl -sf "http://127.0.0.1:$1/metrics" | grep '^burstscope_link_backlog_over_buffer_intervals_total'; }
check "sensor-a counts report intervals over the switch buffer" sh -c \
  "curl -sf 'http://127.0.0.1:$A_PORT/metrics' | grep '^burstscope_link_backlog_over_buffer_intervals_total{.*direction=\"all\"' | grep -Eq ' [1-9][0-9]*\$'"
no_over_buffer() { ! over_buffer "$1"; }
check "sensor-b (no switch buffer configured) has no such series" no_over_buffer "$B_PORT"
check "Alertmanager delivers the congestion alert to the webhook, firing, with its runbook" \
  wait_for 30 sh -c "grep -q '\"alertname\":\"BurstscopeBacklogExceedsSwitchBuffer\"' '$TMP/hook.log' && grep -q '\"status\":\"firing\"' '$TMP/hook.log' && grep -q 'runbook.md#burstscopebacklogexceedsswitchbuffer' '$TMP/hook.log'"

# Shutdown: both sensors stop on SIGTERM with a balanced ledger, sensor-b's drops counted in it.
kill -TERM "$A_PID" "$B_PID"
wait "$A_PID"; a_rc=$?
wait "$B_PID"; b_rc=$?
check "sensor-a exits 0 on SIGTERM with a balanced ledger" sh -c "test $a_rc = 0 && grep -q '^  balanced' '$TMP/sensor-a.out'"
check "sensor-b exits 0 with a balanced ledger that counts its ring drops" sh -c \
  "test $b_rc = 0 && grep -q '^  balanced' '$TMP/sensor-b.out' && grep -Eq 'dropped, ring full  [1-9]' '$TMP/sensor-b.out'"

echo "1..$n"
[ "$failed" -eq 0 ]
