#!/usr/bin/env python3
"""Host captures made from one mirror-port capture, for the multi-file tests of `burstscope analyze` (issue 22).

A mirror port sees every frame once, on the wire; captures taken on the hosts themselves see each host's
frames in whatever form that host's capture gives them: Linux cooked headers (`tcpdump -i any`), raw IP
(tunnel interfaces), BSD loopback headers, pcapng files with several interfaces, compressed files. This
script cuts an Ethernet classic pcap (either byte order, microsecond or nanosecond magic) into such host
captures, so that analysing them together can be compared with analysing the original. Standard library
only; the `zstd` command-line tool for zstd output (missing: a loud error).

usage:
  make_host_captures.py split INPUT OUTDIR [--forms LIST] [--shift [HOST=]SECONDS]... [--plant-duplicates K]
                              [--dup-delay-us US] [--dup-window-us US]
  make_host_captures.py convert INPUT OUTPUT --form FORM[:COMPRESSION] [--shift SECONDS]
  make_host_captures.py malformed OUTDIR
  make_host_captures.py info FILE...

split: the frames are grouped by IPv4/IPv6 source address (hosts numbered 1, 2, … in address order, IPv4
  before IPv6). With F forms in --forms, hosts 1 … F-1 get one file each and the F-th file collects every
  remaining source; frames with no IP source (ARP, LLDP, …) go to the first file of form `ether` (or to
  `nonip.pcap`, Ethernet, when no form is `ether`). Files are named h1, h2, … with the suffix `.cap` when
  compressed (content detection is what is tested, not the name), else `.pcap` or `.pcapng`. The default
  --forms is `ether:gzip,sll2:zstd,pcapng,raw`:
    h1.cap     host 1, Ethernet (LINKTYPE 1), nanosecond pcap, gzip-compressed
    h2.cap     host 2, Linux cooked v2 (LINKTYPE_LINUX_SLL2 276), nanosecond pcap, zstd-compressed
    h3.pcapng  host 3, pcapng with two interfaces: 0 raw IP (LINKTYPE_RAW 101, if_tsresol 9) carrying the
               host's even-numbered frames (0, 2, …), 1 Linux cooked v1 (113, if_tsresol 10: units of 0.1 ns)
               with if_tsoffset = the whole second of that interface's earliest frame (stored timestamps are
               the frame's minus the offset) carrying the odd-numbered ones
    h4.pcap    every further source (on the bundled trace: the two IPv6 link-local sources), raw IP
               (LINKTYPE_RAW 101) in a nanosecond classic pcap
  --shift HOST=SECONDS adds SECONDS (may be negative or fractional) to the timestamps of host HOST's file
  (HOST is the file number), --shift SECONDS to every file: files that no longer overlap in time.
  --plant-duplicates K: K IP frames (TCP/UDP preferred, spread evenly over the capture) are written a second
  time, DUP_DELAY_US later (default 5), into another file than their own (the file of the frame's destination
  host when that is another file, else the next file), with the IPv4 TTL / IPv6 hop limit decreased by one and
  the IPv4 header checksum recomputed (what a copy seen one router hop later looks like; neither is part of
  burstscope's duplicate key). Only frames whose duplicate key appears on no other frame within
  DUP_WINDOW_US (default 1000) either side are chosen, so exactly K frames are duplicates under any window
  between the delay and DUP_WINDOW_US. A copy goes in its file at its place in time.
convert: the whole capture in one form, one file (FORM:COMPRESSION as in --forms).
malformed: small host captures with known decode errors (truncated cooked/NULL headers, a raw IP version
  nibble of 5, a pcapng interface of an unsupported link type), and the counts expected.
info: an independent reader of classic pcap and pcapng (gzip/zstd by content): format, compression, link
  types, packets, earliest/latest timestamp in ns, the bytes burstscope should count by the wire-length rule
  and the frames it must count as link-layer decode errors (truncated link header, an IP version the link
  header contradicts, an unsupported link type).

Forms (FORM[:gzip|:zstd]):
  ether          Ethernet (1), frames unchanged                  classic nanosecond pcap
  sll            Linux cooked v1 (113)                           classic nanosecond pcap
  sll2           Linux cooked v2 (276)                           classic nanosecond pcap
  raw            raw IP (LINKTYPE_RAW 101)                       classic nanosecond pcap
  null           BSD loopback (0), AF in host (here little-endian) order, AF_INET6 = 30 (macOS)
  loop           OpenBSD loopback (108), AF in network order, AF_INET6 = 24 (OpenBSD)
  pcapng         the two-interface pcapng above (raw IP + cooked v1; frames raw IP cannot carry go to
                 interface 1)
  pcapng-ipv46   pcapng: interface 0 LINKTYPE_IPV4 (228) for IPv4, interface 1 LINKTYPE_IPV6 (229) for IPv6
  pcapng-binres  big-endian pcapng, one Ethernet interface with a binary if_tsresol of 2^-9 s: timestamps are
                 rounded down to a multiple of 1/512 s (1953125 ns), which is exact in nanoseconds

Conversion to a host form drops the 14-byte Ethernet header and puts the form's header in its place
(cooked v1: packet type 4 = outgoing, ARPHRD 1, address length 6, source MAC padded to 8 bytes, protocol =
the ethertype; cooked v2: protocol, reserved 0, interface index 1, ARPHRD 1, packet type 4, address length 6,
address), caplen and orig_len changing by the same amount. Ethernet padding is trimmed off (an IP packet
shorter than the 46-byte minimum payload is what a host capture shows unpadded) when the frame is exactly
the padded minimum; burstscope counts such a frame as max(60, IP length + 14), the original's length. A frame
under 60 bytes in the input would count more in a host form than in Ethernet: a warning says so. `split`
puts only IP frames in host forms: non-IP and VLAN-tagged frames stay in the Ethernet file (their IP source
is not looked for behind a tag). `convert` refuses, naming the frame, what its form cannot carry: non-IP
frames in raw IP, null, loop and pcapng-ipv46, and VLAN-tagged frames in any host form (a host capture would
show them untagged, 4 bytes shorter).

Each of split/convert/malformed writes a manifest (OUTDIR/manifest.json; for convert, printed on stdout) with,
per file: path, format, compression, link_types (burstscope's names), packets, first_ns and last_ns (earliest
and latest timestamp, after any shift), bytes (what burstscope should count, by the wire-length rule); for
split also each file's form, hosts and shift, the totals, the planted duplicates and their bytes and delay;
for malformed the decode errors expected by name and the frames expected to decode.
"""
import argparse
import bisect
import gzip
import ipaddress
import json
import os
import shutil
import struct
import subprocess
import sys

