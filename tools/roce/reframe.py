#!/usr/bin/env python3
"""Re-frame a recorded TCP training trace as RoCEv2, and add congestion evidence at its real bursts.

Input: a classic pcap (microsecond or nanosecond, either byte order), Ethernet, with the training traffic as
IPv4 TCP (for instance data/ddp-gloo-w3-3steps.pcap or data/testbed/*.pcap). Output: a classic pcap of the
same precision, frames in timestamp order (stable: frames of equal time keep their input order).
Python 3 standard library only.

Re-framing (every frame keeps its timestamp; IPv4 frames keep their wire length, see "Sizes"):

- Each direction of each TCP connection becomes a reliable-connection queue pair. Each endpoint (IP, port)
  of a connection gets its own QP number (24 bits, from --seed, distinct, never 0 or 1); every RoCE packet
  from X to Y carries Y's QP as its BTH destination QP, so the data of one direction and the ACKs that
  answer the other direction share a key (source IP, destination IP, destination QP). The UDP source port
  is the sending QP's entropy (49152-65535, from --seed); the destination port is 4791.
- Each TCP segment with payload becomes one RC RDMA WRITE packet (BTH 12 bytes, TVer 0, P_Key 0xFFFF).
  The segments of one direction form messages: a message ends at a segment with PSH (or at the end of the
  trace). One segment: WRITE_ONLY (0x0A); more: WRITE_FIRST (0x06), WRITE_MIDDLE (0x07)..., WRITE_LAST
  (0x08). FIRST and ONLY carry a RETH whose DMA length is the message's IB payload total. A message whose
  first segment is too short for a RETH (wire length < 74 bytes) is sent as SEND (0x00/0x01/0x02, ONLY
  0x04) instead. LAST and ONLY set the ack-request bit. PSNs count up per QP from a start drawn from --seed;
  the QP with the most data packets starts so close to 2^24 that its PSNs wrap inside the trace.
  FIRST/MIDDLE payloads are whatever the TCP segment's size leaves, not a path MTU (real RC would refuse
  that; decoders do not check it).
- Each TCP segment without payload and without SYN/FIN/RST becomes an RC ACKNOWLEDGE (0x11) with AETH
  syndrome 0x1F (ACK, credit code 31 = unlimited), MSN = messages completed so far in the acknowledged
  direction, PSN = the PSN of the last data packet the TCP acknowledgement number covers.
  SYN/FIN/RST segments without payload stay TCP (RDMA connection management is not modelled).
- Every other frame (ARP, IPv6, UDP, ...) is copied unchanged.
- IB payload bytes are zeros. The 4-byte ICRC is the real invariant CRC over those bytes (as Linux rxe
  computes it: 8 bytes 0xFF, IP header with TOS/TTL/checksum (IPv6: traffic class, flow label, hop limit)
  masked to ones, UDP checksum masked, BTH byte 4 masked). The UDP checksum is 0.
- IP: DSCP 26 and ECN ECT(0) (RoCE traffic is ECN-capable); CE (11) where marked (below). DF set, TTL 64.

Sizes: the IB packet (BTH, extension headers, payload, pad, ICRC) must be a multiple of 4 bytes. The tool
keeps the TCP frame's wire length: the payload takes what the headers leave, rounded down to a multiple of
4; the last packet of a message moves pad bytes (BTH PadCnt = (-TCP payload) mod 4) from its payload into
padding; the 0-3 bytes left over (and all the room an ACK does not use: a 66-byte TCP ACK becomes a 62-byte
RoCE ACK) sit after the IP packet as an Ethernet trailer, outside the IP and UDP lengths. A frame too short
for its RoCE packet (below 58 bytes of data, 62 of ACK) grows to the minimum; the summary counts them.
The captured length is min(wire length, the input's snap length or --snaplen).
With --ipv6 every IPv4 packet (RoCE, and the TCP SYN/FIN/RST kept as TCP) becomes IPv6: a.b.c.d maps to
fd00::a.b.c.d (fd00::/64, the address in the low 32 bits), traffic class = the TOS byte, flow label 0,
hop limit 64; frames grow by the 20 bytes the IPv6 header is longer. IB payloads, PSNs and every injected
event are the same as without --ipv6 (bursts are found on the input's bytes), so the two files carry the
same evidence.

Injected evidence, at the trace's real bursts: the 100 us bins (aligned to multiples of 100 us since the
epoch) whose bytes (input wire lengths) are at least the --burst-quantile quantile of the non-empty bins;
a burst is a run of consecutive such bins. Deterministic from --seed:

- ECN CE on a fraction (--ce-rate) of the data packets in burst bins; for each CE packet the receiver sends
  a CNP (opcode 0x81, BECN bit set, P_Key 0xFFFF, PSN 0, 16 reserved bytes, ICRC; 74 bytes) to the sender's
  QP 4-6 us later, at most one per QP per --cnp-interval-us (as ConnectX NICs rate-limit them). CNPs go with
  DSCP 48 and the ECN field --cnp-ecn (default 0, Not-ECT: a CNP must not be marked itself).
- --gbn go-back-N episodes, each in its own burst: a data packet (PSN p) is lost after the mirror; when the
  next packet of its QP arrives, the receiver sends a PSN-sequence-error NAK (opcode 0x11, AETH syndrome
  0x60, PSN p) 3 us later, and the sender resends every packet of the QP from p on that it had sent by the
  time the NAK reached it (same opcodes, sizes, PSNs, ECT(0); at most --gbn-max), back to back at
  --link-gbps from 3 us after the NAK. The first episode's QP has its PSNs re-based so that the lost packet
  is 2^24 - 2: its go-back-N crosses the PSN wrap (--no-wrap-gbn leaves the PSNs alone).
- --rnr RNR NAKs (syndrome 0x20 | timer 14) and --nak-other NAKs with another code (0x60 | 2, remote
  access error), from a receiver in a burst, PSN of the packet they answer; no retry is written.
- --pfc bursts with an 802.1Q bb PFC frame (EtherType 0x8808, opcode 0x0101, to 01:80:c2:00:00:01, 64
  bytes with a real FCS, from the host receiving most of the burst): priority 3 with quanta 0xFFFF (every
  second one also priority 4 with quanta 0x2000) 5 us into the burst, and a resume frame (the same
  priorities, quanta 0) 1 us after the burst's last packet. --pause bursts with an 802.3x PAUSE (opcode
  0x0001, quanta 0x0400).
Injected frames never share a timestamp with another frame (moved on by 1 ns, or 1 us in a microsecond
pcap, until free), so any reader's time order is the file order.
--no-events turns every injection off: the output then has exactly the input's frames, timestamps and wire
lengths (ECT(0) is still set), so its burst statistics equal the input's.

The summary printed at the end is for people; tests derive their truth from the output with tshark.

Usage: reframe.py [--seed N] [--ipv6] [--duration S] [event options] IN.pcap OUT.pcap
"""
import argparse
import bisect
import random
import struct
import sys
import zlib

