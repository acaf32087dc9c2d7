#!/usr/bin/env python3
"""RoCEv2 and PFC congestion evidence against tshark (docs/evidence.md), on the committed RoCE samples
(data/roce: IPv4, IPv6, ERSPAN III-wrapped), on traces re-framed at test time by tools/roce/reframe.py (the
testbed's ddp-ring-w4 with events, and two traces with none) and on a small hand-made RDMA READ file.

The truth comes from tshark's dissection of each file, never from reframe.py's summary. Wireshark decodes
UDP destination port 4791 as RoCEv2 ("RRoCE", the infiniband dissector) by default: no decode-as is used,
and the test checks that every frame to port 4791 was dissected as InfiniBand. Payloads are not captured
(96-byte frames), so tshark marks data packets "Invalid Packet Length from LRH" in its Info column; the
BTH, RETH and AETH fields are still dissected. For frames inside ERSPAN, the first (outer) occurrence of each
ip.* field is dropped and the inner one used; an inner frame's length is frame.len less the outer Ethernet,
IPv4, GRE and ERSPAN headers as tshark reports them.

From tshark, per docs/evidence.md:
- CE / ECT: inner ip.dsfield.ecn or ipv6.tclass.ecn == 3 / in (1, 2);
- RoCE packets: frames with infiniband.bth.opcode; CNP: opcode 0x81;
- NAKs: ACKNOWLEDGE packets (opcode 0x11) by infiniband.aeth.syndrome: bits 6-5 == 11 and code 0 ->
  psn_sequence_error, other codes -> other; bits 6-5 == 01 -> rnr;
- resent packets: per (source, destination, infiniband.bth.destqp) in file order, data packets (SEND, RDMA
  WRITE, RDMA READ response) whose PSN is not after the highest data PSN so far ((highest - PSN) mod 2^24 <
  2^23);
- messages: not-resent packets with a message-starting opcode, and RDMA READ requests; message bytes: the IB
  payload (udp.length - 8 - BTH - RETH/ImmDt - pad - ICRC) of not-resent SEND/WRITE packets (and, as a check
  of the file, the RETH DMA lengths of the not-resent WRITE FIRST/ONLY packets add up to the WRITE payload);
- PFC: per priority whose macc.cbfc.enbv bit is set, one frame with macc.cbfc.pause_time.cN quanta; 802.3x
  PAUSE (macc.opcode 1) under "all" with macc.pause_time; paused time at 10 Gbit/s (analyze's default link):
  a frame pauses its priority for quanta x 51.2 ns from its time, until the next frame of that priority or
  the trace's last frame;
- per 100 us bin: CE, CNP, NAK, resent and pause events against evidence.bins[]; each listed congesting
  microburst's evidence against the bins overlapping [start, end + after] (bounded: burstscope matches hosts
  by a 64-bit hash);
- per queue pair (source, destination, destination QP): frames and bytes (frame.len, inner) against the
  rocev2 entries of flows.top[], CE/CNP/NAK/resent against evidence.flows[], CNPs per target against
  evidence.cnp_targets[].
Also: the IPv6 and ERSPAN samples carry the same evidence as the IPv4 one; a trace re-framed with
--no-events has the original TCP trace's packet and byte counts, E(tau) at every scale, Bmax at every rate
and microbursts (the re-framing keeps every frame's time and wire length).
TAP output. Usage: roce_tshark.py BURSTSCOPE SOURCE_ROOT"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap import check, done  # noqa: E402

exe, root = sys.argv[1], sys.argv[2]
MASK24 = 0xFFFFFF
LINK_BPS = 10e9
BIN_NS = 100_000
SIX = ("ce", "cnp", "naks", "roce_resent", "pause_frames")


def note(text):
    for line in text.splitlines():
        print("#", line, flush=True)


FIELDS = ["frame.number", "frame.time_epoch", "frame.len", "ip.src", "ip.dst", "ip.hdr_len", "ipv6.src",
          "ipv6.dst", "ip.dsfield.ecn", "ipv6.tclass.ecn", "udp.dstport", "udp.length", "gre.flags.checksum",
          "gre.flags.key", "gre.flags.sequence_number", "erspan.version", "erspan.o", "infiniband.bth.opcode",
          "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.padcnt", "infiniband.aeth.syndrome",
          "infiniband.reth.dmalen", "macc.opcode", "macc.pause_time", "macc.cbfc.enbv"] + \
    [f"macc.cbfc.pause_time.c{p}" for p in range(8)]
OUTER_IP = ("ip.src", "ip.dst", "ip.hdr_len", "ip.dsfield.ecn")


def tshark_rows(path):
    cmd = ["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a",
           "-E", "aggregator=,"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        cols = line.split("\t")
        rows.append({f: (cols[i].split(",") if i < len(cols) and cols[i] != "" else []) for i, f in enumerate(FIELDS)})
    return rows


def num(v):
    return int(v, 0)


def ts_ns(s):
    sec, _, frac = s.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def ib_ext(op):
    """Bytes of RETH/ImmDt/AETH/... after the BTH, as docs/evidence.md's decoder reads them."""
    if op == 0x81:
        return 16
    if op >= 0x40:
        return 0
    o, rc, ext = op & 0x1F, op < 0x20, 0
    if o in (0x06, 0x0A, 0x0B) or (rc and o == 0x0C):
        ext += 16
    if o in (0x03, 0x05, 0x09, 0x0B):
        ext += 4
    if rc and o in (0x16, 0x17):
        ext += 4
    if rc and o in (0x0D, 0x0F, 0x10, 0x11, 0x12):
        ext += 4
    if rc and o in (0x13, 0x14):
        ext += 28
    if rc and o == 0x12:
        ext += 8
    return ext