ETH_IPV4, ETH_IPV6 = 0x0800, 0x86DD
VLAN_TYPES = (0x8100, 0x88A8, 0x9100)
LT_ETHER, LT_NULL, LT_RAW, LT_LOOP, LT_SLL, LT_IPV4, LT_IPV6, LT_SLL2 = 1, 0, 101, 108, 113, 228, 229, 276
LINK_NAMES = {LT_ETHER: "ethernet", LT_SLL: "linux_sll", LT_SLL2: "linux_sll2", LT_RAW: "raw_ip",
              LT_IPV4: "ipv4", LT_IPV6: "ipv6", LT_NULL: "null", LT_LOOP: "loop"}
# Link header bytes replaced by a 14-byte Ethernet header in burstscope's count (0: none, raw IP).
LINK_HEADER = {LT_SLL: 16, LT_SLL2: 20, LT_RAW: 0, LT_IPV4: 0, LT_IPV6: 0, LT_NULL: 4, LT_LOOP: 4}
FORMS = ("ether", "sll", "sll2", "raw", "null", "loop", "pcapng", "pcapng-ipv46", "pcapng-binres")
BINRES_EXP = 9  # pcapng-binres: if_tsresol 0x80 | 9, units of 2^-9 s = 1953125 ns exactly
BINRES_NS = 10**9 // (1 << BINRES_EXP)


def die(msg):
    sys.exit(f"make_host_captures.py: {msg}")


# ---------------------------------------------------------------------------------------------- reading

class Frame:
    __slots__ = ("ts", "orig", "data", "index")

    def __init__(self, ts, orig, data, index):
        self.ts, self.orig, self.data, self.index = ts, orig, data, index


def decompress(raw, path):
    """(bytes, compression) by content: gzip and zstd magic numbers."""
    if raw[:2] == b"\x1f\x8b":
        return gzip.decompress(raw), "gzip"
    if raw[:4] == b"\x28\xb5\x2f\xfd":
        return subprocess.run([zstd_tool(), "-q", "-d", "-c"], input=raw, stdout=subprocess.PIPE,
                              check=True).stdout, "zstd"
    return raw, "none"


def read_classic(d, path):
    """(snaplen, linktype, frames) of a classic pcap in memory."""
    if len(d) < 24:
        die(f"{path}: too short for a pcap header")
    magic = d[:4]
    table = {b"\xd4\xc3\xb2\xa1": ("<", 1000), b"\xa1\xb2\xc3\xd4": (">", 1000),
             b"\x4d\x3c\xb2\xa1": ("<", 1), b"\xa1\xb2\x3c\x4d": (">", 1)}
    if magic not in table:
        die(f"{path}: not a classic pcap (magic {magic.hex()})")
    e, mult = table[magic]
    _, _, _, _, snaplen, linktype = struct.unpack_from(e + "HHiIII", d, 4)
    frames, o = [], 24
    while o + 16 <= len(d):
        sec, frac, cap, orig = struct.unpack_from(e + "IIII", d, o)
        o += 16
        if o + cap > len(d):
            die(f"{path}: record {len(frames) + 1} cut off")
        frames.append(Frame(sec * 10**9 + frac * mult, orig, d[o:o + cap], len(frames)))
        o += cap
    if o != len(d):
        die(f"{path}: {len(d) - o} bytes after the last whole record")
    return snaplen, linktype & 0x0FFFFFFF, frames


