#!/usr/bin/env python3
"""Writes a long capture made of one short trace repeated back to back, as one continuing run of traffic.

usage: bench/repeat_trace.py IN.pcap OUT.pcap TIMES [PERIOD_S]

Repeat i is the trace shifted by i * PERIOD_S seconds (default 2) with every TCP connection's sequence and
acknowledgement numbers moved on by i times the bytes the connection carried in the trace, in each direction
(modulo 2^32): the repeats continue each connection instead of sending its bytes again. Copies with only the
time moved (editcap -t and mergecap -a) look to any TCP analysis like one retransmission per data segment (on
the bundled trace, 1.03 M of 1.07 M segments), which is neither what a long capture of a training job holds
nor a fair load for a benchmark. Classic pcap only (either byte order, µs or ns), Ethernet link type; up to
two VLAN tags, IPv4 or IPv6 without extension headers, TCP; other frames are copied with their time moved.
SACK blocks and TCP timestamps are not moved (no analysis here reads them). Standard library only.
"""
import struct
import sys

NS_MAGIC = 0xA1B23C4D
US_MAGIC = 0xA1B2C3D4


def tcp_header_at(frame, wire_len):
    """(IP header offset, TCP header offset, TCP payload length) within the captured bytes, or None."""
    off = 12
    if len(frame) < off + 2:
        return None
    ethertype = struct.unpack_from("!H", frame, off)[0]
    off += 2
    for _ in range(2):
        if ethertype not in (0x8100, 0x88A8) or len(frame) < off + 4:
            break
        ethertype = struct.unpack_from("!H", frame, off + 2)[0]
        off += 4
    if ethertype == 0x0800:
        if len(frame) < off + 20:
            return None
        ihl = (frame[off] & 0x0F) * 4
        total = struct.unpack_from("!H", frame, off + 2)[0]
        frag = struct.unpack_from("!H", frame, off + 6)[0]
        if frame[off + 9] != 6 or frag & 0x1FFF or ihl < 20:
            return None
        # A total length of 0 (a capture of a segmentation-offloaded frame): the frame's own length.
        ip, tcp, ip_payload = off, off + ihl, (total if total else wire_len - off) - ihl
    elif ethertype == 0x86DD:
        if len(frame) < off + 40 or frame[off + 6] != 6:
            return None
        ip, tcp, ip_payload = off, off + 40, struct.unpack_from("!H", frame, off + 4)[0]
    else:
        return None
    if len(frame) < tcp + 14:
        return None
    data_offset = (frame[tcp + 12] >> 4) * 4
    return ip, tcp, max(0, ip_payload - data_offset)


def conn_key(frame, ip, tcp):
    """(source address and port, destination address and port) as bytes."""
    if frame[ip] >> 4 == 4:
        src, dst = frame[ip + 12:ip + 16], frame[ip + 16:ip + 20]
    else:
        src, dst = frame[ip + 8:ip + 24], frame[ip + 24:ip + 40]
    return src + frame[tcp:tcp + 2], dst + frame[tcp + 2:tcp + 4]


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    src, out, times = sys.argv[1], sys.argv[2], int(sys.argv[3])
    period_s = float(sys.argv[4]) if len(sys.argv) == 5 else 2.0
    data = open(src, "rb").read()
    if len(data) < 24:
        sys.exit(f"{src}: not a pcap file")
    for endian in ("<", ">"):
        magic = struct.unpack_from(endian + "I", data, 0)[0]
        if magic in (NS_MAGIC, US_MAGIC):
            break
    else:
        sys.exit(f"{src}: not a classic pcap file (pcapng: convert it with editcap -F pcap first)")
    per_second = 1_000_000_000 if magic == NS_MAGIC else 1_000_000
    if struct.unpack_from(endian + "I", data, 20)[0] & 0x0FFFFFFF != 1:
        sys.exit(f"{src}: link type is not Ethernet")
    records = []  # (ts_sec, ts_frac, orig_len, frame bytes, tcp_header_at(frame))
    pos = 24
    while pos + 16 <= len(data):
        sec, frac, caplen, wire = struct.unpack_from(endian + "IIII", data, pos)
        frame = data[pos + 16:pos + 16 + caplen]
        pos += 16 + caplen
        records.append((sec, frac, wire, frame, tcp_header_at(frame, wire)))
    # Each direction's sequence space used in the trace: from its lowest sequence number to where its bytes
    # end, relative to the first one seen (signed, so a segment that came out of order counts correctly).
    first, low, high = {}, {}, {}
    for _, _, _, frame, t in records:
        if t is None:
            continue
        ip, tcp, payload = t
        a, b = conn_key(frame, ip, tcp)
        seq = struct.unpack_from("!I", frame, tcp + 4)[0]
        flags = frame[tcp + 13]
        first.setdefault((a, b), seq)
        rel = (seq - first[(a, b)] + 2**31) % 2**32 - 2**31
        low[(a, b)] = min(low.get((a, b), rel), rel)
        end = rel + payload + (flags & 0x02 != 0) + (flags & 0x01 != 0)  # SYN and FIN take one each
        high[(a, b)] = max(high.get((a, b), end), end)
    reach = {k: high[k] - low[k] for k in high}
    with open(out, "wb") as f:
        f.write(data[:24])
        for i in range(times):
            shift = round(i * period_s * per_second)
            for sec, frac, wire, frame, t in records:
                frac += shift
                sec, frac = sec + frac // per_second, frac % per_second
                if t is not None:
                    ip, tcp, _ = t
                    a, b = conn_key(frame, ip, tcp)
                    seq, ack = struct.unpack_from("!II", frame, tcp + 4)
                    seq = (seq + i * reach.get((a, b), 0)) % 2**32
                    if frame[tcp + 13] & 0x10:  # ACK set: the number is in the other direction's space
                        ack = (ack + i * reach.get((b, a), 0)) % 2**32
                    frame = frame[:tcp + 4] + struct.pack("!II", seq, ack) + frame[tcp + 12:]
                f.write(struct.pack(endian + "IIII", sec, frac, len(frame), wire))
                f.write(frame)


if __name__ == "__main__":
    main()
