#!/usr/bin/env python3
"""TCP congestion evidence against tshark's own analysis (docs/evidence.md): on every committed training
trace, burstscope's retransmissions and out-of-order segments against `tcp.analysis.retransmission` and
`tcp.analysis.out_of_order`, and its ECN counts against `ip.dsfield.ecn`. Within 1% (at least 2 segments):
burstscope runs in timestamp order and has no window field, tshark runs in file order (docs/evidence.md).
TAP output. Usage: tcp_evidence_tshark.py BURSTSCOPE SOURCE_ROOT"""
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap import check, done  # noqa: E402

exe, root = sys.argv[1], sys.argv[2]


def tshark_count(path, flt):
    out = subprocess.run(["tshark", "-n", "-r", path, "-Y", flt, "-T", "fields", "-e", "frame.number"],
                         capture_output=True, text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if line.strip())


if shutil.which("tshark") is None:
    print("Bail out! tshark is not installed (scripts/setup.sh installs it)")
    sys.exit(1)

traces = sorted(glob.glob(os.path.join(root, "data", "testbed", "*.pcap"))) + \
    [os.path.join(root, "data", "ddp-gloo-w3-3steps.pcap")]
seen_retx = 0
for path in traces:
    name = os.path.relpath(path, root)
    j = json.loads(subprocess.run([exe, "analyze", path, "--json"], capture_output=True, text=True,
                                  check=True).stdout)
    t = j["evidence"]["totals"]
    for field, flt in (("tcp_retransmissions", "tcp.analysis.retransmission"),
                       ("tcp_out_of_order", "tcp.analysis.out_of_order")):
        want = tshark_count(path, flt)
        got = t[field]
        tolerance = max(2, want // 100)
        check(abs(got - want) <= tolerance, f"{name}: {field} {got}, tshark {flt} {want} (within {tolerance})")
        if field == "tcp_retransmissions":
            seen_retx += want
    ce = tshark_count(path, "ip.dsfield.ecn == 3 || ipv6.tclass.ecn == 3")
    check(t["ce"] == ce, f"{name}: CE {t['ce']}, tshark {ce}")
    data = tshark_count(path, "tcp.len > 0")
    check(t["tcp_data_segments"] == data, f"{name}: data segments {t['tcp_data_segments']}, tshark {data}")
check(seen_retx >= 100, f"the traces hold retransmissions to compare ({seen_retx} per tshark)")
done()
