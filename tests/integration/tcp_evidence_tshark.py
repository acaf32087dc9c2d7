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


def tshark_retransmissions(path):
    """(time in ns, source, destination) of every segment tshark calls a retransmission."""
    out = subprocess.run(["tshark", "-n", "-r", path, "-Y", "tcp.analysis.retransmission", "-T", "fields",
                          "-e", "frame.time_epoch", "-e", "ip.src", "-e", "ip.dst"],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        t, src, dst = line.split("\t")
        sec, _, frac = t.partition(".")
        rows.append((int(sec) * 10**9 + int(frac.ljust(9, "0")[:9]), src, dst))
    return rows


BIN_NS = 100_000  # the engine's base bin: a step holds the events of the bins that start inside it
seen_retx = 0
seen_step_retx = 0
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
    # Per training step: each step's retransmissions on the job's host pairs against tshark's, by the base bin
    # each segment falls in.
    retx = tshark_retransmissions(path)
    congesting = 0
    for job in j.get("training", {}).get("jobs", []):
        if not job["steps"]:
            continue
        hosts = set(job["hosts"])
        want = [0] * len(job["steps"])
        for ts, src, dst in retx:
            if src in hosts and dst in hosts:
                b = ts - ts % BIN_NS
                for k, s in enumerate(job["steps"]):
                    if s["start_ns"] <= b < s["end_ns"]:
                        want[k] += 1
        got = [s["evidence"]["tcp_retransmissions"] for s in job["steps"]]
        off = sum(abs(a - b) for a, b in zip(got, want))
        tolerance = max(2, sum(want) // 100)
        check(off <= tolerance, f"{name}: {job['name']}: retransmissions in each of {len(got)} steps as tshark's "
              f"({sum(got)} and {sum(want)} in all, {sum(1 for w in want if w)} steps with some; "
              f"sum of differences {off}, within {tolerance})")
        seen_step_retx += sum(want)
        congesting += sum(s["congesting_bursts"] for s in job["steps"])
    check(congesting <= j["evidence"]["microbursts"]["congesting"],
          f"{name}: the steps' congesting bursts ({congesting}) are among the trace's "
          f"({j['evidence']['microbursts']['congesting']})")
# The congesting bursts from scratch (congesting_bursts.py) on the bottleneck recording, at one tau and at the
# congestion suite's evidence.after (5 Q/R of its queue): the same microbursts and the same verdicts.
bottleneck = os.path.join(root, "data", "testbed", "ddp-ring-w4-bottleneck.pcap")
for after in ("100us", "24ms"):
    j = subprocess.run([exe, "analyze", bottleneck, "--json", "--link-gbps", "10", "--evidence-after", after],
                       capture_output=True, text=True, check=True).stdout
    scratch = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bs-congesting-{os.getpid()}.json")
    with open(scratch, "w") as f:
        f.write(j)
    r = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "congesting_bursts.py"), bottleneck, scratch],
                       capture_output=True, text=True)
    os.remove(scratch)
    check(r.returncode == 0, f"ddp-ring-w4-bottleneck, evidence.after {after}: microbursts and congesting bursts as "
          f"computed from scratch: " + " / ".join(r.stdout.splitlines()))
check(seen_retx >= 100, f"the traces hold retransmissions to compare ({seen_retx} per tshark)")
check(seen_step_retx >= 100, f"the traces' job steps hold retransmissions to compare ({seen_step_retx} per tshark)")
done()