STARTS = {0x00, 0x04, 0x05, 0x06, 0x0A, 0x0B, 0x0C, 0x20, 0x24, 0x25, 0x26, 0x2A, 0x2B}
DATA_OPS = set(range(0x00, 0x0C)) | set(range(0x20, 0x2C))  # SEND and RDMA WRITE, RC and UC
CARRIES_DATA = DATA_OPS | set(range(0x0D, 0x11))  # and RDMA READ responses


def truth(path, erspan=False):
    rows = tshark_rows(path)
    t = {"frames": len(rows), "ip_packets": 0, "ect": 0, "ce": 0, "roce_packets": 0, "cnp": 0,
         "psn_sequence_error": 0, "rnr": 0, "other": 0, "roce_resent": 0, "roce_messages": 0,
         "roce_message_bytes": 0, "pause_frames": 0, "dma_total": 0, "write_bytes": 0, "udp4791": 0, "wrapped": 0}
    qps = {}
    pfc = {}
    pauses = {}  # priority -> [(ts, quanta)]
    highest = {}
    last_ts = None
    bins = {}  # 100 us bin start -> [ce, cnp, naks, roce_resent, pause_frames]
    bin_hosts = {}  # 100 us bin start -> the addresses of its IP packets
    event_hosts = {}  # 100 us bin start -> the addresses of the packets with evidence (None: every host)

    def event(ts, i, hosts):
        b = bins.setdefault(ts - ts % BIN_NS, [0, 0, 0, 0, 0])
        b[i] += 1
        h = event_hosts.setdefault(ts - ts % BIN_NS, set())
        if hosts is None or h is None:
            event_hosts[ts - ts % BIN_NS] = None
        else:
            h.update(hosts)
    for r in rows:
        ts = ts_ns(r["frame.time_epoch"][0])
        last_ts = ts if last_ts is None else max(last_ts, ts)
        length = int(r["frame.len"][0])
        if erspan:
            if r["erspan.version"]:
                t["wrapped"] += 1
                gre = 4 + 4 * sum(1 for f in ("gre.flags.checksum", "gre.flags.key", "gre.flags.sequence_number")
                                  if r[f] and r[f][0] in ("1", "True"))
                ver = int(r["erspan.version"][0])
                hdr = 8 if ver == 1 else 12 + (8 if r["erspan.o"] and r["erspan.o"][0] not in ("0", "False") else 0)
                length -= 14 + int(r["ip.hdr_len"][0]) + gre + hdr
            for f in OUTER_IP:
                r[f] = r[f][1:]
        src = (r["ip.src"] or r["ipv6.src"] or [None])[-1]
        dst = (r["ip.dst"] or r["ipv6.dst"] or [None])[-1]
        ecn_v = r["ip.dsfield.ecn"] or r["ipv6.tclass.ecn"]
        hosts = (src, dst)
        if ecn_v:
            bin_hosts.setdefault(ts - ts % BIN_NS, set()).update(hosts)
            t["ip_packets"] += 1
            ecn = num(ecn_v[-1])
            t["ect"] += ecn in (1, 2)
            t["ce"] += ecn == 3
            if ecn == 3:
                event(ts, 0, hosts)
        if r["udp.dstport"] and r["udp.dstport"][-1] == "4791":
            t["udp4791"] += 1
        if r["infiniband.bth.opcode"]:
            t["roce_packets"] += 1
            op = num(r["infiniband.bth.opcode"][-1])
            qp = num(r["infiniband.bth.destqp"][-1])
            psn = num(r["infiniband.bth.psn"][-1])
            key = (src, dst, qp)
            q = qps.setdefault(key, {"packets": 0, "bytes": 0, "ce": 0, "cnp": 0, "naks": 0, "resent": 0})
            q["packets"] += 1
            q["bytes"] += length
            q["ce"] += bool(ecn_v) and num(ecn_v[-1]) == 3
            if op == 0x81:
                t["cnp"] += 1
                q["cnp"] += 1
                event(ts, 1, hosts)
                continue
            if op == 0x11 and r["infiniband.aeth.syndrome"]:
                s = num(r["infiniband.aeth.syndrome"][-1])
                kind = (s >> 5) & 3
                if kind == 3:
                    t["psn_sequence_error" if s & 0x1F == 0 else "other"] += 1
                    q["naks"] += 1
                    event(ts, 2, hosts)
                elif kind == 1:
                    t["rnr"] += 1
                    q["naks"] += 1
                    event(ts, 2, hosts)
            if op not in CARRIES_DATA:
                t["roce_messages"] += op in STARTS  # an RDMA READ request: a message, not a data packet
                continue
            if key in highest and ((highest[key] - psn) & MASK24) < 0x800000:
                t["roce_resent"] += 1
                q["resent"] += 1
                event(ts, 3, hosts)
                continue
            highest[key] = psn
            if op in STARTS:
                t["roce_messages"] += 1
            if op in DATA_OPS:
                udp_len = int(r["udp.length"][-1])
                pad = num(r["infiniband.bth.padcnt"][-1])
                payload = max(0, udp_len - (8 + 12 + ib_ext(op) + pad + 4))
                t["roce_message_bytes"] += payload
                if (op & 0x1F) in range(0x06, 0x0C):
                    t["write_bytes"] += payload
                if r["infiniband.reth.dmalen"] and op in (0x06, 0x0A, 0x0B, 0x26, 0x2A, 0x2B):
                    t["dma_total"] += int(r["infiniband.reth.dmalen"][-1])
        if r["macc.opcode"]:
            mop = num(r["macc.opcode"][-1])
            if mop in (0x0001, 0x0101):
                event(ts, 4, None)
            if mop == 0x0001:
                t["pause_frames"] += 1
                quanta = int(r["macc.pause_time"][-1])
                c = pfc.setdefault("all", {"frames": 0, "quanta": 0})
                c["frames"] += 1
                c["quanta"] += quanta
                pauses.setdefault("all", []).append((ts, quanta))
            elif mop == 0x0101:
                t["pause_frames"] += 1
                cev = num(r["macc.cbfc.enbv"][-1])
                for p in range(8):
                    if cev >> p & 1:
                        quanta = int(r[f"macc.cbfc.pause_time.c{p}"][-1])
                        c = pfc.setdefault(str(p), {"frames": 0, "quanta": 0})
                        c["frames"] += 1
                        c["quanta"] += quanta
                        pauses.setdefault(str(p), []).append((ts, quanta))
    for p, evs in pauses.items():
        paused = 0
        for i, (ts, quanta) in enumerate(evs):
            until = ts + int(quanta * 512e9 / LINK_BPS)
            stop = evs[i + 1][0] if i + 1 < len(evs) else last_ts
            paused += max(0, min(until, stop) - ts)
        pfc[p]["paused_ns"] = paused
    t["qps"] = qps
    t["pfc"] = pfc
    t["bins"] = bins
    t["bin_hosts"] = bin_hosts
    t["event_hosts"] = event_hosts
    return t


