#!/usr/bin/env python3
"""Writes a capture whose packets are those of another spread over many random flows.

usage: bench/flow_churn.py IN.pcap OUT.pcap [FLOWS] [SEED]

Every IPv4 TCP packet gets the addresses and ports of one of FLOWS (default 1,000,000) random 5-tuples, picked
at random per packet (seeded: the same file every time); everything else (times, lengths, sequence numbers,
payload) stays. The same packets as IN, in flows that churn the way a scan or many short connections do: what
issue 41's flow-churn figure sets against the real trace (bench/flow_churn.sh). Checksums are not fixed (no
analysis here reads them). Classic pcap, Ethernet, up to two VLAN tags. Standard library only.
"""
import random
import struct
import sys

from repeat_trace import NS_MAGIC, US_MAGIC, tcp_header_at


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    flows = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 41)
    # Each flow: 12 bytes, source and destination address, source and destination port.
    table = [rng.getrandbits(96).to_bytes(12, "big") for _ in range(flows)]
    with open(src, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic in (NS_MAGIC, US_MAGIC):
        endian = "<"
    elif struct.unpack_from(">I", data, 0)[0] in (NS_MAGIC, US_MAGIC):
        endian = ">"
    else:
        sys.exit(f"{src}: not a classic pcap file")
    out = bytearray(data[:24])
    off, changed, total = 24, 0, 0
    rec = struct.Struct(endian + "IIII")
    while off + 16 <= len(data):
        _, _, caplen, wire = rec.unpack_from(data, off)
        frame = bytearray(data[off + 16:off + 16 + caplen])
        total += 1
        where = tcp_header_at(frame, wire)
        if where is not None and frame[where[0]] >> 4 == 4:
            ip, tcp, _ = where
            t = table[rng.randrange(flows)]
            frame[ip + 12:ip + 20] = t[0:8]
            frame[tcp:tcp + 4] = t[8:12]
            changed += 1
        out += data[off:off + 16]
        out += frame
        off += 16 + caplen
    with open(dst, "wb") as f:
        f.write(out)
    print(f"{total} packets, {changed} moved to {flows} random flows")


if __name__ == "__main__":
    main()