def ts_units(tsresol):
    """(numerator, denominator): ns = ticks * num // den."""
    if tsresol & 0x80:
        return 10**9, 1 << (tsresol & 0x7F)
    exp = tsresol
    return (10**(9 - exp), 1) if exp <= 9 else (1, 10**(exp - 9))


def read_pcapng(d, path):
    """[(linktype, frames)] per interface, in file order, over all sections."""
    ifaces, o = [], 0
    section = []
    e = "<"
    while o + 12 <= len(d):
        btype = struct.unpack_from("<I", d, o)[0]
        if btype == 0x0A0D0D0A:
            bom = d[o + 8:o + 12]
            e = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">" if bom == b"\x1a\x2b\x3c\x4d" else die(
                f"{path}: bad pcapng byte-order magic")
            section = []
        btype, blen = struct.unpack_from(e + "II", d, o)
        if blen < 12 or blen % 4 or o + blen > len(d):
            die(f"{path}: pcapng block at offset {o} has a bad length {blen}")
        body = d[o + 8:o + blen - 4]
        if btype == 1:
            lt, _, snap = struct.unpack_from(e + "HHI", body, 0)
            tsresol, tsoffset, p = 6, 0, 8
            while p + 4 <= len(body):
                code, olen = struct.unpack_from(e + "HH", body, p)
                v = body[p + 4:p + 4 + olen]
                p += 4 + (olen + 3) // 4 * 4
                if code == 0:
                    break
                if code == 9 and olen >= 1:
                    tsresol = v[0]
                elif code == 14 and olen >= 8:
                    tsoffset = struct.unpack_from(e + "q", v)[0]
            entry = {"linktype": lt, "units": ts_units(tsresol), "tsoffset": tsoffset, "frames": []}
            section.append(entry)
            ifaces.append(entry)
        elif btype in (6, 2):  # enhanced packet block; obsolete packet block
            if btype == 6:
                iid, hi, lo, cap, orig = struct.unpack_from(e + "IIIII", body, 0)
            else:
                iid, _, hi, lo, cap, orig = struct.unpack_from(e + "HHIIII", body, 0)
            if iid >= len(section):
                die(f"{path}: packet on undeclared interface {iid}")
            it = section[iid]
            num, den = it["units"]
            ts = (hi << 32 | lo) * num // den + it["tsoffset"] * 10**9
            it["frames"].append(Frame(ts, orig, body[20:20 + cap], 0))
        elif btype == 3:  # simple packet block: interface 0, no timestamp
            orig = struct.unpack_from(e + "I", body, 0)[0]
            section[0]["frames"].append(Frame(None, orig, body[4:], 0))
        o += blen
    if o != len(d):
        die(f"{path}: {len(d) - o} bytes after the last whole pcapng block")
    return [(it["linktype"], it["frames"]) for it in ifaces]


def wire_bytes(linktype, orig):
    """What burstscope counts for a frame of this link type (issue 22's rule)."""
    if linktype == LT_ETHER:
        return orig
    return max(60, orig - LINK_HEADER.get(linktype, 0) + 14)


def link_error(linktype, f):
    """True when burstscope must count frame f as a decode error at the link layer: a link type it does not
    read, fewer captured bytes than the link header, or an IP version that the link header contradicts.
    (Malformations further in, such as truncated IP headers, are not looked for.)"""
    if linktype not in LINK_NAMES:
        return True
    d = f.data
    hdr = 14 if linktype == LT_ETHER else LINK_HEADER[linktype]
    if len(d) < hdr:
        return linktype != LT_ETHER
    nibble = d[hdr] >> 4 if len(d) > hdr else None
    if linktype in (LT_RAW, LT_IPV4, LT_IPV6):
        want = {LT_RAW: (4, 6), LT_IPV4: (4,), LT_IPV6: (6,)}[linktype]
        return nibble not in want
    if linktype in (LT_NULL, LT_LOOP):
        af = struct.unpack_from("<I" if linktype == LT_NULL else "!I", d, 0)[0]
        if linktype == LT_NULL and af > 0xFFFF:
            af = struct.unpack_from("!I", d, 0)[0]
        want = 4 if af == 2 else 6 if af in (10, 24, 28, 30) else None
    else:
        et = struct.unpack_from("!H", d, hdr - 2)[0]
        want = 4 if et == ETH_IPV4 else 6 if et == ETH_IPV6 else None
    return want is not None and nibble is not None and nibble != want