def analyze(path):
    p = subprocess.run([exe, "analyze", path, "--json", "--top-k", "1000"], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"Bail out! burstscope analyze {path} --json failed ({p.returncode}): {p.stderr.strip()[:300]}")
        sys.exit(1)
    return json.loads(p.stdout)


def parse_flow_key(key):
    # "10.77.0.3 > 10.77.0.2 qp 0x78e512 rocev2"
    parts = key.split()
    return parts[0], parts[2], int(parts[4], 16)


def compare(name, path, t, j, expect_events):
    note(f"{name}: tshark truth: " + json.dumps({k: v for k, v in t.items() if k not in ("qps", "pfc", "bins", "bin_hosts", "event_hosts")}))
    note(f"{name}: tshark PFC: " + json.dumps(t["pfc"]))
    check(t["udp4791"] > 0 and t["udp4791"] == t["roce_packets"],
          f"{name}: tshark dissects all {t['udp4791']} frames to UDP 4791 as RoCEv2 ({t['roce_packets']}) without decode-as")
    if "evidence" not in j:
        check(False, f"{name}: analyze --json has an evidence section")
        return
    e = j["evidence"]
    tot = e["totals"]
    check(j["packets"] == t["frames"], f"{name}: packets {j['packets']}, tshark frames {t['frames']}")
    for field in ("ip_packets", "ect", "ce", "roce_packets", "cnp", "roce_resent", "roce_messages",
                  "roce_message_bytes", "pause_frames"):
        check(tot[field] == t[field], f"{name}: evidence.totals.{field} {tot[field]}, tshark {t[field]}")
    for field in ("psn_sequence_error", "rnr", "other"):
        check(tot["naks"][field] == t[field], f"{name}: evidence.totals.naks.{field} {tot['naks'][field]}, tshark {t[field]}")
    if expect_events:
        for field in ("ce", "cnp", "psn_sequence_error", "rnr", "other", "roce_resent", "pause_frames"):
            check(t[field] > 0, f"{name}: the sample holds {field} events to compare (tshark {t[field]})")
        check("3" in t["pfc"] and "4" in t["pfc"] and "all" in t["pfc"],
              f"{name}: the sample holds PFC frames for priorities 3 and 4 and an 802.3x PAUSE ({sorted(t['pfc'])})")
        check(any(c["quanta"] < 0xFFFF * c["frames"] for c in t["pfc"].values()),
              f"{name}: the sample holds a PFC resume (quanta 0)")
    check(t["dma_total"] == t["write_bytes"],
          f"{name}: the RETH DMA lengths of the WRITE messages add up to their IB payload ({t['dma_total']}, {t['write_bytes']})")
    # Evidence per 100 us bin, and the evidence of each listed (congesting) microburst.
    got_bins = {b["start_ns"]: [b[f] for f in SIX] for b in e["bins"]}
    want_bins = {k: v for k, v in t["bins"].items() if any(v)}
    diff = sorted(set(got_bins) ^ set(want_bins)) + sorted(k for k in set(got_bins) & set(want_bins)
                                                             if got_bins[k] != want_bins[k])
    check(not diff and all(b["tcp_retransmissions"] == 0 for b in e["bins"]),
          f"{name}: evidence.bins[] ({len(got_bins)} bins) hold tshark's events per 100 us bin ({len(want_bins)} bins)" +
          (f"; first difference at {diff[0]}: got {got_bins.get(diff[0])}, tshark {want_bins.get(diff[0])}" if diff else ""))
    mb = e["microbursts"]
    after = e["after_ns"]
    bad = []
    for m in mb["events"]:
        # The burst's hosts: those of every IP packet in the bins it spans. A bin's evidence counts toward it
        # when the bin's evidence came from or went to one of them (a pause frame: every host). burstscope
        # keeps hosts as bits of a 64-bit hash, so a collision can add a bin: exact truth is a lower bound,
        # every overlapping bin an upper one.
        hosts = set()
        for b in range(m["start_ns"] - m["start_ns"] % BIN_NS, m["end_ns"] + 1, BIN_NS):
            hosts |= t["bin_hosts"].get(b, set())
        low, high = [0] * 5, [0] * 5
        for start, v in want_bins.items():
            if m["start_ns"] - BIN_NS < start <= m["end_ns"] + after:
                high = [x + y for x, y in zip(high, v)]
                eh = t["event_hosts"].get(start)
                if eh is None or eh & hosts:
                    low = [x + y for x, y in zip(low, v)]
        have = [m["evidence"][f] for f in SIX]
        if not any(have) or not all(lo <= h <= hi for lo, h, hi in zip(low, have, high)):
            bad.append(f"{m['start_ns']}: got {have}, tshark's bins: {low} from its hosts, {high} in all")
    check(not bad and (mb["congesting"] > 0 or not expect_events),
          f"{name}: {mb['congesting']} of {mb['count']} microbursts congesting; each listed one holds the events of "
          f"tshark's bins that overlap [start, end + {after} ns] with evidence of its hosts" +
          ("; " + "; ".join(bad[:3]) if bad else ""))
    # PFC per priority.
    got = {c["priority"]: c for c in e["pfc"]}
    check(sorted(got) == sorted(t["pfc"]), f"{name}: pfc priorities {sorted(got)}, tshark {sorted(t['pfc'])}")
    for p, c in sorted(t["pfc"].items()):
        g = got.get(p, {"frames": None, "quanta": None, "paused_ns": None})
        check(g["frames"] == c["frames"] and g["quanta"] == c["quanta"],
              f"{name}: pfc priority {p}: frames {g['frames']}, quanta {g['quanta']}; tshark {c['frames']}, {c['quanta']}")
        ok = g["paused_ns"] is not None and abs(g["paused_ns"] - c["paused_ns"]) <= c["frames"]
        check(ok, f"{name}: pfc priority {p}: paused_ns {g['paused_ns']}, from tshark's times {c['paused_ns']} (within 1 ns a frame)")
    # Per queue pair: bytes and packets in flows.top[], evidence in evidence.flows[].
    top = {}
    for f in j["flows"]["top"]:
        if f.get("kind") == "rocev2":
            top[(f["src"], f["dst"], f["qp"])] = f
    ev_flows = {}
    for f in e["flows"]:
        if f.get("kind") == "rocev2":
            ev_flows[parse_flow_key(f["key"])] = f
    check(sorted(top) == sorted(t["qps"]),
          f"{name}: rocev2 flows in flows.top[] ({len(top)}) are tshark's (source, destination, QP) keys ({len(t['qps'])})")
    bad = []
    for k, q in sorted(t["qps"].items()):
        f = top.get(k)
        if f is None or f["bytes"] != q["bytes"] or f["packets"] != q["packets"]:
            bad.append(f"{k}: got {None if f is None else (f['packets'], f['bytes'])}, tshark {(q['packets'], q['bytes'])}")
    check(not bad, f"{name}: per-QP packets and bytes equal tshark's frame.len sums on all {len(t['qps'])} QPs" +
          ("; " + "; ".join(bad[:4]) if bad else ""))
    bad = []
    for k, q in sorted(t["qps"].items()):
        f = ev_flows.get(k)
        want = (q["ce"], q["cnp"], q["naks"], q["resent"])
        have = (0, 0, 0, 0) if f is None else (f["ce"], f["cnp"], sum(f["naks"].values()), f["roce_resent"])
        if want != have:
            bad.append(f"{k}: (ce, cnp, naks, resent) got {have}, tshark {want}")
    check(not bad, f"{name}: per-QP CE/CNP/NAK/resent in evidence.flows[] equal tshark's" +
          ("; " + "; ".join(bad[:4]) if bad else ""))
    targets = {}
    for k, q in t["qps"].items():
        if q["cnp"]:
            targets[(k[1], k[2])] = targets.get((k[1], k[2]), 0) + q["cnp"]
    got_t = {(c["host"], c["qp"]): c["cnp"] for c in e["cnp_targets"]}
    want_t = dict(sorted(targets.items(), key=lambda kv: -kv[1])[:10]) if len(targets) <= 10 else None
    if want_t is not None:
        check(got_t == want_t, f"{name}: cnp_targets {sorted(got_t.items())}, tshark {sorted(want_t.items())}")


