#!/usr/bin/env python3
"""Writes burstscope's malformed-input corpus: frames, capture files and configurations that a monitor on a
mirror port, or an operator, may hand it. Each case carries the outcome burstscope must give: for a frame the
decode reason it is counted under, for a file or a configuration the exit status and what the error line or
the report says. The corpus seeds the fuzz targets (fuzz/) and is replayed by tests/corpus/.

Deterministic: the same script writes the same bytes, and the test checks the committed corpus against it.

    tools/make_corpus.py tests/corpus         # rewrite the committed corpus

Frame files (`frames/*.frame`) hold a 4-byte little-endian wire length, then the captured bytes: the input
format of fuzz/decode_fuzz.cc. Standard library only.
"""
import json
import os
import shutil
import struct
import sys

# --- frames, as segments -------------------------------------------------------------------------------
# A frame is built as a list of segments (bytes, reason): `reason` is what the decoder must count when the
# capture ends inside that segment (None: the decoder has what it needs, the frame counts as decoded).

TRUNC_ETH, TRUNC_VLAN = "truncated_ethernet", "truncated_vlan"
TRUNC_IP4, TRUNC_IP6, TRUNC_EXT = "truncated_ipv4", "truncated_ipv6", "truncated_ipv6_ext_header"
TRUNC_L4, TRUNC_GRE, TRUNC_ERSPAN, TRUNC_VXLAN = "truncated_l4", "truncated_gre", "truncated_erspan", "truncated_vxlan"
TRUNC_TCP, TRUNC_BTH, TRUNC_ROCE_EXT = "truncated_tcp_header", "truncated_bth", "truncated_roce_extension"
TRUNC_MACC = "truncated_mac_control"

MAC_DST, MAC_SRC = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")


def size(segs):
    return sum(len(b) for b, _ in segs)


def eth(ethertype, segs, tags=()):
    """Ethernet with `tags` (list of (tpid, vid)) stacked before `ethertype`."""
    types = [tpid for tpid, _ in tags] + [ethertype]
    out = [(MAC_DST + MAC_SRC + struct.pack(">H", types[0]), TRUNC_ETH)]
    for i, (_, vid) in enumerate(tags):
        out.append((struct.pack(">HH", vid, types[i + 1]), TRUNC_VLAN))
    return out + segs


def ipv4(proto, segs, src=0x0A000001, dst=0x0A000002, options=b"", total=None, version=4, ihl=None, frag=0):
    ihl = (20 + len(options)) // 4 if ihl is None else ihl
    total = 20 + len(options) + size(segs) if total is None else total
    hdr = struct.pack(">BBHHHBBHII", version << 4 | ihl, 0, total, 1, frag, 64, proto, 0, src, dst)
    return [(hdr + options, TRUNC_IP4)] + segs


def ipv6(segs, first_next, exts=(), payload=None, version=6, src_last=1, dst_last=2):
    """IPv6 with extension headers `exts` (list of (type, bytes)), ahead of `segs`."""
    ext_bytes = [b for _, b in exts]
    payload = sum(map(len, ext_bytes)) + size(segs) if payload is None else payload
    src = bytes.fromhex("fd00") + bytes(13) + bytes([src_last])
    dst = bytes.fromhex("fd00") + bytes(13) + bytes([dst_last])
    hdr = struct.pack(">IHBB", version << 28, payload, first_next, 64) + src + dst
    return [(hdr, TRUNC_IP6)] + [(b, TRUNC_EXT) for b in ext_bytes] + segs


def ext(next_header, units=0):
    """A generic extension header (hop-by-hop, routing, destination options): (units + 1) * 8 bytes."""
    return bytes([next_header, units]) + bytes(6 + units * 8)


def tcp(sport=40000, dport=5201, payload=b"p" * 24, doff=5):
    hdr = struct.pack(">HHIIBBHHH", sport, dport, 1, 0, doff << 4, 0x18, 65535, 0, 0)
    return [(hdr[:4], TRUNC_L4), (hdr[4:], TRUNC_TCP), (payload, None)]


