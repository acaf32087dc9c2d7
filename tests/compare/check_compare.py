#!/usr/bin/env python3
"""burstscope compare (docs/compare.md), end to end through the binary:

1. On committed traces (rings, two jobs, a parameter server, a pipeline and a sharded job), every figure of
   compare's table and the step-shape features (phases per step, idle share) equal what `analyze FILE --json`
   says of that file.
2. Traces from two clearly different synthetic generators (written here as classic pcap files) fall into two
   clusters, one per generator; the seed makes the output identical; --out writes the page, the JSON and CSVs
  (the page itself: check_compare_page.py).

usage: check_compare.py BURSTSCOPE SOURCE_ROOT
"""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import check, done  # noqa: E402

exe, root = sys.argv[1], sys.argv[2]


def run(*args):
    p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
    return p


def write_pcap(path, packets):
    """packets: (ts_ns, src_host, dst_host, src_port, dst_port, wire_len) as Ethernet/IPv4/UDP frames."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))  # nanosecond pcap
        for ts, s, d, sp, dp, length in packets:
            ip_len = length - 14
            eth = bytes.fromhex("020000000002020000000001") + b"\x08\x00"
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0, 0x4000, 64, 17, 0,
                             bytes([10, 9, 0, s]), bytes([10, 9, 0, d]))
            udp = struct.pack("!HHHH", sp, dp, ip_len - 20, 0)
            frame = (eth + ip + udp + bytes(length))[:length]
            cap = frame[:96]
            f.write(struct.pack("<IIII", ts // 10**9, ts % 10**9, len(cap), length))
            f.write(cap)


T0 = 1_700_000_000 * 10**9


def bursty(seed):
    """A synchronous training job: every ~80 ms all four ranks send a ~2 ms burst of MTU frames in a ring."""
    rng = random.Random(seed)
    period = rng.randint(70, 90) * 10**6
    out = []
    for step in range(40):
        start = T0 + step * period + rng.randint(0, 200_000)
        for rank in range(4):
            for i in range(250):
                out.append((start + i * 8_000 + rank * 1_000, rank + 1, (rank + 1) % 4 + 1, 40000 + rank, 5000, 1514))
    out.sort()
    return out


def smooth(seed):
    """Background traffic: many small flows, frames spread evenly in time with random gaps."""
    rng = random.Random(seed)
    out = []
    t = T0
    end = T0 + 3 * 10**9
    while t < end:
        t += rng.randint(20_000, 60_000)
        s = rng.randint(20, 60)
        d = rng.randint(61, 120)
        out.append((t, s, d, 1024 + rng.randint(0, 200), 443, rng.randint(100, 1514)))
    return out


# 1. The table against analyze, file by file.
committed = [os.path.join(root, "data/testbed", f)
             for f in ("ddp-ring-w4.pcap", "two-jobs.pcap", "ps-w4-s1.pcap", "pipeline-w4.pcap", "sharded-w4.pcap")]
committed.append(os.path.join(root, "data/ddp-gloo-w3-3steps.pcap"))
p = run("compare", "--json", *committed)
check(p.returncode == 0, "compare runs on the committed traces")
cmp = json.loads(p.stdout) if p.returncode == 0 else {"traces": []}
check(len(cmp["traces"]) == len(committed), "one table row per trace")
for row, path in zip(cmp["traces"], committed):
    a = json.loads(run("analyze", "--json", path).stdout)
    name = os.path.basename(path)
    same = all(row[k] == a[k] for k in ("packets", "bytes", "first_ns", "last_ns", "mean_bps"))
    check(same, f"{name}: packets, bytes, first/last and mean rate equal analyze's")
    check(row["scales"] == [{"tau_us": s["tau_us"], "envelope_bytes": s["envelope_bytes"], "ptm": s["ptm"]}
                            for s in a["scales"]], f"{name}: E and PtM at every scale equal analyze's")
    check(row["backlog"] == a["backlog"], f"{name}: Bmax at every rate equals analyze's")
    check(row["microbursts"] == a["microbursts"]["count"] and row["flows"] == a["flows"]["entries"],
          f"{name}: microbursts and flows equal analyze's")
    jobs = [(j["name"], j["period"]["period_s"], j["step_bytes"]["mean"] if j.get("step_bytes") else None,
             j["topology"]["kind"], j["phases"]["count"] if j["phases"] else None) for j in a["training"]["jobs"]]
    check([(j["name"], j["period_s"], j["bytes_per_step"], j["topology"], j["phases_per_step"])
           for j in row["jobs"]] == jobs,
          f"{name}: jobs, periods, bytes per step, topologies and phases per step equal analyze's")
    # The step-shape features are the heaviest job's phases (none without a period or phases).
    heavy = max(a["training"]["jobs"], key=lambda j: j["bytes"], default=None)
    ph = heavy["phases"] if heavy and heavy["period"]["period_s"] else None
    want = (ph["count"], ph["idle_share"]) if ph and ph["count"] > 0 else (None, None)
    got = (row["features"].get("phases_per_step"), row["features"].get("step_idle_share"))
    check(got == want, f"{name}: the phases-per-step and step-idle-share features are the heaviest job's {want} "
                       f"(got {got})")
    top = a["flows"]["top"]
    check(row["features"].get("top_flow_share") == (top[0]["share"] if top else None),
          f"{name}: the top-flow share feature is analyze's")

# 2. Two generators, three traces each, interleaved on the command line.
with tempfile.TemporaryDirectory() as tmp:
    files, truth = [], []
    for i in range(3):
        for kind, gen in (("bursty", bursty), ("smooth", smooth)):
            path = os.path.join(tmp, f"{kind}{i}.pcap")
            write_pcap(path, gen(100 + i))
            files.append(path)
            truth.append(kind)
    out_dir = os.path.join(tmp, "out")
    p = run("compare", "--json", "--seed", "7", "--out", out_dir, *files)
    check(p.returncode == 0, "compare runs on the synthetic traces")
    c = json.loads(p.stdout)
    clusters = [t["cluster"] for t in c["traces"]]
    check(c["trace_clusters"]["clustering"]["k"] == 2, f"two clusters found (criterion: "
          f"{c['trace_clusters']['clustering']['criterion']})")
    by_kind = {k: {cl for cl, t in zip(clusters, truth) if t == k} for k in ("bursty", "smooth")}
    check(len(by_kind["bursty"]) == 1 and len(by_kind["smooth"]) == 1 and by_kind["bursty"] != by_kind["smooth"],
          f"the clusters are the generators: {list(zip(truth, clusters))}")
    check(len(c["trace_clusters"]["names"]) >= 5 and all(len(r) == len(c["trace_clusters"]["names"])
                                                        for r in c["trace_clusters"]["normalised"]),
          "the feature vectors are in the output, normalised")
    p2 = run("compare", "--json", "--seed", "7", *files)
    check(p2.stdout == p.stdout, "the same seed gives the same output")
    written = sorted(os.listdir(out_dir))
    check(written == ["compare.html", "compare.json", "flows.csv", "traces.csv"], f"--out writes {written}")
    with open(os.path.join(out_dir, "compare.json")) as f:
        check(json.load(f) == c, "compare.json is what --json prints")
    with open(os.path.join(out_dir, "traces.csv")) as f:
        lines = f.read().splitlines()
    check(len(lines) == 1 + len(files) and lines[0].startswith("row,cluster,"), "traces.csv: a header and a row per trace")

# 3. Errors name the file.
with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "not-a-capture.pcap")
    with open(bad, "w") as f:
        f.write("hello")
    p = run("compare", committed[0], bad)
    check(p.returncode != 0 and "not-a-capture.pcap" in p.stderr, f"an unreadable input is named: {p.stderr.strip()}")

done()