if shutil.which("tshark") is None:
    print("Bail out! tshark is not installed (scripts/setup.sh installs it)")
    sys.exit(1)
if not os.path.exists(exe):
    print(f"Bail out! no burstscope binary at {exe}")
    sys.exit(1)

started = time.time()
tool = os.path.join(root, "tools", "roce", "reframe.py")
samples = os.path.join(root, "data", "roce")
v4 = os.path.join(samples, "roce-ddp-w3.pcap")
v6 = os.path.join(samples, "roce-ddp-w3-v6.pcap")
er = os.path.join(samples, "roce-ddp-w3-erspan3.pcap")

results = {}
for name, path, erspan in (("roce-ddp-w3", v4, False), ("roce-ddp-w3-v6", v6, False),
                           ("roce-ddp-w3-erspan3", er, True)):
    t = truth(path, erspan)
    j = analyze(path)
    if erspan:
        check(t["wrapped"] == t["frames"], f"{name}: tshark sees every frame inside ERSPAN ({t['wrapped']}/{t['frames']})")
    compare(name, path, t, j, True)
    results[name] = (t, j)

# The variants carry the same evidence (bursts are found on the input's bytes; sizes differ in v6 only).
t4, j4 = results["roce-ddp-w3"]
for other in ("roce-ddp-w3-v6", "roce-ddp-w3-erspan3"):
    t, j = results[other]
    same = {k: v for k, v in t.items() if k not in ("qps", "pfc", "bins", "bin_hosts", "event_hosts", "wrapped", "udp4791")}
    base = {k: v for k, v in t4.items() if k not in ("qps", "pfc", "bins", "bin_hosts", "event_hosts", "wrapped", "udp4791")}
    check(same == base, f"{other}: tshark's evidence equals the IPv4 sample's")
    if "evidence" in j and "evidence" in j4:
        check(j["evidence"]["totals"] == j4["evidence"]["totals"], f"{other}: evidence.totals equal the IPv4 sample's")