def roce(opcode=0x0A, ext=b"", payload=b"r" * 32, qp=0x12, psn=100, tver=0, sport=49152):
    """RoCEv2: UDP to 4791, the InfiniBand base transport header, the extension headers `ext`, payload, ICRC."""
    bth = struct.pack(">BBHII", opcode, tver, 0xFFFF, qp & 0xFFFFFF, psn & 0xFFFFFF)
    rest = payload + bytes(4)
    hdr = struct.pack(">HHHH", sport, 4791, 8 + len(bth) + len(ext) + len(rest), 0)
    return [(hdr[:4], TRUNC_L4), (hdr[4:], TRUNC_BTH), (bth, TRUNC_BTH)] + ([(ext, TRUNC_ROCE_EXT)] if ext else []) + \
        [(rest, None)]


def mac_control(opcode, params):
    """MAC control (EtherType 0x8808): the opcode, its parameters, padding to the 60-byte minimum."""
    return [(struct.pack(">H", opcode), TRUNC_MACC), (params, TRUNC_MACC), (bytes(44 - len(params)), None)]


def udp(sport=40000, dport=5353, payload=b"u" * 24):
    hdr = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0)
    return [(hdr[:4], TRUNC_L4), (hdr[4:] + payload, None)]


def vxlan(inner, sport=49152, flags=0x08, vni=100):
    body = struct.pack(">BBHI", flags, 0, 0, vni << 8)
    hdr = struct.pack(">HHHH", sport, 4789, 16 + size(inner), 0)
    return [(hdr[:4], TRUNC_L4), (hdr[4:] + body, TRUNC_VXLAN)] + inner


def gre(proto, inner, flags=0, key=None, seq=None, checksum=False):
    flags |= (0x8000 if checksum else 0) | (0x2000 if key is not None else 0) | (0x1000 if seq is not None else 0)
    hdr = struct.pack(">HH", flags, proto)
    opt = (struct.pack(">I", 0) if checksum else b"") + (struct.pack(">I", key) if key is not None else b"") + \
          (struct.pack(">I", seq) if seq is not None else b"")
    return [(hdr, TRUNC_GRE)] + ([(opt, TRUNC_GRE)] if opt else []) + inner


def erspan2(inner, session=7, version=1):
    return [(struct.pack(">HHI", version << 12 | 10, session, 0), TRUNC_ERSPAN)] + inner


def erspan3(inner, session=9, version=2, egress=False, platform=False):
    tail = (0x0008 if egress else 0) | (0x0001 if platform else 0)
    hdr = struct.pack(">HHIHH", version << 12 | 10, session, 123456, 0, tail)
    segs = [(hdr, TRUNC_ERSPAN)]
    if platform:
        segs.append((bytes(8), TRUNC_ERSPAN))
    return segs + inner


def plain_tcp4():
    return eth(0x0800, ipv4(6, tcp()))


def erspan_outer(gre_segs):
    return eth(0x0800, ipv4(47, gre_segs, src=0xC0A80001, dst=0xC0A80002))