def info(path):
    raw = open(path, "rb").read()
    d, comp = decompress(raw, path)
    if d[:4] == b"\x0a\x0d\x0d\x0a":
        fmt, ifaces = "pcapng", read_pcapng(d, path)
    else:
        _, lt, frames = read_classic(d, path)
        fmt, ifaces = "pcap", [(lt, frames)]
    names, packets, total, stamps, errors = [], 0, 0, [], 0
    for lt, frames in ifaces:
        name = LINK_NAMES.get(lt, f"linktype_{lt}")
        if name not in names:
            names.append(name)
        packets += len(frames)
        errors += sum(link_error(lt, f) for f in frames)
        total += sum(wire_bytes(lt, f.orig) for f in frames)
        stamps += [f.ts for f in frames if f.ts is not None]
    return {"path": path, "format": fmt, "compression": comp, "link_types": names, "packets": packets,
            "first_ns": min(stamps) if stamps else None, "last_ns": max(stamps) if stamps else None,
            "bytes": total, "link_errors": errors}


# ---------------------------------------------------------------------------------------------- frames

def ethertype(f):
    return struct.unpack_from("!H", f.data, 12)[0] if len(f.data) >= 14 else None


def ip_source(f):
    """(version, address bytes) of an untagged IP frame's source, else None."""
    et = ethertype(f)
    if et == ETH_IPV4 and len(f.data) >= 34 and f.data[14] >> 4 == 4:
        return (4, f.data[26:30])
    if et == ETH_IPV6 and len(f.data) >= 54 and f.data[14] >> 4 == 6:
        return (6, f.data[22:38])
    return None


def ip_dest(f):
    et = ethertype(f)
    if et == ETH_IPV4 and len(f.data) >= 34:
        return (4, f.data[30:34])
    if et == ETH_IPV6 and len(f.data) >= 54:
        return (6, f.data[38:54])
    return None


def addr_text(src):
    v, a = src
    return str(ipaddress.IPv4Address(a) if v == 4 else ipaddress.IPv6Address(a))


def ip_version(f):
    """4 or 6 for an IP frame whose ethertype and version nibble agree, else None."""
    et = ethertype(f)
    if et == ETH_IPV4 and len(f.data) > 14 and f.data[14] >> 4 == 4:
        return 4
    if et == ETH_IPV6 and len(f.data) > 14 and f.data[14] >> 4 == 6:
        return 6
    return None


def dup_key(f):
    """burstscope's duplicate key (issue 22), or None for non-IP frames. Where this reading is coarser
    than burstscope's (IPv6 extension headers: no L4 part), more frames collide, which only makes the choice
    of frames to duplicate more careful."""
    v = ip_version(f)
    if v is None:
        return None
    ip = f.data[14:]
    if v == 4:
        if len(ip) < 20:
            return None
        ihl = (ip[0] & 0x0F) * 4
        key = bytes([ip[0] >> 4]) + ip[2:8] + ip[9:10] + ip[12:20]
        proto, l4 = ip[9], ip[ihl:]
        if struct.unpack_from("!H", ip, 6)[0] & 0x1FFF:  # a later fragment: no L4 header
            return key
    else:
        if len(ip) < 40:
            return None
        key = bytes([6]) + ip[4:7] + struct.pack("!I", struct.unpack_from("!I", ip, 0)[0] & 0xFFFFF) + ip[8:40]
        proto, l4 = ip[6], ip[40:]
    if proto == 6:
        hl = (l4[12] >> 4) * 4 if len(l4) > 12 else 20
        return key + l4[:16] + l4[hl:hl + 16]
    if proto == 17:
        return key + l4[:6] + l4[8:24]
    return key


def ip_length(f):
    """Length of the IP packet the header declares, or None."""
    v = ip_version(f)
    if v == 4 and len(f.data) >= 18:
        return struct.unpack_from("!H", f.data, 16)[0]
    if v == 6 and len(f.data) >= 20:
        return 40 + struct.unpack_from("!H", f.data, 18)[0]
    return None


def host_payload(f, nr):
    """(captured bytes after the Ethernet header, their original length): the frame as a host capture
    shows it, Ethernet padding trimmed when the frame is exactly the padded minimum."""
    et = ethertype(f)
    if et is None:
        die(f"frame {nr}: {len(f.data)} captured bytes, shorter than an Ethernet header")
    if et in VLAN_TYPES:
        die(f"frame {nr} is VLAN-tagged (ethertype {et:#06x}): a host capture would show it untagged, 4 bytes "
            "shorter; the host forms do not support VLAN frames (keep such traffic in an `ether` file)")
    payload, orig = f.data[14:], f.orig - 14
    ln = ip_length(f)
    if ln is not None and 20 <= ln < orig and f.orig == max(60, ln + 14):
        payload, orig = payload[:ln], ln
    return payload, orig


def sll_header(f, et):
    return struct.pack("!HHH", 4, 1, 6) + f.data[6:12] + b"\0\0" + struct.pack("!H", et)