ROCE_PORT = 4791
MASK24 = 0xFFFFFF
DSCP_ROCE = 26
DSCP_CNP = 48
ECT0, CE = 2, 3
BIN_NS = 100_000

OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST, OP_SEND_ONLY = 0x00, 0x01, 0x02, 0x04
OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST, OP_WRITE_ONLY = 0x06, 0x07, 0x08, 0x0A
OP_ACK, OP_CNP = 0x11, 0x81
SYN_ACK, SYN_NAK_SEQ, SYN_RNR, SYN_NAK_OTHER = 0x1F, 0x60, 0x20 | 14, 0x60 | 2

PFC_DST = bytes.fromhex("0180c2000001")
ZEROS = bytes(65536)


# ----------------------------------------------------------------------------------------------- pcap
def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        sys.exit(f"{path}: not a pcap file")
    magic = data[:4]
    table = {b"\xd4\xc3\xb2\xa1": ("<", False), b"\x4d\x3c\xb2\xa1": ("<", True),
             b"\xa1\xb2\xc3\xd4": (">", False), b"\xa1\xb2\x3c\x4d": (">", True)}
    if magic not in table:
        sys.exit(f"{path}: not a classic pcap file (pcapng is not read; convert with editcap -F pcap)")
    endian, nsec = table[magic]
    _, _, _, _, snaplen, linktype = struct.unpack(endian + "HHiIII", data[4:24])
    if linktype & 0xFFFF != 1:
        sys.exit(f"{path}: link type {linktype}, only Ethernet (1) is re-framed")
    rec = struct.Struct(endian + "IIII")
    frames = []
    off = 24
    scale = 1 if nsec else 1000
    while off + 16 <= len(data):
        sec, frac, caplen, wire = rec.unpack_from(data, off)
        off += 16
        frames.append((sec * 1_000_000_000 + frac * scale, data[off:off + caplen], wire))
        off += caplen
    return nsec, snaplen, frames