# The encapsulations burstscope decodes, each a complete, valid frame.
ENCAPSULATIONS = {
    "eth-ipv4-tcp": plain_tcp4(),
    "eth-ipv4opts-tcp": eth(0x0800, ipv4(6, tcp(), options=bytes([1, 1, 1, 0]))),
    "eth-vlan-ipv4-udp": eth(0x0800, ipv4(17, udp()), tags=[(0x8100, 10)]),
    "eth-qinq-ipv6-tcp": eth(0x86DD, ipv6(tcp(), 6), tags=[(0x88A8, 100), (0x8100, 10)]),
    "eth-ipv6-ext-udp": eth(0x86DD, ipv6(udp(), 0, exts=[(0, ext(43)), (43, ext(44, 1)),
                                                          (44, bytes([17, 0, 0, 0, 0, 0, 0, 1]))])),
    "erspan1": erspan_outer(gre(0x88BE, plain_tcp4())),
    "erspan2": erspan_outer(gre(0x88BE, erspan2(plain_tcp4()), seq=1)),
    "erspan3": erspan_outer(gre(0x22EB, erspan3(eth(0x0800, ipv4(17, udp()))), seq=1)),
    "erspan3-platform": erspan_outer(gre(0x22EB, erspan3(plain_tcp4(), egress=True, platform=True), seq=2)),
    "gre-teb-key-seq-csum": erspan_outer(gre(0x6558, eth(0x0800, ipv4(6, tcp()), tags=[(0x8100, 20)]),
                                             key=77, seq=5, checksum=True)),
    "gre6-teb": eth(0x86DD, ipv6(gre(0x6558, plain_tcp4()), 47)),
    "vxlan-ipv6": eth(0x0800, ipv4(17, vxlan(eth(0x86DD, ipv6(tcp(), 6))))),
    "eth-ipv4-rocev2-write-first": eth(0x0800, ipv4(17, roce(0x06, ext=bytes(16)))),
    "eth-ipv6-rocev2-nak": eth(0x86DD, ipv6(roce(0x11, ext=struct.pack(">I", 0x60 << 24 | 7), payload=b""), 17)),
    "erspan3-rocev2-cnp": erspan_outer(gre(0x22EB, erspan3(eth(0x0800, ipv4(17, roce(0x81, ext=bytes(16),
                                                                                      payload=b"")))), seq=3)),
    "eth-pfc": eth(0x8808, mac_control(0x0101, struct.pack(">H8H", 0x0081, 100, 0, 0, 0, 0, 0, 0, 65535))),
    "eth-pause": eth(0x8808, mac_control(0x0001, struct.pack(">H", 0xFFFF))),
}


def frame_bytes(segs):
    return b"".join(b for b, _ in segs)


