#!/usr/bin/env python3
"""SPEC "Overload", checked from scratch against a capture file a live run replayed while losing frames.

usage: overload_bounds.py RUN_JSON PCAP

RUN_JSON is `burstscope run --json` of a net_pcap replay of PCAP (classic pcap, microsecond or nanosecond) that
lost frames at its rings. Computed here from the file alone (stdlib; no burstscope code): every frame's time and
wire length, the 100 us bins, each interval's totals and exact E(tau) = max over t in [start, end) of the bytes
in (t - tau, t]. Held to the run's report:
- the complete series: its totals equal the file's, every frame once, although the analysis lost some;
- every frame lost at a ring lies in a degraded interval (the degraded intervals' losses add up to the ledger's
  ring drops), and each degraded interval's series totals equal the file's frames in that interval;
- each degraded interval's E(tau), at every scale the run computed packet-exactly: a bounded scale's
  [lower, upper] holds the truth and is at most one 100 us bin wide (the file's largest bin); a scale not
  bounded (no loss within its windows) equals the truth;
- each degraded interval's microburst count, when bounded: [at least, at most] holds the number of the file's
  microbursts (SPEC: maximal stretches with the bytes in (t - tau, t] at or above threshold * capacity * tau / 8)
  with an instant in the interval.
Prints one line per check and exits 1 on the first failure.
"""
import bisect
import json
import math
import struct
import sys

from congesting_bursts import microbursts  # the file's microbursts, from scratch (same folder)

BIN_NS = 100_000


def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic == 0xA1B2C3D4:
        endian, scale = "<", 1000
    elif magic == 0xA1B23C4D:
        endian, scale = "<", 1
    elif magic == 0xD4C3B2A1:
        endian, scale = ">", 1000
    elif magic == 0x4D3CB2A1:
        endian, scale = ">", 1
    else:
        sys.exit(f"{path}: not a classic pcap file")
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack(endian + "IIII", data[off : off + 16])
        out.append((sec * 1_000_000_000 + frac * scale, orig))
        off += 16 + incl
    return out


def main():
    report = json.load(open(sys.argv[1]))
    pkts = frames(sys.argv[2])
    times = [t for t, _ in pkts]
    prefix = [0]
    for _, n in pkts:
        prefix.append(prefix[-1] + n)
    bins = {}
    for t, n in pkts:
        bins[t // BIN_NS] = bins.get(t // BIN_NS, 0) + n
    max_bin = max(bins.values())

    port = report["ports"][0]
    o = port["overload"]
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok: " if ok else "FAIL: ") + what)
        failures += not ok

    lost_frames = port["ledger"]["dropped"]["ring_full"]
    check(lost_frames > 0, f"the replay lost frames at its rings ({lost_frames} of {len(pkts)})")
    check(
        o["series_packets"] == len(pkts) and o["series_bytes"] == prefix[-1],
        f"the complete series holds every frame: {o['series_packets']} frames, {o['series_bytes']} bytes "
        f"(file: {len(pkts)}, {prefix[-1]})",
    )
    check(
        len(o["degraded"]) == o["degraded_intervals"] and sum(d["lost_packets"] for d in o["degraded"]) == lost_frames,
        f"every lost frame lies in one of the {o['degraded_intervals']} degraded intervals",
    )
    exact_max = max((s["tau_us"] * 1000 for s in port["scales"] if s.get("exact")), default=0)

    def bytes_in(a, b):  # frames with a <= t < b
        return prefix[bisect.bisect_left(times, b)] - prefix[bisect.bisect_left(times, a)]

    def envelope(start, end, tau):  # max over t in [start, end) of the bytes in (t - tau, t]
        best = 0
        i0, i1 = bisect.bisect_left(times, start), bisect.bisect_left(times, end)
        for i in range(i0, i1):
            t = times[i]
            best = max(best, prefix[bisect.bisect_right(times, t)] - prefix[bisect.bisect_right(times, t - tau)])
        return best

    mb = port["microbursts"]
    mb_tau = mb["tau_us"] * 1000
    bursts = microbursts(pkts, mb_tau, math.ceil(mb["threshold"] * mb["link_capacity_bps"] * mb_tau / 8e9))
    mb_bounded = mb_held = 0
    bounded = held = 0
    for d in o["degraded"]:
        start, end = d["start_ns"], d["end_ns"]
        n = bisect.bisect_left(times, end) - bisect.bisect_left(times, start)
        if d["packets"] != n or d["bytes"] != bytes_in(start, end):
            check(False, f"interval {start}: series {d['packets']} frames {d['bytes']} B, file {n}, {bytes_in(start, end)}")
        if not d["complete"]:
            check(False, f"interval {start}: the series has a hole (side channel full)")
            continue
        for s in d["scales"]:
            tau = s["tau_ns"]
            if tau > exact_max:
                continue
            truth = envelope(start, end, tau)
            lo, hi = s["envelope_bytes"]
            if s["bounded"]:
                bounded += 1
                if not (lo <= truth <= hi and hi - lo <= max_bin):
                    check(False, f"interval {start} tau {tau}: [{lo}, {hi}] against the truth {truth} (a bin: {max_bin})")
                else:
                    held += 1
            elif not lo == hi == truth:
                check(False, f"interval {start} tau {tau}: not bounded, but {lo}..{hi} against the truth {truth}")
        if "microbursts" in d:
            mb_bounded += 1
            truth = sum(1 for a, z in bursts if a < end and z > start)
            lo, hi = d["microbursts"]
            if lo <= truth <= hi:
                mb_held += 1
            else:
                check(False, f"interval {start}: microbursts [{lo}, {hi}] against the truth {truth}")
    check(bounded > 0 and held == bounded,
          f"{held} of {bounded} bounded E(tau) hold the truth and are within one bin ({max_bin} B) of each other")
    check(mb_bounded > 0 and mb_held == mb_bounded,
          f"{mb_held} of {mb_bounded} bounded microburst counts hold the file's ({len(bursts)} microbursts in all)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