def write_pcap(path, nsec, snaplen, frames):
    out = bytearray(struct.pack("<IHHiIII", 0xA1B23C4D if nsec else 0xA1B2C3D4, 2, 4, 0, 0, snaplen, 1))
    div = 1 if nsec else 1000
    for ts, data, wire in frames:
        sec, rest = divmod(ts, 1_000_000_000)
        out += struct.pack("<IIII", sec, rest // div, len(data), wire)
        out += data
    with open(path, "wb") as f:
        f.write(out)


# ------------------------------------------------------------------------------------------- headers
def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def v6addr(a4):
    return b"\xfd" + bytes(11) + a4


class Net:
    """Builds the IP/UDP part of frames; v4 or v6."""

    def __init__(self, ipv6):
        self.ipv6 = ipv6
        self.ip_len = 40 if ipv6 else 20

    def ip_header(self, src4, dst4, proto, payload_len, tos, ident=0):
        if self.ipv6:
            first = (6 << 28) | (tos << 20)
            return struct.pack("!IHBB", first, payload_len, proto, 64) + v6addr(src4) + v6addr(dst4)
        h = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + payload_len, ident, 0x4000, 64, proto, 0, src4, dst4)
        return h[:10] + struct.pack("!H", csum(h)) + h[12:]

    def icrc_prefix(self, ip, udp):
        """IP + UDP header as the ICRC sees them (variant fields masked to ones)."""
        if self.ipv6:
            ip = b"\x6f\xff\xff\xff" + ip[4:7] + b"\xff" + ip[8:]
        else:
            ip = ip[:1] + b"\xff" + ip[2:8] + b"\xff" + ip[9:10] + b"\xff\xff" + ip[12:]
        return ip + udp[:6] + b"\xff\xff"


def roce_frame(net, macs, src4, dst4, sport, tos, ident, ib_hdr, payload_len, pad, wire_v4, snaplen):
    """A RoCEv2 frame: `ib_hdr` is BTH + extension headers (the PadCnt already in the BTH). wire_v4 is the
    frame's wire length as an IPv4 frame (None: the minimum). Returns (captured bytes, wire length)."""
    udp_len = 8 + len(ib_hdr) + payload_len + pad + 4
    ip = net.ip_header(src4, dst4, 17, udp_len, tos, ident)
    udp = struct.pack("!HHHH", sport, ROCE_PORT, udp_len, 0)
    masked_bth = ib_hdr[:4] + b"\xff" + ib_hdr[5:]
    crc = zlib.crc32(b"\xff" * 8 + net.icrc_prefix(ip, udp) + masked_bth)
    n = payload_len + pad
    while n > 0:
        k = min(n, len(ZEROS))
        crc = zlib.crc32(ZEROS[:k], crc)
        n -= k
    icrc = struct.pack("<I", crc)
    min_wire = 14 + len(ip) + udp_len
    wire = min_wire if wire_v4 is None else max(min_wire, wire_v4 + (net.ip_len - 20))
    head = macs + (b"\x86\xdd" if net.ipv6 else b"\x08\x00") + ip + udp + ib_hdr
    cap = min(wire, snaplen)
    ib_end = len(head) + payload_len + pad
    if cap <= ib_end:  # the usual case of a cut capture: the ICRC and trailer are not captured
        return head[:cap] + bytes(max(0, cap - len(head))), wire
    return (head + bytes(payload_len + pad) + icrc + bytes(wire - ib_end - 4))[:cap], wire