def truncations(name, segs):
    """The frame cut at every header boundary and one byte inside each header: (case, bytes, wire, reason)."""
    full = frame_bytes(segs)
    cuts = {}
    start = 0
    for b, reason in segs:
        for cut in (start, start + len(b) // 2, start + len(b) - 1):
            if 0 <= cut < len(full) and cut not in cuts:
                cuts[cut] = reason or "none"
        start += len(b)
    for cut in sorted(cuts):
        yield f"trunc-{name}-at-{cut:03d}", full[:cut], len(full), cuts[cut]


def special_frames():
    """Malformed headers that are not a matter of length: (case, bytes, wire, reason)."""
    def whole(name, segs, reason, wire_extra=0):
        b = frame_bytes(segs)
        return name, b, len(b) + wire_extra, reason

    ip_tcp = ipv4(6, tcp())
    yield whole("ok-arp", eth(0x0806, [(bytes(28), None)]), "none")
    yield whole("tcp-data-offset-4", eth(0x0800, ipv4(6, tcp(doff=4))), "bad_tcp_header_length")
    yield whole("tcp-data-offset-15-past-ip", eth(0x0800, ipv4(6, tcp(doff=15))), "bad_tcp_header_length")
    yield whole("bth-version-1", eth(0x0800, ipv4(17, roce(tver=1))), "bad_bth_version")
    yield whole("rocev2-atomic-ack", eth(0x0800, ipv4(17, roce(0x12, ext=bytes(12), payload=b""))), "none")
    yield whole("mac-control-other-opcode", eth(0x8808, mac_control(0x0002, b"")), "none")
    yield whole("ok-8-vlan-tags", eth(0x0800, ip_tcp, tags=[(0x8100, i + 1) for i in range(8)]), "none")
    yield whole("vlan-20-tags", eth(0x0800, ip_tcp, tags=[(0x8100, i + 1) for i in range(20)]),
                "too_many_vlan_tags")
    yield whole("vlan-9-tags-qinq", eth(0x0800, ip_tcp, tags=[(0x88A8, 1)] + [(0x8100, 2)] * 8),
                "too_many_vlan_tags")
    yield whole("ipv4-ihl-0", eth(0x0800, ipv4(6, tcp(), ihl=0)), "bad_ipv4_header_length")
    yield whole("ipv4-ihl-4", eth(0x0800, ipv4(6, tcp(), ihl=4)), "bad_ipv4_header_length")
    yield whole("ipv4-ihl-15-past-capture", eth(0x0800, ipv4(6, tcp(payload=b""), ihl=15, total=60)),
                "truncated_ipv4")
    yield whole("ipv4-total-below-ihl", eth(0x0800, ipv4(6, tcp(), total=19)), "bad_ipv4_header_length")
    yield whole("ipv4-total-past-wire", eth(0x0800, ipv4(6, tcp(), total=1500)), "ipv4_length_exceeds_frame")
    yield whole("ipv4-total-past-wire-by-1", eth(0x0800, ipv4(6, tcp(), total=20 + size(tcp()) + 1)),
                "ipv4_length_exceeds_frame")
    yield whole("ipv4-total-with-padding", eth(0x0800, ipv4(6, tcp(payload=b""), ) + [(bytes(10), None)]),
                "none")
    yield whole("ipv4-version-6", eth(0x0800, ipv4(6, tcp(), version=6)), "bad_ipv4_version")
    yield whole("ipv4-version-15", eth(0x0800, ipv4(6, tcp(), version=15)), "bad_ipv4_version")
    yield whole("ipv6-version-4", eth(0x86DD, ipv6(tcp(), 6, version=4)), "bad_ipv6_version")
    yield whole("ipv6-payload-past-wire", eth(0x86DD, ipv6(tcp(), 6, payload=9000)), "ipv6_length_exceeds_frame")
    yield whole("ipv6-payload-past-wire-by-1", eth(0x86DD, ipv6(tcp(), 6, payload=size(tcp()) + 1)),
                "ipv6_length_exceeds_frame")
    yield whole("ipv6-jumbogram-payload-0", eth(0x86DD, ipv6(tcp(), 0, exts=[(0, ext(6))], payload=0)), "none")
    # A chain that "loops": destination options pointing at destination options, until the limit.
    yield whole("ipv6-ext-loop", eth(0x86DD, ipv6(tcp(), 60, exts=[(60, ext(60))] * 12)), "ipv6_ext_chain_too_long")
    yield whole("ipv6-ext-past-frame", eth(0x86DD, ipv6([(bytes(4), None)], 0, exts=[(0, bytes([6, 255]))])),
                "truncated_ipv6_ext_header")
    yield whole("ipv6-ah-past-frame", eth(0x86DD, ipv6([], 51, exts=[(51, bytes([6, 200, 0, 0]))])),
                "truncated_ipv6_ext_header")
    yield whole("ipv6-fragment-rest", eth(0x86DD, ipv6([(b"rest", None)], 44,
                                                       exts=[(44, bytes([6, 0, 0, 0x10, 0, 0, 0, 1]))])), "none")
    for version in (1, 2, 7):
        yield whole(f"gre-version-{version}", erspan_outer(gre(0x6558, plain_tcp4(), flags=version)),
                    "bad_gre_header")
    yield whole("gre-routing-bit", erspan_outer(gre(0x6558, plain_tcp4(), flags=0x4000)), "bad_gre_header")
    yield whole("gre-unknown-protocol", erspan_outer(gre(0x1234, plain_tcp4())), "unknown_gre_protocol")
    yield whole("gre-ipv4-payload", erspan_outer(gre(0x0800, ip_tcp)), "unknown_gre_protocol")
    for version in (0, 2, 15):
        yield whole(f"erspan2-version-{version}",
                    erspan_outer(gre(0x88BE, erspan2(plain_tcp4(), version=version), seq=1)), "bad_erspan_version")
    for version in (0, 1, 3):
        yield whole(f"erspan3-version-{version}",
                    erspan_outer(gre(0x22EB, erspan3(plain_tcp4(), version=version), seq=1)), "bad_erspan_version")
    yield whole("vxlan-i-flag-clear", eth(0x0800, ipv4(17, vxlan(plain_tcp4(), flags=0x00))), "vxlan_flags_invalid")
    yield whole("vxlan-only-other-flags", eth(0x0800, ipv4(17, vxlan(plain_tcp4(), flags=0xF7))),
                "vxlan_flags_invalid")
    nested = plain_tcp4()
    for _ in range(4):
        nested = eth(0x0800, ipv4(17, vxlan(nested)))
    yield whole("vxlan-nested-4-deep", nested, "too_many_encapsulations")
    nested = plain_tcp4()
    for _ in range(3):
        nested = erspan_outer(gre(0x6558, nested))
    yield whole("gre-nested-3-deep", nested, "none")
    yield whole("caplen-over-wire", plain_tcp4(), "caplen_exceeds_wire_len", wire_extra=-10)
    yield whole("caplen-over-wire-zero-wire", plain_tcp4(), "caplen_exceeds_wire_len",
                wire_extra=-size(plain_tcp4()))
    yield "empty", b"", 0, "truncated_ethernet"
    yield "empty-wire-1500", b"", 1500, "truncated_ethernet"


def all_frames():
    for name, segs in ENCAPSULATIONS.items():
        yield f"ok-{name}", frame_bytes(segs), size(segs), "none"
        yield from truncations(name, segs)
    yield from special_frames()


# --- capture files ---------------------------------------------------------------------------------------
USEC_MAGIC, NSEC_MAGIC = 0xA1B2C3D4, 0xA1B23C4D
T0 = 1_795_000_000  # seconds: 2026-11


def pcap_header(magic=USEC_MAGIC, snaplen=65535, linktype=1):
    return struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)


