#!/usr/bin/env python3
"""Which microbursts of a capture are congesting, computed from scratch, and held against `analyze --json`.

An independent second computation of what burstscope's congestion evidence computes (docs/evidence.md, SPEC
"Microburst" and "Congesting burst"), from the capture's frames as tshark reads them:
  - microbursts: the maximal stretches where A(t - tau, t) * 8 / tau >= theta * C, A over (t - tau, t], from
    the frames' wire lengths (tau, theta and C from analyze's own `microbursts` block);
  - TCP retransmissions: tshark's tcp.analysis.retransmission (Wireshark's rule is the SPEC's reference);
  - a burst is congesting when a 100 us aligned base bin overlapping [start, end + after] holds a
    retransmission whose hosts meet the hosts of the packets in the burst's own bins (exact host sets here;
    burstscope keeps a 64-bit hashed signature, docs/evidence.md).
It checks that burstscope finds the same microbursts (count, and the start and end of every one it lists) and
the same congesting ones, up to the few whose only evidence is a segment that tshark and burstscope classify
differently (the two retransmission counts agree within a few per cent). Nothing here depends on when TCP
happened to resend: the share of retransmissions that fell inside congesting bursts' windows, which does, is
printed as a measurement.
usage: congesting_bursts.py CAPTURE ANALYZE_JSON   (exit 0: agree; 1: disagree; prints what it found)
"""
import json
import subprocess
import sys

BIN = 100_000  # the engine's base bin (ns), aligned to the epoch


def ns(text):
    """'1795533753.208115966' -> int nanoseconds, without a float's rounding."""
    sec, _, frac = text.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def frames(capture):
    """(ts_ns, wire_len, src, dst, number) of every frame, in capture order; src/dst empty for non-IP."""
    out = subprocess.run(["tshark", "-n", "-r", capture, "-T", "fields", "-E", "separator=\t",
                          "-e", "frame.number", "-e", "frame.time_epoch", "-e", "frame.len",
                          "-e", "ip.src", "-e", "ip.dst", "-e", "ipv6.src", "-e", "ipv6.dst"],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        # A mirror that wraps frames (VXLAN, ERSPAN) gives several addresses: the inner ones are the hosts.
        src = (f[3] or f[5]).split(",")[-1]
        dst = (f[4] or f[6]).split(",")[-1]
        rows.append((ns(f[1]), int(f[2]), src, dst, int(f[0])))
    return rows


def retransmissions(capture):
    out = subprocess.run(["tshark", "-n", "-r", capture, "-Y", "tcp.analysis.retransmission", "-T", "fields",
                          "-e", "frame.number"], capture_output=True, text=True, check=True).stdout
    return {int(x) for x in out.split()}


def microbursts(rows, tau, threshold_bytes):
    """[(start, end)] of the maximal stretches with A(t - tau, t) >= threshold_bytes (A over (t - tau, t])."""
    ts = sorted((t, n) for t, n, *_ in rows)
    out, s, i, j, start = [], 0, 0, 0, None
    # Events: an arrival at t adds from t on; its departure at t + tau removes from t + tau on. All events at
    # one instant apply before the sum is read.
    while i < len(ts) or j < i:
        never = 1 << 80
        t = min(ts[i][0] if i < len(ts) else never, ts[j][0] + tau if j < i else never)
        while j < i and ts[j][0] + tau == t:
            s -= ts[j][1]
            j += 1
        while i < len(ts) and ts[i][0] == t:
            s += ts[i][1]
            i += 1
        if start is None and s >= threshold_bytes:
            start = t
        elif start is not None and s < threshold_bytes:
            out.append((start, t))
            start = None
    return out


def main():
    capture, analyze = sys.argv[1], json.load(open(sys.argv[2]))
    mb, ev = analyze["microbursts"], analyze["evidence"]
    tau = int(mb["tau_us"]) * 1000
    threshold_bytes = mb["threshold"] * mb["link_capacity_bps"] * tau / 8e9
    after = int(ev["after_ns"])
    rows = frames(capture)
    retx = retransmissions(capture)
    bursts = microbursts(rows, tau, threshold_bytes)

    hosts_in_bin, retx_in_bin = {}, {}
    for t, _, src, dst, number in rows:
        b = t // BIN
        if src:
            hosts_in_bin.setdefault(b, set()).update((src, dst))
        if number in retx:
            retx_in_bin.setdefault(b, []).append({src, dst})
    congesting = set()
    for start, end in bursts:
        hosts = set()
        for b in range(start // BIN, end // BIN + 1):
            hosts |= hosts_in_bin.get(b, set())
        # Bins overlapping [start, end + after]: start - BIN < bin start <= end + after.
        first, last = (start - BIN) // BIN + 1, (end + after) // BIN
        if any(h & hosts for b in range(first, last + 1) for h in retx_in_bin.get(b, ())):
            congesting.add((start, end))

    ours = {(e["start_ns"], e["end_ns"]) for e in ev["microbursts"]["events"]}
    known = set(bursts)
    print(f"microbursts: brute force {len(bursts)}, burstscope {mb['count']}; congesting: brute force "
          f"{len(congesting)} (tshark's {len(retx)} retransmissions), burstscope {ev['microbursts']['congesting']} "
          f"({ev['totals']['tcp_retransmissions']}), {len(ev['microbursts']['events'])} listed")
    unknown = ours - known
    differ = ours ^ congesting
    print(f"listed bursts that are no microburst here: {len(unknown)}; congesting in one and not the other: "
          f"{len(differ)} {sorted(differ)[:5]}")
    # What TCP did, not what burstscope computes: printed, never asserted (a slower machine resends later).
    inside = sum(len(v) for b, v in retx_in_bin.items()
                 if any(s - BIN < b * BIN <= e + after for s, e in congesting))
    print(f"measured: {inside} of {len(retx)} retransmissions lie in a congesting burst's window "
          f"(after {after / 1e6} ms)")
    # The two retransmission counts may differ by a few per cent; each differing segment can turn at most one
    # burst's verdict, and a burst's evidence window holds many segments, so the verdicts may differ by that many.
    slack = abs(len(retx) - ev["totals"]["tcp_retransmissions"]) + 2
    ok = (len(bursts) == mb["count"] and not unknown and len(congesting) > 0 and
          ev["microbursts"]["congesting"] == len(ev["microbursts"]["events"]) and len(differ) <= slack)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