if "evidence" in j4:
    jer = results["roce-ddp-w3-erspan3"][1]
    check(jer["scales"] == j4["scales"] and jer["backlog"] == j4["backlog"],
          "roce-ddp-w3-erspan3: E(tau) and Bmax equal the unwrapped sample's (the mirror's headers are not counted)")


def read_case(path):
    """A small hand-made file for what the samples lack (docs/evidence.md's rules for it): an RDMA READ request
    (a message, not a data packet), READ responses (data packets: a resent one counts, their AETH is not a NAK
    even with a NAK syndrome, their payload is not message bytes), an atomic ACKNOWLEDGE (0x12), a WRITE_ONLY
    and a NAK. Built with reframe.py's frame helpers."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("reframe", tool)
    rf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rf)
    net = rf.Net(False)
    a, b = bytes([10, 9, 0, 1]), bytes([10, 9, 0, 2])
    ab, ba = bytes.fromhex("020900000002020900000001"), bytes.fromhex("020900000001020900000002")
    q_resp, q_req = 0x00ABCD, 0x00FEDC
    reth = struct.pack("!QII", 0x10000, 0x77, 3072)
    pkts = [  # (from a?, opcode, destqp, psn, ext headers, payload, pad)
        (True, 0x0C, q_resp, 100, reth, 0, 0),                      # READ request: a message
        (False, 0x0D, q_req, 100, rf.aeth(0x1F, 0), 1024, 0),       # READ response FIRST
        (False, 0x0E, q_req, 101, b"", 1024, 0),                    # MIDDLE
        (False, 0x0E, q_req, 101, b"", 1024, 0),                    # MIDDLE again: resent
        (False, 0x0F, q_req, 102, rf.aeth(0x60, 1), 1021, 3),      # LAST with a NAK-looking syndrome: no NAK
        (False, 0x12, q_req, 103, rf.aeth(0x1F, 2) + bytes(8), 0, 0),  # atomic ACKNOWLEDGE
        (True, 0x0A, q_resp, 7, struct.pack("!QII", 0x20000, 0x77, 64), 64, 0),  # WRITE_ONLY: 64 message bytes
        (False, 0x11, q_req, 7, rf.aeth(0x61, 3), 0, 0),           # NAK (other) on an ACKNOWLEDGE
    ]
    frames = []
    for i, (fwd, op, qp, psn, ext, payload, pad) in enumerate(pkts):
        hdr = rf.bth(op, pad, qp, psn) + ext
        data, wire = rf.roce_frame(net, ab if fwd else ba, a if fwd else b, b if fwd else a, 50000 + fwd,
                                   (26 << 2) | 2, i, hdr, payload, pad, None, 65535)
        frames.append((1_800_000_000_000_000_000 + i * 1000, data, wire))
    rf.write_pcap(path, True, 65535, frames)


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "read.pcap")
    read_case(out)
    t, j = truth(out), analyze(out)
    note("rdma-read (hand-made): tshark truth: " + json.dumps({k: v for k, v in t.items() if k not in
                                                                ("qps", "pfc", "bins", "bin_hosts", "event_hosts")}))
    check(t["roce_packets"] == 8 and t["roce_messages"] == 2 and t["roce_resent"] == 1 and t["other"] == 1 and
          t["psn_sequence_error"] == 0 and t["roce_message_bytes"] == 64,
          "rdma-read (hand-made): tshark truth is 8 RoCE packets, 2 messages (a READ request, a WRITE), 1 resent "
          "READ response, 1 NAK (other), 64 message bytes")
    tot = j["evidence"]["totals"] if "evidence" in j else {}
    for field in ("roce_packets", "roce_messages", "roce_message_bytes", "roce_resent"):
        check(tot.get(field) == t[field], f"rdma-read (hand-made): evidence.totals.{field} {tot.get(field)}, tshark {t[field]}")
    naks = tot.get("naks", {})
    check(naks == {"psn_sequence_error": t["psn_sequence_error"], "rnr": t["rnr"], "other": t["other"]},
          f"rdma-read (hand-made): evidence.totals.naks {naks}, tshark (NAKs on ACKNOWLEDGE only) "
          f"{t['psn_sequence_error']}/{t['rnr']}/{t['other']}")

with tempfile.TemporaryDirectory() as tmp:
    # A second trace, re-framed now: 4 ranks, 13 connections, small messages sent as SEND, TCP SYN/FIN/RST
    # kept as TCP, ARP frames, another seed.
    ring = os.path.join(root, "data", "testbed", "ddp-ring-w4.pcap")
    out = os.path.join(tmp, "roce-ring.pcap")
    subprocess.run([sys.executable, tool, "--seed", "7", "--burst-quantile", "0.9", "--ce-rate", "0.1", "--gbn", "4",
                    ring, out], check=True, capture_output=True)
    compare("roce-ring-w4 (seed 7)", out, truth(out), analyze(out), True)
    # With no events the re-framed trace is the TCP trace's frames, times and wire lengths.
    for src in (os.path.join(root, "data", "ddp-gloo-w3-3steps.pcap"), ring):
        base = os.path.basename(src)
        out = os.path.join(tmp, "noevents-" + base)
        subprocess.run([sys.executable, tool, "--no-events", src, out], check=True, capture_output=True)
        a, b = analyze(src), analyze(out)
        for field in ("packets", "bytes", "first_ns", "last_ns"):
            check(a[field] == b[field], f"{base} --no-events: {field} {b[field]}, TCP trace {a[field]}")
        check(a["scales"] == b["scales"], f"{base} --no-events: E(tau) at every scale equals the TCP trace's "
              f"({[s['envelope_bytes'] for s in b['scales']]})")
        check(a["backlog"] == b["backlog"], f"{base} --no-events: Bmax at every rate equals the TCP trace's "
              f"({[x['max_backlog_bytes'] for x in b['backlog']]})")
        check(a["microbursts"] == b["microbursts"], f"{base} --no-events: microbursts equal the TCP trace's "
              f"({b['microbursts']['count']})")
        t = truth(out)
        check(t["roce_packets"] > 0 and t["ce"] == t["cnp"] == t["roce_resent"] == t["pause_frames"] == 0,
              f"{base} --no-events: tshark sees {t['roce_packets']} RoCE packets and no events")
        if "evidence" in b:
            tot = b["evidence"]["totals"]
            check(tot["roce_packets"] == t["roce_packets"] and tot["roce_messages"] == t["roce_messages"] and
                  tot["roce_message_bytes"] == t["roce_message_bytes"] and tot["roce_resent"] == 0,
                  f"{base} --no-events: RoCE packets {tot['roce_packets']}, messages {tot['roce_messages']}, "
                  f"message bytes {tot['roce_message_bytes']}, resent {tot['roce_resent']}; tshark "
                  f"{t['roce_packets']}, {t['roce_messages']}, {t['roce_message_bytes']}, 0")

note(f"took {time.time() - started:.1f} s")
done()