def pcap_record(sec, frac, data, orig=None, caplen=None):
    caplen = len(data) if caplen is None else caplen
    return struct.pack("<IIII", sec, frac, caplen, len(data) if orig is None else orig) + data


def good_records(n, start=0):
    f = frame_bytes(plain_tcp4())
    return b"".join(pcap_record(T0, (start + i) * 1000, f) for i in range(n))


def pcapng_block(block_type, body):
    total = 12 + len(body) + (-len(body)) % 4
    return struct.pack("<II", block_type, total) + body + bytes((-len(body)) % 4) + struct.pack("<I", total)


def pcapng_option(code, value):
    return struct.pack("<HH", code, len(value)) + value + bytes((-len(value)) % 4)


def pcapng_shb():
    return pcapng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def pcapng_idb(linktype=1, snaplen=0):
    # if_tsresol 9: nanoseconds.
    return pcapng_block(1, struct.pack("<HHI", linktype, 0, snaplen) + pcapng_option(9, b"\x09") +
                        pcapng_option(0, b""))


def pcapng_epb(ts_ns, data, orig=None, options=b""):
    body = struct.pack("<IIIII", 0, ts_ns >> 32, ts_ns & 0xFFFFFFFF, len(data), len(data) if orig is None else orig)
    return pcapng_block(6, body + data + bytes((-len(data)) % 4) + options)


