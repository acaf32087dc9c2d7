#!/usr/bin/env python3
"""Writes a classic microsecond pcap of FLOWS UDP flows between distinct host pairs, PACKETS each, interleaved,
full-length frames of varying size. Enough distinct 5-tuples that any RSS or fanout hash spreads them over
every queue, whatever its seed. Standard library only.
usage: make_flows.py OUT.pcap [FLOWS] [PACKETS]"""
import struct
import sys


def frame(i, j, size):
    src = bytes([10, 1, i // 256, i % 256])
    dst = bytes([10, 2, (i * 7) // 256 % 256, (i * 7) % 256])
    payload = bytes((j + k) % 256 for k in range(size - 42))
    udp = struct.pack("!HHHH", 10000 + i, 20000 + (i * 13) % 4000, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), j % 65536, 0, 64, 17, 0, src, dst)
    eth = bytes.fromhex("020000000002") + bytes.fromhex("020000000001") + b"\x08\x00"
    return eth + ip + udp


def main():
    out = sys.argv[1]
    flows = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    packets = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    t_us = 1_795_294_232_000_000
    with open(out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for j in range(packets):
            for i in range(flows):
                data = frame(i, j, 64 + (i * 37 + j * 11) % 1450)
                t_us += 3
                f.write(struct.pack("<IIII", t_us // 1_000_000, t_us % 1_000_000, len(data), len(data)) + data)


if __name__ == "__main__":
    main()