def sll2_header(f, et):
    return struct.pack("!HHIHBB", et, 0, 1, 1, 4, 6) + f.data[6:12] + b"\0\0"


def af_header(f, form):
    v = ip_version(f)
    if form == "null":
        return struct.pack("<I", 2 if v == 4 else 30)
    return struct.pack("!I", 2 if v == 4 else 24)


def encode(f, nr, linktype, form):
    """(captured bytes, orig_len) of frame f in link type `linktype`."""
    if linktype == LT_ETHER:
        return f.data, f.orig
    payload, orig = host_payload(f, nr)
    et = ethertype(f)
    if linktype == LT_SLL:
        h = sll_header(f, et)
    elif linktype == LT_SLL2:
        h = sll2_header(f, et)
    else:
        v = ip_version(f)
        want = {LT_IPV4: (4,), LT_IPV6: (6,)}.get(linktype, (4, 6))
        if v not in want:
            die(f"frame {nr} (ethertype {et:#06x}) cannot be written as {LINK_NAMES[linktype]}")
        h = af_header(f, form) if linktype in (LT_NULL, LT_LOOP) else b""
    return h + payload, orig + len(h)


# ---------------------------------------------------------------------------------------------- writing

def pcap_bytes(linktype, snaplen, records):
    """Classic little-endian nanosecond pcap; records are (ts_ns, data, orig)."""
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, snaplen, linktype)]
    for ts, data, orig in records:
        if ts < 0:
            die("a timestamp before 1970 cannot be written in a classic pcap")
        out.append(struct.pack("<IIII", ts // 10**9, ts % 10**9, len(data), orig))
        out.append(data)
    return b"".join(out)


def ng_option(e, code, value):
    return struct.pack(e + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def ng_block(e, btype, body):
    body += b"\0" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n)


def pcapng_bytes(ifaces, records, big_endian=False):
    """ifaces: [(linktype, snaplen, tsresol byte, tsoffset seconds, name)]; records: (iface, ticks, data, orig)
    with ticks already in the interface's units and relative to its offset."""
    e = ">" if big_endian else "<"
    shb = struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1) + ng_option(e, 4, b"make_host_captures.py") + \
        ng_option(e, 0, b"")
    out = [ng_block(e, 0x0A0D0D0A, shb)]
    for lt, snap, tsresol, tsoffset, name in ifaces:
        opts = ng_option(e, 2, name.encode()) + ng_option(e, 9, bytes([tsresol]))
        if tsoffset:
            opts += ng_option(e, 14, struct.pack(e + "q", tsoffset))
        out.append(ng_block(e, 1, struct.pack(e + "HHI", lt, 0, snap) + opts + ng_option(e, 0, b"")))
    for iid, ticks, data, orig in records:
        if ticks < 0:
            die("a negative pcapng timestamp")
        out.append(ng_block(e, 6, struct.pack(e + "IIIII", iid, ticks >> 32, ticks & 0xFFFFFFFF, len(data), orig)
                            + data))
    return b"".join(out)


def zstd_tool():
    tool = shutil.which("zstd")
    if not tool:
        die("the `zstd` command-line tool is needed for zstd (Debian: apt-get install zstd)")
    return tool


def compress(data, how):
    if how == "none":
        return data
    if how == "gzip":
        return gzip.compress(data, compresslevel=6, mtime=0)
    return subprocess.run([zstd_tool(), "-q", "-c", "-3"], input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def parse_form(spec):
    form, _, comp = spec.partition(":")
    comp = comp or "none"
    if form not in FORMS:
        die(f"unknown form {form!r} (one of {', '.join(FORMS)})")
    if comp not in ("none", "gzip", "zstd"):
        die(f"unknown compression {comp!r} (gzip or zstd)")
    return form, comp


def file_name(stem, form, comp):
    if comp != "none":
        return stem + ".cap"
    return stem + (".pcapng" if form.startswith("pcapng") else ".pcap")


def write_capture(path, form, comp, frames, snaplen, shift_ns=0):
    """Writes frames (Frame objects, Ethernet) in `form`, compressed by `comp`; returns its manifest entry."""
    stamps = [f.ts + shift_ns for f in frames]
    wire = 0
    simple = {"ether": LT_ETHER, "sll": LT_SLL, "sll2": LT_SLL2, "raw": LT_RAW, "null": LT_NULL, "loop": LT_LOOP}
    if form in simple:
        lt = simple[form]
        records = []
        for f, ts in zip(frames, stamps):
            data, orig = encode(f, f.index + 1, lt, form)
            records.append((ts, data, orig))
            wire += wire_bytes(lt, orig)
        snap = snaplen if lt == LT_ETHER else max(1, snaplen - 14 + LINK_HEADER[lt])
        blob, fmt, links = pcap_bytes(lt, snap, records), "pcap", [lt]
    elif form == "pcapng":
        # Interface 1 (cooked v1) carries the odd-numbered frames and those raw IP cannot carry; its
        # if_tsoffset is the whole second of its earliest frame.
        on_sll = [i % 2 == 1 or ip_version(f) is None for i, f in enumerate(frames)]
        offset = min((ts for ts, sll in zip(stamps, on_sll) if sll), default=0) // 10**9
        ifaces = [(LT_RAW, max(1, snaplen - 14), 9, 0, "raw-ip"),
                  (LT_SLL, snaplen + 2, 10, offset, "cooked-v1")]
        records = []
        for f, ts, sll in zip(frames, stamps, on_sll):
            if not sll:
                data, orig = encode(f, f.index + 1, LT_RAW, form)
                records.append((0, ts, data, orig))
                wire += wire_bytes(LT_RAW, orig)
            else:
                data, orig = encode(f, f.index + 1, LT_SLL, form)
                records.append((1, ts * 10 - offset * 10**10, data, orig))
                wire += wire_bytes(LT_SLL, orig)
        blob, fmt, links = pcapng_bytes(ifaces, records), "pcapng", [LT_RAW, LT_SLL]
    elif form == "pcapng-ipv46":
        ifaces = [(LT_IPV4, max(1, snaplen - 14), 9, 0, "ipv4"), (LT_IPV6, max(1, snaplen - 14), 9, 0, "ipv6")]
        records = []
        for f, ts in zip(frames, stamps):
            lt = LT_IPV6 if ip_version(f) == 6 else LT_IPV4
            data, orig = encode(f, f.index + 1, lt, form)
            records.append((0 if lt == LT_IPV4 else 1, ts, data, orig))
            wire += wire_bytes(lt, orig)
        blob, fmt, links = pcapng_bytes(ifaces, records), "pcapng", [LT_IPV4, LT_IPV6]
    else:  # pcapng-binres
        records = []
        stamps = [ts // BINRES_NS * BINRES_NS for ts in stamps]
        for f, ts in zip(frames, stamps):
            records.append((0, ts // BINRES_NS, f.data, f.orig))
            wire += f.orig
        blob = pcapng_bytes([(LT_ETHER, snaplen, 0x80 | BINRES_EXP, 0, "binres")], records, big_endian=True)
        fmt, links = "pcapng", [LT_ETHER]
    with open(path, "wb") as out:
        out.write(compress(blob, comp))
    return {"path": os.path.basename(path), "form": form, "format": fmt, "compression": comp,
            "link_types": [LINK_NAMES[lt] for lt in links], "packets": len(frames),
            "first_ns": min(stamps) if stamps else None, "last_ns": max(stamps) if stamps else None,
            "bytes": wire}


def load_input(path):
    raw = open(path, "rb").read()
    d, _ = decompress(raw, path)
    snaplen, lt, frames = read_classic(d, path)
    if lt != LT_ETHER:
        die(f"{path}: link type {lt}; the input must be an Ethernet (1) capture")
    return snaplen, frames


# ---------------------------------------------------------------------------------------------- modes

def plant(frames, groups, owner, k, delay_ns, window_ns):
    """Chooses k frames and adds a copy of each to another group; returns (planted, planted bytes)."""
    if k <= 0:
        return 0, 0
    if len(groups) < 2:
        die("--plant-duplicates needs at least two output files")
    keyed = [(f, dup_key(f)) for f in frames]
    by_key = {}
    for f, key in keyed:
        if key is not None:
            by_key.setdefault(key, []).append(f.ts)

    def unique(f, key):
        return all(t == f.ts or abs(t - f.ts) > window_ns + delay_ns for t in by_key[key]) and \
            by_key[key].count(f.ts) == 1

    def l4(f):
        v = ip_version(f)
        return f.data[23] if v == 4 else f.data[20] if v == 6 else None

    pool = [f for f, key in keyed if key is not None and l4(f) in (6, 17) and unique(f, key)]
    if len(pool) < k:
        pool = [f for f, key in keyed if key is not None and unique(f, key)]
    if len(pool) < k:
        die(f"only {len(pool)} frames can be duplicated unambiguously, {k} asked")
    chosen = [pool[(2 * i + 1) * len(pool) // (2 * k)] for i in range(k)]
    dest_group = {}
    for g, (_, members) in enumerate(groups):
        for f in members:
            src = ip_source(f)
            if src is not None:
                dest_group.setdefault(src, g)
    planted_bytes = 0
    for f in chosen:
        g = owner[id(f)]
        d = ip_dest(f)
        target = dest_group.get(d, g) if d is not None else g
        if target == g:
            target = (g + 1) % len(groups)
        data = bytearray(f.data)
        if ip_version(f) == 4:
            data[22] = max(1, data[22] - 1)
            data[24:26] = b"\0\0"
            ihl = (data[14] & 0x0F) * 4
            s = sum(struct.unpack_from(f"!{ihl // 2}H", bytes(data[14:14 + ihl])))
            while s >> 16:
                s = (s & 0xFFFF) + (s >> 16)
            data[24:26] = struct.pack("!H", ~s & 0xFFFF)
        else:
            data[21] = max(1, data[21] - 1)
        copy = Frame(f.ts + delay_ns, f.orig, bytes(data), f.index)
        members = groups[target][1]
        pos = bisect.bisect_right([m.ts for m in members], copy.ts)
        members.insert(pos, copy)
        planted_bytes += f.orig
    return k, planted_bytes


def do_split(a):
    snaplen, frames = load_input(a.input)
    forms = [parse_form(s) for s in a.forms.split(",")]
    shifts, shift_all = {}, 0
    for s in a.shift or []:
        host, eq, sec = s.rpartition("=")
        try:
            ns = round(float(sec) * 10**9)
            if eq:
                shifts[int(host)] = ns
            else:
                shift_all = ns
        except ValueError:
            die(f"--shift {s!r}: expected SECONDS or HOST=SECONDS")
    sources = sorted({ip_source(f) for f in frames} - {None})
    n_files = min(len(forms), len(sources)) if sources else 0
    groups = [(forms[i], []) for i in range(n_files)]
    hosts = [[] for _ in range(n_files)]
    index_of = {}
    for i, src in enumerate(sources):
        g = min(i, len(forms) - 1)
        index_of[src] = g
        hosts[g].append(addr_text(src))
    ether_group = next((g for g, (form, _) in enumerate(groups) if form[0] == "ether"), None)
    owner = {}
    nonip = []
    for f in frames:
        src = ip_source(f)
        if src is None:
            if ether_group is None:
                nonip.append(f)
                continue
            g = ether_group
        else:
            g = index_of[src]
        groups[g][1].append(f)
        owner[id(f)] = g
    if nonip:
        groups.append((("ether", "none"), nonip))
        hosts.append([])
        for f in nonip:
            owner[id(f)] = len(groups) - 1
    planted, planted_bytes = plant(frames, groups, owner, a.plant_duplicates, round(a.dup_delay_us * 1000),
                                   round(a.dup_window_us * 1000))
    os.makedirs(a.outdir, exist_ok=True)
    files = []
    for g, ((form, comp), members) in enumerate(groups):
        stem = f"h{g + 1}" if g < n_files else "nonip"
        name = file_name(stem, form, comp)
        shift = shift_all + shifts.get(g + 1, 0)
        entry = write_capture(os.path.join(a.outdir, name), form, comp, members, snaplen, shift)
        entry["hosts"] = hosts[g]
        entry["shift_ns"] = shift
        files.append(entry)
    manifest = {"input": a.input, "input_packets": len(frames), "input_bytes": sum(f.orig for f in frames),
                "files": files, "packets": sum(e["packets"] for e in files),
                "bytes": sum(e["bytes"] for e in files), "planted": planted, "planted_bytes": planted_bytes,
                "dup_delay_ns": round(a.dup_delay_us * 1000) if planted else 0}
    with open(os.path.join(a.outdir, "manifest.json"), "w") as out:
        json.dump(manifest, out, indent=1)
    clean_bytes = manifest["bytes"] - planted_bytes
    if clean_bytes != manifest["input_bytes"]:
        print(f"make_host_captures.py: warning: the host files count {clean_bytes} bytes by the wire-length rule, "
              f"the input {manifest['input_bytes']} (frames under 60 bytes, or padding beyond the minimum)",
              file=sys.stderr)
    for e in files:
        print(f"{e['path']}: {e['packets']} frames, {e['form']}, {e['compression']}, hosts {' '.join(e['hosts'])}"
              + (f", shifted {e['shift_ns'] / 1e9:g} s" if e["shift_ns"] else ""), file=sys.stderr)
    if planted:
        print(f"planted {planted} duplicates ({planted_bytes} bytes)", file=sys.stderr)


def do_convert(a):
    snaplen, frames = load_input(a.input)
    form, comp = parse_form(a.form)
    entry = write_capture(a.output, form, comp, frames, snaplen, round(float(a.shift) * 10**9))
    entry["path"] = a.output
    json.dump(entry, sys.stdout, indent=1)
    print()


def do_malformed(a):
    """Host captures with known decode errors; manifest: packets, ok, errors by name."""
    os.makedirs(a.outdir, exist_ok=True)
    t0 = 1_795_294_240 * 10**9

    def udp4(i, size=80):
        payload = bytes((i + k) % 256 for k in range(size - 28))
        udp = struct.pack("!HHHH", 40000 + i, 9, 8 + len(payload), 0) + payload
        return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0,
                           bytes([10, 9, 0, 1]), bytes([10, 9, 0, 2])) + udp

    mac = bytes.fromhex("020000000001")
    files = []

    def emit(name, blob, packets, ok, errors, link_types, fmt="pcap"):
        with open(os.path.join(a.outdir, name), "wb") as out:
            out.write(blob)
        files.append({"path": name, "format": fmt, "compression": "none", "link_types": link_types,
                      "packets": packets, "ok": ok, "errors": errors})

    # cooked v1: 3 good frames, 2 with fewer captured bytes (10, 0) than the 16-byte header
    sll = lambda ip: struct.pack("!HHH", 4, 1, 6) + mac + b"\0\0" + struct.pack("!H", ETH_IPV4) + ip
    recs = [(t0 + 1000, sll(udp4(1)), 96), (t0 + 2000, sll(udp4(2))[:10], 96), (t0 + 3000, sll(udp4(3)), 96),
            (t0 + 4000, b"", 96), (t0 + 5000, sll(udp4(5)), 96)]
    emit("truncated-sll.pcap", pcap_bytes(LT_SLL, 262144, [(t, d, o) for t, d, o in recs]), 5, 3,
         {"truncated_link_header": 2}, ["linux_sll"])
    # cooked v2: 2 good, 1 with 19 captured bytes (< 20)
    sll2 = lambda ip: struct.pack("!HHIHBB", ETH_IPV4, 0, 1, 1, 4, 6) + mac + b"\0\0" + ip
    recs = [(t0 + 1000, sll2(udp4(1)), 100), (t0 + 2000, sll2(udp4(2))[:19], 100), (t0 + 3000, sll2(udp4(3)), 100)]
    emit("truncated-sll2.pcap", pcap_bytes(LT_SLL2, 262144, recs), 3, 2, {"truncated_link_header": 1},
         ["linux_sll2"])
    # NULL: 2 good, 1 with 2 captured bytes (< 4)
    null = lambda ip: struct.pack("<I", 2) + ip
    recs = [(t0 + 1000, null(udp4(1)), 84), (t0 + 2000, null(udp4(2))[:2], 84), (t0 + 3000, null(udp4(3)), 84)]
    emit("truncated-null.pcap", pcap_bytes(LT_NULL, 262144, recs), 3, 2, {"truncated_link_header": 1}, ["null"])
    # raw IP: 2 good, 2 whose version nibble is 5 (and 0)
    bad5 = bytes([0x55]) + udp4(2)[1:]
    bad0 = bytes([0x05]) + udp4(3)[1:]
    recs = [(t0 + 1000, udp4(1), 80), (t0 + 2000, bad5, 80), (t0 + 3000, bad0, 80), (t0 + 4000, udp4(4), 80)]
    emit("bad-version-raw.pcap", pcap_bytes(LT_RAW, 262144, recs), 4, 2, {"unknown_ip_version": 2}, ["raw_ip"])
    # pcapng: interface 0 Ethernet (3 good frames), interface 1 LINKTYPE_USER0 (147, unsupported: 2 frames)
    eth = lambda ip: bytes.fromhex("020000000002") + mac + struct.pack("!H", ETH_IPV4) + ip
    ifaces = [(LT_ETHER, 262144, 9, 0, "eth0"), (147, 262144, 9, 0, "user0")]
    recs = [(0, t0 + 1000, eth(udp4(1)), 94), (1, t0 + 1500, b"\x01\x02\x03\x04" * 8, 32),
            (0, t0 + 2000, eth(udp4(2)), 94), (1, t0 + 2500, b"\x05" * 20, 20), (0, t0 + 3000, eth(udp4(3)), 94)]
    emit("unsupported-iface.pcapng", pcapng_bytes(ifaces, recs), 5, 3, {"unsupported_link_type": 2},
         ["ethernet"], fmt="pcapng")
    with open(os.path.join(a.outdir, "manifest.json"), "w") as out:
        json.dump({"files": files}, out, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("split", help="per-host captures in several forms")
    s.add_argument("input")
    s.add_argument("outdir")
    s.add_argument("--forms", default="ether:gzip,sll2:zstd,pcapng,raw")
    s.add_argument("--shift", action="append", metavar="[HOST=]SECONDS")
    s.add_argument("--plant-duplicates", type=int, default=0, metavar="K")
    s.add_argument("--dup-delay-us", type=float, default=5.0)
    s.add_argument("--dup-window-us", type=float, default=1000.0)
    c = sub.add_parser("convert", help="the whole capture in one form")
    c.add_argument("input")
    c.add_argument("output")
    c.add_argument("--form", required=True, metavar="FORM[:COMPRESSION]")
    c.add_argument("--shift", default="0", metavar="SECONDS")
    m = sub.add_parser("malformed", help="host captures with known decode errors")
    m.add_argument("outdir")
    i = sub.add_parser("info", help="read captures independently: counts, link types, times, bytes")
    i.add_argument("files", nargs="+")
    a = p.parse_args()
    if a.mode == "split":
        do_split(a)
    elif a.mode == "convert":
        do_convert(a)
    elif a.mode == "malformed":
        do_malformed(a)
    else:
        json.dump([info(f) for f in a.files], sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()