def capture_files():
    """(name, bytes, expectation). Expectation: exit status, a regular expression the single stderr line must
    match (None: stderr empty), and report fields (dotted JSON paths) with their values."""
    f = frame_bytes(plain_tcp4())
    frames_ok = {"ledger.balanced": True}
    yield "usec-fraction-over-1e6.pcap", pcap_header() + good_records(2) + pcap_record(T0, 1_500_000, f) + \
        good_records(2, start=900), {"exit": 0, "stderr": "sub-second field of a second or more",
                                       "json": {"packets": 5, "timestamps.bad_timestamps": 1, **frames_ok}}
    yield "nsec-fraction-over-1e9.pcap", pcap_header(NSEC_MAGIC) + pcap_record(T0, 5, f) + \
        pcap_record(T0, 2_000_000_000, f) + pcap_record(T0 + 2, 10, f), \
        {"exit": 0, "stderr": "sub-second field of a second or more",
         "json": {"packets": 3, "timestamps.bad_timestamps": 1, **frames_ok}}
    # libpcap keeps the first snaplen bytes of a record longer than the file's snap length and skips the rest.
    yield "caplen-over-snaplen.pcap", pcap_header(snaplen=40) + good_records(1) + pcap_record(T0, 5000, f) + \
        good_records(1, start=10), {"exit": 0, "stderr": None,
                                    "json": {"packets": 3, "ledger.truncated_records": 0, **frames_ok}}
    # Longer than any capture may be: libpcap refuses the record, reading stops there, the loss is counted.
    yield "caplen-over-maximum.pcap", pcap_header() + good_records(2) + \
        struct.pack("<IIII", T0, 9000, 300000, 300000) + bytes(64), \
        {"exit": 0, "stderr": "bigger than the maximum|reading stopped there",
         "json": {"packets": 2, "ledger.truncated_records": 1, **frames_ok}}
    yield "caplen-over-origlen.pcap", pcap_header() + good_records(1) + pcap_record(T0, 5000, f, orig=40) + \
        good_records(1, start=10), {"exit": 0, "stderr": None,
                                    "json": {"packets": 3, "decode.errors.caplen_exceeds_wire_len": 1, **frames_ok}}
    whole = pcap_header() + good_records(3)
    yield "truncated-mid-record-data.pcap", whole[:-10], \
        {"exit": 0, "stderr": "truncated dump file.*reading stopped there",
         "json": {"packets": 2, "ledger.truncated_records": 1, **frames_ok}}
    yield "truncated-mid-record-header.pcap", whole + pcap_record(T0, 99, f)[:7], \
        {"exit": 0, "stderr": "truncated dump file.*reading stopped there",
         "json": {"packets": 3, "ledger.truncated_records": 1, **frames_ok}}
    # Clock faults inside a file: a step back of ten seconds (time is shifted on, counted), a day forward,
    # and identical timestamps.
    yield "clock-step-back.pcap", pcap_header() + good_records(3) + \
        b"".join(pcap_record(T0 - 10, i * 1000, f) for i in range(3)), \
        {"exit": 0, "stderr": None, "json": {"packets": 6, "timestamps.clock_steps_back": 1, "timestamps.clamped": 0,
                                             **frames_ok}}
    yield "clock-day-forward.pcap", pcap_header() + good_records(3) + \
        b"".join(pcap_record(T0 + 86400, i * 1000, f) for i in range(3)), \
        {"exit": 0, "stderr": None, "json": {"packets": 6, "timestamps.clock_steps_back": 0, **frames_ok}}
    yield "clock-identical.pcap", pcap_header() + b"".join(pcap_record(T0, 0, f) for i in range(50)), \
        {"exit": 0, "stderr": None, "json": {"packets": 50, "first_ns": T0 * 10**9, "last_ns": T0 * 10**9,
                                             **frames_ok}}
    yield "header-only.pcap", pcap_header(), {"exit": 0, "stderr": None, "json": {"packets": 0, **frames_ok}}
    yield "truncated-file-header.pcap", pcap_header()[:10], {"exit": 1, "stderr": "cannot read .*truncated-file-header"}
    yield "empty.pcap", b"", {"exit": 1, "stderr": "cannot read .*empty.pcap"}
    yield "not-a-capture.pcap", b"this is not a capture file, it is text\n" * 4, \
        {"exit": 1, "stderr": "cannot read .*unknown file format"}
    # Host link types (docs/analyze.md): each measured as the Ethernet frame its packet was; a broken link
    # header counts under its reason. A link type burstscope does not measure is refused, naming it.
    ip = f[14:]
    yield "linktype-raw.pcap", pcap_header(linktype=101) + pcap_record(T0, 0, ip) + \
        pcap_record(T0, 1000, bytes([0x55]) + ip[1:]) + pcap_record(T0, 2000, b""), \
        {"exit": 0, "stderr": None,
         # The good packet counts as its Ethernet frame; a frame whose link layer cannot be read, as recorded.
         "json": {"packets": 3, "bytes": len(f) + len(ip), "decode.errors.unknown_ip_version": 1,
                  "decode.errors.truncated_ipv4": 1, **frames_ok}}
    sll = struct.pack(">HHH8sH", 4, 1, 6, MAC_SRC + bytes(2), 0x0800)
    yield "linktype-linux-sll.pcap", pcap_header(linktype=113) + pcap_record(T0, 0, sll + ip) + \
        pcap_record(T0, 1000, sll[:10]), \
        {"exit": 0, "stderr": None,
         "json": {"packets": 2, "decode.ok": 1, "decode.errors.truncated_link_header": 1, **frames_ok}}
    yield "linktype-ieee802-11.pcap", pcap_header(linktype=105) + good_records(1), \
        {"exit": 1, "stderr": "link type IEEE802_11.*not supported"}
    t = T0 * 1_000_000_000
    # pcapng carries 64-bit timestamps: one in the year 2500 is counted and takes the previous record's time.
    yield "timestamp-year-2500.pcapng", pcapng_shb() + pcapng_idb() + pcapng_epb(t, f) + \
        pcapng_epb(16_725_225_600 * 1_000_000_000, f) + pcapng_epb(t + 1000, f), \
        {"exit": 0, "stderr": "out of range; given the previous record's time",
         "json": {"packets": 3, "timestamps.bad_timestamps": 1, "last_ns": t + 1000, **frames_ok}}
    yield "unknown-blocks.pcapng", pcapng_shb() + pcapng_idb() + pcapng_block(0x0BAD0BAD, b"unknown body") + \
        pcapng_epb(t, f) + pcapng_block(0x40000BAD, struct.pack("<I", 32473) + b"custom block") + \
        pcapng_epb(t + 1000, f, options=pcapng_option(0x7F01, b"odd option") + pcapng_option(0, b"")) + \
        pcapng_block(0x00000BAD, b"") + pcapng_epb(t + 2000, f), \
        {"exit": 0, "stderr": None, "json": {"packets": 3, "ledger.truncated_records": 0, **frames_ok}}
    yield "pcapng-bad-block-length.pcapng", pcapng_shb() + pcapng_idb() + pcapng_epb(t, f) + \
        struct.pack("<II", 6, 13) + bytes(8), \
        {"exit": 0, "stderr": "reading stopped there", "json": {"packets": 1, "ledger.truncated_records": 1}}
    yield "pcapng-block-past-end.pcapng", pcapng_shb() + pcapng_idb() + pcapng_epb(t, f) + \
        pcapng_epb(t + 5, f)[:40], \
        {"exit": 0, "stderr": "reading stopped there", "json": {"packets": 1, "ledger.truncated_records": 1}}
    # A second interface of a link type burstscope does not measure: its packets count under that reason.
    yield "pcapng-unsupported-interface.pcapng", pcapng_shb() + pcapng_idb() + pcapng_idb(linktype=105) + \
        pcapng_epb(t, f) + pcapng_block(6, struct.pack("<IIIII", 1, t >> 32, t & 0xFFFFFFFF, len(f), len(f)) + f), \
        {"exit": 0, "stderr": None,
         "json": {"packets": 2, "decode.ok": 1, "decode.errors.unsupported_link_type": 1, **frames_ok}}
    yield "pcapng-packet-before-interface.pcapng", pcapng_shb() + pcapng_epb(t, f), \
        {"exit": 1, "stderr": "cannot read|interface"}
    yield "pcapng-epb-caplen-past-block.pcapng", pcapng_shb() + pcapng_idb() + \
        pcapng_block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, 4000, 4000) + f), \
        {"exit": 0, "stderr": "reading stopped there", "json": {"packets": 0, "ledger.truncated_records": 1}}


