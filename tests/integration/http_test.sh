#!/usr/bin/env bash
# The metrics endpoint on a hostile network (issue 24; docs/operations.md, "The metrics endpoint"), against a real
# `burstscope run` replaying the bundled DDP trace through DPDK net_pcap, on loopback and bounded in time:
#   - 64 slowloris connections (half a request line, then a header line every 2 s) held open for 20 s: a normal
#     scrape every 0.5 s answers 200 within 1 s, every time, and the server cuts the slow ones at read-timeout;
#   - 200 clients scraping at once for 10 s: every request gets 200 or the documented 503, and the capture loses
#     nothing meanwhile (no ring drop; the ledger balances at the end);
#   - the web configuration file (exporter-toolkit format) re-read on SIGHUP: plain HTTP, then TLS with basic auth
#     (right credentials 200, wrong 401, plain HTTP to the TLS port no metrics), a new certificate, client
#     certificates (RequireAndVerifyClientCert), and a broken file that is refused while the running settings stay.
# The certificates are made here with openssl. Python is the standard library's (tests/integration/http_load.py).
# usage: http_test.sh BURSTSCOPE WRAP_TRACE SOURCE_ROOT   (TAP on stdout; needs root for DPDK)
set -u
BS=$(realpath "$1") WRAP=$(realpath "$2") ROOT=$(cd "$3" && pwd)
LOAD="$ROOT/tests/integration/http_load.py"
TMP=$(mktemp -d)
CHECK_SHOW_PASS=1
# shellcheck source=tests/integration/tap.sh
. "$(dirname "$0")/tap.sh"

for tool in openssl python3; do
  command -v "$tool" >/dev/null || { echo "Bail out! $tool is missing (scripts/setup.sh installs it)"; exit 1; }
done

scrape() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"; }
metric() {  # metric NAME-WITH-LABELS: its value on a plain scrape
  scrape "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" 'index($0, m) == 1 { print $2; found = 1 } END { exit !found }'
}

# Certificates: two CAs, a server and a client certificate from each.
cd "$TMP" || exit 1
printf 'subjectAltName=IP:127.0.0.1\n' >ext
for i in 1 2; do
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "ca$i.key" -out "ca$i.crt" -days 2 \
    -subj "/CN=burstscope test CA $i" 2>/dev/null
  for who in srv cli; do
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$who$i.key" -out "$who$i.csr" \
      -subj "/CN=$who$i" 2>/dev/null
    openssl x509 -req -in "$who$i.csr" -CA "ca$i.crt" -CAkey "ca$i.key" -CAcreateserial -out "$who$i.crt" -days 2 \
      -extfile ext 2>/dev/null
  done
done
[ -s cli2.crt ] || { echo "Bail out! openssl could not make the test certificates"; exit 1; }
HASH=$(printf 's3cret' | "$BS" hash-password) || { echo "Bail out! hash-password failed"; exit 1; }
: >web.yml  # empty: plain HTTP until the TLS phase

mkfifo trace.pcap
"$WRAP" pad-usec "$ROOT/data/ddp-gloo-w3-3steps.pcap" trace.pcap --repeat 1000 2>/dev/null &
PIDS+=($!)
"$BS" run -q --listen 127.0.0.1:0 --web-config "$TMP/web.yml" --port net_pcap0 --vdev "net_pcap0,rx_pcap=$TMP/trace.pcap" \
  --replay-speed 1 --interval 1s --sensor http-test -- -l 0-1 --no-huge -m 512 --no-pci --file-prefix "bshttp_$$" \
  >run.out 2>&1 &
BS_PID=$!
PIDS+=("$BS_PID")
wait_for 60 grep -q "metrics at" run.out || { echo "Bail out! the sensor did not start"; cat run.out; exit 1; }
PORT=$(grep -o 'metrics at http://127.0.0.1:[0-9]*' run.out | grep -o '[0-9]*$')
wait_for 30 metric 'burstscope_packets_total{sensor="http-test",port="net_pcap0",direction="all"}'

check "64 slowloris connections for 20 s: every scrape 200 within 1 s" python3 "$LOAD" slowloris "$PORT" --conns 64 --seconds 20
read_cut() { [ "$(metric 'burstscope_http_rejected_connections_total{sensor="http-test",reason="read_timeout"}')" -ge 64 ]; }
check "the slow connections were cut at the read timeout (and counted)" read_cut

check "200 concurrent scrapers for 10 s: every request answered 200 or 503" \
  python3 "$LOAD" concurrent "$PORT" --clients 200 --seconds 10
no_ring_drop() { [ "$(metric 'burstscope_capture_dropped_packets_total{sensor="http-test",port="net_pcap0",stage="ring_full"}')" = 0 ]; }
check "no ring drop while the endpoint was under load" no_ring_drop
counted() { [ "$(metric 'burstscope_http_requests_total{sensor="http-test",code="200"}')" -ge 200 ]; }
check "requests counted by code" counted

# TLS with basic auth, by SIGHUP.
cat >web.yml <<EOF
tls_server_config:
  cert_file: srv1.crt
  key_file: srv1.key
basic_auth_users:
  prometheus: $HASH
EOF
kill -HUP "$BS_PID"
check "SIGHUP: the web configuration is reloaded" wait_for 10 grep -q "reloaded $TMP/web.yml" run.out
check "TLS with basic auth: right credentials 200, wrong 401, plain HTTP to the TLS port no metrics" \
  wait_for 10 python3 "$LOAD" tls "$PORT" --ca ca1.crt --user prometheus --password s3cret
FP1=$(python3 "$LOAD" cert "$PORT" --ca ca1.crt)
sed -i 's/srv1/srv2/' web.yml
kill -HUP "$BS_PID"
new_cert() { [ "$(python3 "$LOAD" cert "$PORT" --ca ca2.crt)" != "$FP1" ]; }
check "SIGHUP: a new certificate is served to new connections" wait_for 10 new_cert

cat >web.yml <<EOF
tls_server_config:
  cert_file: srv2.crt
  key_file: srv2.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca1.crt
EOF
kill -HUP "$BS_PID"
check "client certificates: the client CA's is let in, none or another CA's is refused" \
  wait_for 10 python3 "$LOAD" mtls "$PORT" --ca ca2.crt --cert cli1.crt --key cli1.key --other-cert cli2.crt \
  --other-key cli2.key

printf 'tls_server_config:\n  cert_file: missing.crt\n  key_file: srv2.key\n' >web.yml
kill -HUP "$BS_PID"
check "a broken web configuration is refused with the key named, and the running one stays" \
  wait_for 10 grep -q "tls_server_config.cert_file: cannot read" run.out
check "... still serving with client certificates" \
  python3 "$LOAD" mtls "$PORT" --ca ca2.crt --cert cli1.crt --key cli1.key --other-cert cli2.crt --other-key cli2.key

kill -TERM "$BS_PID"
wait "$BS_PID"
rc=$?
check "the sensor stops cleanly (exit 0)" test "$rc" = 0
check "the capture ledger balances, no ring drop" grep -qE "balanced: received [0-9]+ = analysed [0-9]+ \+ ring drops 0$" run.out
[ $failed -eq 0 ] || { echo "# sensor output:"; sed 's/^/# /' run.out | tail -20; }
echo "1..$n"
exit $((failed > 0))