def bth(opcode, padcnt, destqp, psn, ackreq=False, becn=False):
    return struct.pack("!BBHII", opcode, padcnt << 4, 0xFFFF, (0x40 << 24 if becn else 0) | destqp,
                       (0x80000000 if ackreq else 0) | (psn & MASK24))


def aeth(syndrome, msn):
    return struct.pack("!I", (syndrome << 24) | (msn & MASK24))


def mac_control(src_mac, body):
    f = PFC_DST + src_mac + b"\x88\x08" + body
    f = f + bytes(60 - len(f))
    return f + struct.pack("<I", zlib.crc32(f))


# ----------------------------------------------------------------------------------------------- model
class Packet:
    """One output frame, or the recipe for a RoCE frame built at the end."""
    __slots__ = ("ts", "order", "raw", "wire", "kind", "src", "dst", "macs", "sport", "destqp", "ident",
                 "opcode", "psn", "pad", "payload", "reth_len", "reth_va", "ackreq", "syndrome", "msn", "ecn",
                 "dir", "binned")

    def __init__(self, ts, order):
        self.ts, self.order = ts, order
        self.raw = None
        self.kind = "raw"
        self.ecn = ECT0
        self.reth_len = None
        self.reth_va = 0
        self.binned = False


def parse_tcp(data):
    """(src4, dst4, sport, dport, seq, ack, flags, payload_len, ident) of an untagged IPv4 TCP frame."""
    if len(data) < 34 or data[12:14] != b"\x08\x00" or data[14] >> 4 != 4:
        return None
    ihl = (data[14] & 15) * 4
    total, ident, frag = struct.unpack_from("!HHH", data, 16)
    if data[23] != 6 or frag & 0x3FFF or len(data) < 14 + ihl + 14:
        return None
    t = 14 + ihl
    sport, dport, seq, ack, doff = struct.unpack_from("!HHIIB", data, t)
    flags = data[t + 13]
    return (data[26:30], data[30:34], sport, dport, seq, ack, flags,
            max(0, total - ihl - (doff >> 4) * 4), ident)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ipv6", action="store_true", help="IPv6 variant: a.b.c.d -> fd00::a.b.c.d")
    ap.add_argument("--duration", type=float, help="keep only the input's first S seconds")
    ap.add_argument("--snaplen", type=int, help="captured length cap (default: the input's)")
    ap.add_argument("--burst-quantile", type=float, default=0.97,
                    help="a 100 us bin is in a burst when its bytes reach this quantile of the non-empty bins")
    ap.add_argument("--ce-rate", type=float, default=0.05, help="fraction of burst data packets marked CE")
    ap.add_argument("--cnp-interval-us", type=float, default=50.0, help="least time between CNPs to one QP")
    ap.add_argument("--cnp-ecn", type=int, default=0, choices=range(3), help="ECN field of CNPs (not 3)")
    ap.add_argument("--gbn", type=int, default=3, help="go-back-N episodes (NAK + resends)")
    ap.add_argument("--gbn-max", type=int, default=32, help="most packets one go-back-N resends")
    ap.add_argument("--no-wrap-gbn", action="store_true",
                    help="do not re-base the first go-back-N QP's PSNs to put its lost packet at 2^24 - 2")
    ap.add_argument("--rnr", type=int, default=1, help="RNR NAKs")
    ap.add_argument("--nak-other", type=int, default=1, help="NAKs with a code other than PSN sequence error")
    ap.add_argument("--pfc", type=int, default=3, help="bursts with a PFC pause and resume")
    ap.add_argument("--pause", type=int, default=1, help="bursts with an 802.3x PAUSE")
    ap.add_argument("--link-gbps", type=float, default=10.0, help="line rate of resent packets")
    ap.add_argument("--no-events", action="store_true", help="inject nothing (same frames, times, sizes)")
    a = ap.parse_args()
    if a.no_events:
        a.ce_rate, a.gbn, a.rnr, a.nak_other, a.pfc, a.pause = 0.0, 0, 0, 0, 0, 0

    nsec, in_snap, frames = read_pcap(a.input)
    snaplen = a.snaplen or in_snap
    if not frames:
        sys.exit(f"{a.input}: no frames")
    if a.duration is not None:
        t0 = min(f[0] for f in frames)
        frames = [f for f in frames if f[0] < t0 + int(a.duration * 1e9)]
    order = sorted(range(len(frames)), key=lambda i: frames[i][0])  # stable
    rng = random.Random(a.seed)
    net = Net(a.ipv6)
    tick = 1 if nsec else 1000
    stats = {"frames_in": len(frames), "grown": 0}

    # Bursts on the input's bytes.
    bins = {}
    for ts, _, wire in frames:
        bins[ts // BIN_NS] = bins.get(ts // BIN_NS, 0) + wire
    sizes = sorted(bins.values())
    threshold = sizes[min(len(sizes) - 1, int(a.burst_quantile * len(sizes)))]
    hot = sorted(b for b, v in bins.items() if v >= threshold)
    bursts = []
    for b in hot:
        if bursts and bursts[-1][-1] == b - 1:
            bursts[-1].append(b)
        else:
            bursts.append([b])
    hot = set(hot)

    # Pass 1: classify, learn MACs, QPs, entropy.
    qp_of = {}  # endpoint (ip4, port, peer ip4, peer port) -> QP number
    used_qps = {0, 1}
    entropy = {}
    pkts = []
    data_count = {}
    for rank, i in enumerate(order):
        ts, data, wire = frames[i]
        p = Packet(ts, rank)
        t = parse_tcp(data)
        if t is None:
            p.raw, p.wire = data, wire
            pkts.append(p)
            continue
        src, dst, sport, dport, seq, ack, flags, plen, ident = t
        for ep in ((src, sport, dst, dport), (dst, dport, src, sport)):
            if ep not in qp_of:
                q = rng.randrange(2, MASK24 + 1)
                while q in used_qps:
                    q = rng.randrange(2, MASK24 + 1)
                used_qps.add(q)
                qp_of[ep] = q
                entropy[ep] = 0xC000 | rng.randrange(0x4000)
        p.src, p.dst, p.macs, p.ident = src, dst, data[:12], ident
        p.dir = (src, sport, dst, dport)
        p.sport = entropy[p.dir]
        p.destqp = qp_of[(dst, dport, src, sport)]
        p.wire = wire
        if plen > 0:
            p.kind = "data"
            p.payload = plen  # TCP payload for now
            p.syndrome = (seq, flags)
            data_count[p.dir] = data_count.get(p.dir, 0) + 1
        elif flags & 0x07:  # SYN, FIN or RST: stays TCP
            p.kind = "tcp"
            p.raw = data
        else:
            p.kind = "ack"
            p.syndrome = ack
        pkts.append(p)

    # PSN starts; the busiest direction wraps midway.
    psn_start = {}
    busiest = max(data_count, key=lambda d: (data_count[d], d)) if data_count else None
    for d in sorted(data_count):
        psn_start[d] = rng.randrange(MASK24 + 1)
    if busiest is not None:
        psn_start[busiest] = (MASK24 + 1 - data_count[busiest] // 2) & MASK24

    # Pass 2: data packets -> messages and PSNs; ACKs -> PSN/MSN of what they acknowledge.
    nxt = {d: psn_start[d] for d in psn_start}
    isn = {}
    acked = {}  # direction -> ([max seq end so far], [psn], [msn after])
    msgs_done = {}
    current = {}  # direction -> packets of the open message
    messages = []

    def close(d):
        m = current.pop(d, None)
        if m:
            messages.append(m)

    for p in pkts:
        if p.kind == "data":
            seq, flags = p.syndrome
            d = p.dir
            base = isn.setdefault(d, seq)
            rel = ((seq - base + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
            end = rel + p.payload
            p.psn = nxt[d]
            nxt[d] = (nxt[d] + 1) & MASK24
            current.setdefault(d, []).append(p)
            if flags & 0x08:
                close(d)
                msgs_done[d] = msgs_done.get(d, 0) + 1
            ends, psns, msns = acked.setdefault(d, ([], [], []))
            ends.append(max(end, ends[-1]) if ends else end)
            psns.append(p.psn)
            msns.append(msgs_done.get(d, 0))
        elif p.kind == "ack":
            rev = (p.dir[2], p.dir[3], p.dir[0], p.dir[1])
            p.opcode, p.pad, p.payload, p.ackreq = OP_ACK, 0, 0, False
            if rev in acked and rev in isn:
                ends, psns, msns = acked[rev]
                rel = ((p.syndrome - isn[rev] + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
                k = bisect.bisect_right(ends, rel) - 1
                p.psn, p.msn = (psns[k], msns[k]) if k >= 0 else ((psn_start[rev] - 1) & MASK24, 0)
            else:
                p.psn, p.msn = (psn_start.get(rev, 0) - 1) & MASK24, 0
            p.syndrome = SYN_ACK
    for d in list(current):
        close(d)

    va_next = {}
    for m in messages:
        send = (m[0].wire - 58 - 16) < 0
        n = len(m)
        total = 0
        for j, p in enumerate(m):
            last = j == n - 1 and m[-1].syndrome[1] & 0x08
            if send:
                p.opcode = (OP_SEND_ONLY if last else OP_SEND_FIRST) if j == 0 else (OP_SEND_LAST if last else OP_SEND_MIDDLE)
            else:
                p.opcode = (OP_WRITE_ONLY if last else OP_WRITE_FIRST) if j == 0 else (OP_WRITE_LAST if last else OP_WRITE_MIDDLE)
            ext = 16 if p.opcode in (OP_WRITE_FIRST, OP_WRITE_ONLY) else 0
            room = p.wire - 58 - ext
            if room < 0:
                room = 0
                stats["grown"] += 1
            q = room - room % 4
            pad = (-p.payload) % 4 if last else 0
            if pad > q:
                pad = 0
            p.pad, p.ackreq = pad, bool(last)
            p.payload = q - pad
            total += p.payload
        if not send:
            d = m[0].dir
            va = va_next.get(d, 0x7F0000000000 | (rng.randrange(1 << 20) << 12))
            m[0].reth_len, m[0].reth_va = total, va
            va_next[d] = va + ((total + 4095) // 4096) * 4096
    for p in pkts:
        if p.kind == "data":
            p.syndrome = None

    # ----------------------------------------------------------------------------- injection
    used_ts = {p.ts for p in pkts}

    def free_ts(t):
        t = (t // tick) * tick
        while t in used_ts:
            t += tick
        used_ts.add(t)
        return t

    def reverse_macs(p):
        return p.macs[6:12] + p.macs[0:6]

    def response(p, ts, opcode, syndrome=None, psn=0, msn=0, ecn=ECT0):
        """A packet from p's receiver back to p's sender's QP."""
        r = Packet(free_ts(ts), None)
        r.kind = "inj"
        r.src, r.dst, r.macs, r.ident = p.dst, p.src, reverse_macs(p), 0
        rev = (p.dir[2], p.dir[3], p.dir[0], p.dir[1])
        r.dir = rev
        r.sport = entropy[rev]
        r.destqp = qp_of[p.dir]
        r.opcode, r.syndrome, r.psn, r.msn, r.ecn = opcode, syndrome, psn, msn, ecn
        r.pad, r.payload, r.ackreq, r.wire = 0, 0, False, None
        return r

    data_in_burst = [p for p in pkts if p.kind == "data" and p.ts // BIN_NS in hot]
    by_burst = {}
    burst_of_bin = {b: k for k, run in enumerate(bursts) for b in run}
    for p in data_in_burst:
        by_burst.setdefault(burst_of_bin[p.ts // BIN_NS], []).append(p)
    candidates = sorted(by_burst)
    rng_events = random.Random(a.seed * 7919 + 17)
    injected = []

    def pick_bursts(n, taken):
        free = [b for b in candidates if b not in taken]
        chosen = rng_events.sample(free, min(n, len(free)))
        taken.update(chosen)
        return sorted(chosen)

    taken = set()
    nak_bursts = pick_bursts(a.gbn, taken)
    rnr_bursts = pick_bursts(a.rnr, taken)
    other_bursts = pick_bursts(a.nak_other, taken)
    ev = {"ce": 0, "cnp": 0, "nak_seq": 0, "resent": 0, "rnr": 0, "nak_other": 0, "pfc": 0, "pause": 0}

    def msn_at(d, psn):
        if d not in acked:
            return 0
        ends, psns, msns = acked[d]
        # PSNs of a direction are consecutive from its start: the index is the distance.
        k = (psn - psns[0]) & MASK24
        return msns[k - 1] if 0 < k <= len(msns) else 0

    by_dir = {}
    for p in pkts:
        if p.kind == "data":
            by_dir.setdefault(p.dir, []).append(p)

    rebased = set()
    for b in nak_bursts:
        per_qp = {}
        for p in by_burst[b]:
            per_qp.setdefault(p.dir, []).append(p)
        dirs = sorted(d for d in per_qp if len(per_qp[d]) >= 3)
        if not dirs:
            dirs = sorted(d for d in per_qp if len(per_qp[d]) >= 2)
        if not dirs:
            continue
        d = rng_events.choice(dirs)
        inb = per_qp[d]
        j = rng_events.randrange(len(inb) - 1)
        lost, seen = inb[j], inb[j + 1]
        if b == nak_bursts[0] and not a.no_wrap_gbn and d not in rebased:
            # Re-base this QP's PSNs so that the lost packet is 2^24 - 2: the resends cross the wrap.
            shift = (MASK24 - 1 - lost.psn) & MASK24
            rev = (d[2], d[3], d[0], d[1])
            for p in pkts:
                if (p.kind == "data" and p.dir == d) or (p.kind == "ack" and p.dir == rev):
                    p.psn = (p.psn + shift) & MASK24
            acked[d][1][:] = [(x + shift) & MASK24 for x in acked[d][1]]
            rebased.add(d)
        nak = response(lost, seen.ts + 3000, OP_ACK, SYN_NAK_SEQ, lost.psn, msn_at(d, lost.psn))
        injected.append(nak)
        ev["nak_seq"] += 1
        sent = [p for p in by_dir[d] if p.ts <= nak.ts + 2000 and ((p.psn - lost.psn) & MASK24) < 0x800000]
        sent = sent[:a.gbn_max]
        t = nak.ts + 3000
        for p in sent:
            r = Packet(free_ts(t), None)
            for f in ("src", "dst", "macs", "sport", "destqp", "opcode", "psn", "pad", "payload", "reth_len",
                      "reth_va", "ackreq", "dir", "wire"):
                setattr(r, f, getattr(p, f))
            r.kind, r.ident, r.ecn, r.syndrome = "inj", 0, ECT0, None
            injected.append(r)
            ev["resent"] += 1
            t = r.ts + max(tick, int(p.wire * 8 / a.link_gbps))
    for bs, syn, key in ((rnr_bursts, SYN_RNR, "rnr"), (other_bursts, SYN_NAK_OTHER, "nak_other")):
        for b in bs:
            p = rng_events.choice(by_burst[b])
            injected.append(response(p, p.ts + 3000, OP_ACK, syn, p.psn, msn_at(p.dir, p.psn)))
            ev[key] += 1

    # CE marks and CNPs.
    last_cnp = {}
    interval = int(a.cnp_interval_us * 1000)
    for p in data_in_burst:
        if rng_events.random() >= a.ce_rate:
            continue
        p.ecn = CE
        ev["ce"] += 1
        key = (p.dst, p.src, qp_of[p.dir])
        if key in last_cnp and p.ts - last_cnp[key] < interval:
            continue
        last_cnp[key] = p.ts
        c = response(p, p.ts + 4000 + rng_events.randrange(2000), OP_CNP, ecn=a.cnp_ecn)
        injected.append(c)
        ev["cnp"] += 1

    # PFC and PAUSE on bursts (any burst, with or without RoCE data).
    all_bursts = list(range(len(bursts)))
    pfc_bursts = sorted(rng_events.sample(all_bursts, min(a.pfc, len(all_bursts))))
    rest = [b for b in all_bursts if b not in pfc_bursts]
    pause_bursts = sorted(rng_events.sample(rest, min(a.pause, len(rest))))
    in_bins = {}
    for p in pkts:
        k = burst_of_bin.get(p.ts // BIN_NS)
        if k is not None:
            in_bins.setdefault(k, []).append(p)
    mac_frames = []

    def receiver_mac(ps):
        by = {}
        for p in ps:
            dst = p.raw[0:6] if p.raw is not None else p.macs[0:6]
            by[dst] = by.get(dst, 0) + (p.wire or 0)
        return max(by, key=lambda m: (by[m], m)) if by else bytes.fromhex("020000000001")

    for n, b in enumerate(pfc_bursts):
        ps = in_bins[b]
        mac = receiver_mac(ps)
        prios = {3: 0xFFFF, 4: 0x2000} if n % 2 else {3: 0xFFFF}
        for t, resume in ((ps[0].ts + 5000, False), (ps[-1].ts + 1000, True)):
            cev = sum(1 << q for q in prios)
            quanta = [0 if resume or q not in prios else prios[q] for q in range(8)]
            body = struct.pack("!HH8H", 0x0101, cev, *quanta)
            mac_frames.append((free_ts(t), mac_control(mac, body)))
            ev["pfc"] += 1
    for b in pause_bursts:
        ps = in_bins[b]
        mac_frames.append((free_ts(ps[0].ts + 7000), mac_control(receiver_mac(ps), struct.pack("!HH", 0x0001, 0x0400))))
        ev["pause"] += 1

    # ----------------------------------------------------------------------------- build
    out = []
    for p in pkts + injected:
        if p.kind == "raw":
            out.append((p.ts, 0, p.order or 0, p.raw, p.wire))
            continue
        if p.kind == "tcp":
            data, wire = p.raw, p.wire
            if a.ipv6:
                ihl = (data[14] & 15) * 4
                total = struct.unpack_from("!H", data, 16)[0]
                ip = net.ip_header(p.src, p.dst, 6, total - ihl, data[15])
                data = data[:12] + b"\x86\xdd" + ip + data[14 + ihl:]
                wire += 20
                data = data[:min(wire, snaplen)]
            out.append((p.ts, 0, p.order, data, wire))
            continue
        if p.opcode == OP_CNP:
            hdr = bth(OP_CNP, 0, p.destqp, 0, becn=True) + bytes(16)
        else:
            hdr = bth(p.opcode, p.pad, p.destqp, p.psn, ackreq=p.ackreq)
            if p.opcode == OP_ACK:
                hdr += aeth(p.syndrome, p.msn)
            elif p.reth_len is not None:
                hdr += struct.pack("!QII", p.reth_va, 0x1000 | (p.destqp & 0xFFF), p.reth_len)
        dscp = DSCP_CNP if p.opcode == OP_CNP else DSCP_ROCE
        wire_v4 = p.wire if p.kind != "inj" or p.opcode not in (OP_ACK, OP_CNP) else None
        data, wire = roce_frame(net, p.macs, p.src, p.dst, p.sport, (dscp << 2) | p.ecn, p.ident, hdr,
                                p.payload, p.pad, wire_v4, snaplen)
        if p.kind != "inj" and wire != p.wire + (net.ip_len - 20):
            stats["grown"] += p.kind == "ack"
        out.append((p.ts, 0 if p.order is not None else 1, p.order if p.order is not None else 0, data, wire))
    for t, f in mac_frames:
        out.append((t, 1, 0, f[:snaplen], len(f)))
    out.sort(key=lambda r: (r[0], r[1], r[2]))
    write_pcap(a.output, nsec, snaplen, [(r[0], r[3], r[4]) for r in out])

    kinds = {}
    for p in pkts:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    print(f"reframe: {stats['frames_in']} frames in, {len(out)} out: {kinds.get('data', 0)} RDMA data packets in "
          f"{len(messages)} messages over {len(qp_of)} QPs, {kinds.get('ack', 0)} RC ACKs, {kinds.get('tcp', 0)} TCP "
          f"SYN/FIN/RST kept, {kinds.get('raw', 0)} other frames kept, {stats['grown']} frames grown; "
          f"{len(bursts)} bursts ({len(hot)} bins >= {threshold} bytes); injected: {ev['ce']} CE, {ev['cnp']} CNP, "
          f"{ev['nak_seq']} sequence-error NAK, {ev['resent']} resent, {ev['rnr']} RNR NAK, {ev['nak_other']} other "
          f"NAK, {ev['pfc']} PFC, {ev['pause']} PAUSE", file=sys.stderr)


if __name__ == "__main__":
    main()