# --- configurations --------------------------------------------------------------------------------------
def configs():
    """(name, YAML text, exit status of --check-config (2: a usage error), regular expression its error line must
    match)."""
    yield "ok-minimal.yaml", "capture: dpdk\ndpdk:\n  ports:\n    - device: net_null0\n", 0, None
    yield "unknown-top-key.yaml", "captur: dpdk\n", 2, "captur"
    yield "unknown-nested-key.yaml", "dpdk:\n  ports:\n    - device: p0\n      link-gbs: 100\n", 2, "link-gbs"
    yield "wrong-type-scales.yaml", "metrics:\n  scales: lots\n", 2, "scales"
    yield "bad-duration.yaml", "report:\n  interval: 10 parsecs\n", 2, "interval"
    yield "negative-top-k.yaml", "metrics:\n  top-k: -5\n", 2, "top-k"
    yield "bad-capture-word.yaml", "capture: carrier-pigeon\n", 2, "carrier-pigeon"
    yield "bad-prefix.yaml", "decoder:\n  local-nets: [10.0.0.0/33]\n", 2, "local-nets|10.0.0.0/33"
    yield "bad-listen.yaml", "export:\n  listen: 127.0.0.1:99999\n", 2, "listen"
    yield "bad-ring-size.yaml", "ring-size: 1000\n", 2, "ring-size"
    yield "not-a-mapping.yaml", "- just\n- a list\n", 2, "mapping"
    yield "syntax-error.yaml", "dpdk: {ports: [\n", 2, "syntax-error.yaml"
    yield "tab-indent.yaml", "dpdk:\n\tports: []\n", 2, "tab-indent.yaml"
    yield "deep-nesting.yaml", "metrics: " + "[" * 200 + "]" * 200 + "\n", 2, "metrics"
    yield "duration-overflow.yaml", "report:\n  baseline: 1.5e70s\n", 2, "baseline.*too long"  # fuzz finding
    yield "huge-number.yaml", "metrics:\n  top-k: 99999999999999999999999\n", 2, "top-k"
    yield "af-xdp-bad-mode.yaml", "capture: af_xdp\naf-xdp:\n  ports: [{interface: eth0}]\n  mode: turbo\n", 2, \
        "mode|turbo"
    yield "empty.yaml", "", 2, "no port to capture from"


def write(out_dir):
    if os.path.isdir(out_dir):
        for sub in ("frames", "files", "config"):
            shutil.rmtree(os.path.join(out_dir, sub), ignore_errors=True)
    for sub in ("frames", "files", "config"):
        os.makedirs(os.path.join(out_dir, sub), exist_ok=True)
    manifest = {"frames": {}, "files": {}, "config": {}}
    records = []
    for i, (name, data, wire, reason) in enumerate(all_frames()):
        assert name not in manifest["frames"], name
        with open(os.path.join(out_dir, "frames", name + ".frame"), "wb") as f:
            f.write(struct.pack("<I", wire) + data)
        manifest["frames"][name] = {"reason": reason, "wire_len": wire, "caplen": len(data)}
        records.append(pcap_record(T0, i * 1000, data, orig=wire))
    # Every frame, once each, in one capture file: the same cases through the whole pipeline.
    with open(os.path.join(out_dir, "files", "malformed-frames.pcap"), "wb") as f:
        f.write(pcap_header() + b"".join(records))
    manifest["files"]["malformed-frames.pcap"] = {"exit": 0, "stderr": None, "frames": "all"}
    for name, data, expect in capture_files():
        with open(os.path.join(out_dir, "files", name), "wb") as f:
            f.write(data)
        manifest["files"][name] = expect
    for name, text, status, pattern in configs():
        with open(os.path.join(out_dir, "config", name), "w") as f:
            f.write(text)
        manifest["config"][name] = {"exit": status, "stderr": pattern}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return manifest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    m = write(sys.argv[1])
    print(f"corpus: {len(m['frames'])} frames, {len(m['files'])} capture files, {len(m['config'])} configurations "
          f"in {sys.argv[1]}")
