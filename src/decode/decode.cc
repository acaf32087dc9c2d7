#include "burstscope/decode.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <string_view>

namespace burstscope {
namespace {

constexpr uint16_t kEthIpv4 = 0x0800;
constexpr uint16_t kEthIpv6 = 0x86DD;
constexpr uint16_t kEthVlan = 0x8100;
constexpr uint16_t kEthQinQ = 0x88A8;
constexpr uint16_t kEthQinQOld = 0x9100;
constexpr uint16_t kGreErspan2 = 0x88BE;  // type I without the S bit, type II with it
constexpr uint16_t kGreErspan3 = 0x22EB;
constexpr uint16_t kGreTeb = 0x6558;
constexpr uint16_t kEthMacControl = 0x8808;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoGre = 47;
constexpr uint8_t kProtoSctp = 132;
constexpr uint32_t kEthernetMinFrame = 60;  // without the FCS, as captures record it

inline uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

}  // namespace

// Bounds-checked view of the captured bytes: `have(n)` before touching n bytes at `off`.
struct Decoder::Cursor {
  const uint8_t* data;
  size_t caplen;
  size_t off;
  uint32_t outer_wire_len;
  size_t ip_end = 0;  // where the IP payload ends by the IP header's length (may lie past the capture)
  bool have(size_t n) const { return off <= caplen && caplen - off >= n; }
  const uint8_t* at() const { return data + off; }
};

const char* linkTypeName(LinkType t) {
  switch (t) {
    case LinkType::kEthernet:
      return "ethernet";
    case LinkType::kLinuxSll:
      return "linux_sll";
    case LinkType::kLinuxSll2:
      return "linux_sll2";
    case LinkType::kRawIp:
      return "raw_ip";
    case LinkType::kIpv4:
      return "ipv4";
    case LinkType::kIpv6:
      return "ipv6";
    case LinkType::kNull:
      return "null";
    case LinkType::kLoop:
      return "loop";
    case LinkType::kUnsupported:
      break;
  }
  return "unsupported";
}

namespace {
// The LINKTYPE_ value of each link type (tcpdump.org's registry), both ways.
constexpr std::pair<uint32_t, LinkType> kPcapLinkTypes[] = {
    {1, LinkType::kEthernet}, {113, LinkType::kLinuxSll}, {276, LinkType::kLinuxSll2}, {101, LinkType::kRawIp},
    {228, LinkType::kIpv4},   {229, LinkType::kIpv6},     {0, LinkType::kNull},        {108, LinkType::kLoop},
};
}  // namespace

LinkType linkTypeFromPcap(uint32_t linktype) {
  // DLT_RAW as libpcap reports it on most systems (12) and on OpenBSD (14).
  if (linktype == 12 || linktype == 14) return LinkType::kRawIp;
  for (const auto& [value, type] : kPcapLinkTypes) {
    if (value == linktype) return type;
  }
  return LinkType::kUnsupported;
}

std::optional<uint32_t> linkTypeToPcap(LinkType t) {
  for (const auto& [value, type] : kPcapLinkTypes) {
    if (type == t) return value;
  }
  return std::nullopt;
}

const char* directionName(Direction d) {
  switch (d) {
    case Direction::kIngress:
      return "ingress";
    case Direction::kEgress:
      return "egress";
    case Direction::kUnknown:
      break;
  }
  return "unknown";
}

const char* decodeErrorName(DecodeError e) {
  switch (e) {
    case DecodeError::kNone:
      return "none";
    case DecodeError::kTruncatedEthernet:
      return "truncated_ethernet";
    case DecodeError::kTruncatedVlan:
      return "truncated_vlan";
    case DecodeError::kTooManyVlanTags:
      return "too_many_vlan_tags";
    case DecodeError::kTruncatedIpv4:
      return "truncated_ipv4";
    case DecodeError::kBadIpv4Version:
      return "bad_ipv4_version";
    case DecodeError::kBadIpv4HeaderLength:
      return "bad_ipv4_header_length";
    case DecodeError::kIpv4LengthExceedsFrame:
      return "ipv4_length_exceeds_frame";
    case DecodeError::kTruncatedIpv6:
      return "truncated_ipv6";
    case DecodeError::kBadIpv6Version:
      return "bad_ipv6_version";
    case DecodeError::kIpv6LengthExceedsFrame:
      return "ipv6_length_exceeds_frame";
    case DecodeError::kTruncatedIpv6ExtHeader:
      return "truncated_ipv6_ext_header";
    case DecodeError::kIpv6ExtChainTooLong:
      return "ipv6_ext_chain_too_long";
    case DecodeError::kTruncatedL4:
      return "truncated_l4";
    case DecodeError::kTruncatedGre:
      return "truncated_gre";
    case DecodeError::kBadGreHeader:
      return "bad_gre_header";
    case DecodeError::kUnknownGreProtocol:
      return "unknown_gre_protocol";
    case DecodeError::kTruncatedErspan:
      return "truncated_erspan";
    case DecodeError::kBadErspanVersion:
      return "bad_erspan_version";
    case DecodeError::kTruncatedVxlan:
      return "truncated_vxlan";
    case DecodeError::kVxlanFlagsInvalid:
      return "vxlan_flags_invalid";
    case DecodeError::kTooManyEncapsulations:
      return "too_many_encapsulations";
    case DecodeError::kCaplenExceedsWireLen:
      return "caplen_exceeds_wire_len";
    case DecodeError::kTruncatedLinkHeader:
      return "truncated_link_header";
    case DecodeError::kUnknownIpVersion:
      return "unknown_ip_version";
    case DecodeError::kTruncatedTcpHeader:
      return "truncated_tcp_header";
    case DecodeError::kBadTcpHeaderLength:
      return "bad_tcp_header_length";
    case DecodeError::kTruncatedBth:
      return "truncated_bth";
    case DecodeError::kBadBthVersion:
      return "bad_bth_version";
    case DecodeError::kTruncatedRoceExtension:
      return "truncated_roce_extension";
    case DecodeError::kTruncatedMacControl:
      return "truncated_mac_control";
    case DecodeError::kUnsupportedLinkType:
      return "unsupported_link_type";
    case DecodeError::kCount:
      break;
  }
  return "invalid";
}

uint64_t DecodeStats::errorTotal() const {
  uint64_t n = 0;
  for (int i = 1; i < kDecodeErrorCount; ++i) n += errors[i];
  return n;
}

void DecodeStats::merge(const DecodeStats& o) {
  for (int i = 0; i < kDecodeErrorCount; ++i) errors[i] += o.errors[i];
  non_ip += o.non_ip;
  encapsulated += o.encapsulated;
  mirror_seq_gaps += o.mirror_seq_gaps;
  mirror_seq_reorders += o.mirror_seq_reorders;
}

bool IpPrefix::contains(uint8_t fam, const std::array<uint8_t, 16>& a) const {
  if (fam != family) return false;
  int full = length / 8;
  if (std::memcmp(a.data(), addr.data(), full) != 0) return false;
  int rest = length % 8;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xFF << (8 - rest));
  return (a[full] & mask) == (addr[full] & mask);
}

// docs/analyze.md "Duplicate suppression" says which bytes and why: what stays the same when one packet is
// captured at two places (not TTL, DSCP/ECN or checksums, which hops and offloads change), up to 96 bytes.
static_assert(std::endian::native == std::endian::little, "duplicateKeyFromIp masks little-endian words");

namespace {
constexpr uint64_t kMul[] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                             0xD6E8FEB86659FD93ull, 0xA0761D6478BD642Full, 0xE7037ED1A0B428DBull,
                             0x8EBC6AF09C88C6E3ull, 0x589965CC75374CC3ull, 0x1D8E4E27C47D124Full,
                             0xFF51AFD7ED558CCDull, 0xC4CEB9FE1A85EC53ull, 0x94D049BB133111EBull};
[[gnu::always_inline]] inline uint64_t finishDuplicateKey(uint64_t h) {
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 29);
}
[[gnu::always_inline]] inline uint64_t load8(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}
// Field `field`'s share of the key: its word, zero-padded, plus the field's number, times the field's multiplier.
constexpr uint64_t term(uint64_t w, int field) { return (w + static_cast<uint64_t>(field) + 1) * kMul[field]; }
// An IPv4 header's share (`d` at it, 20 bytes captured): version and header length, total length to fragment
// offset, protocol, addresses.
[[gnu::always_inline]] inline uint64_t ipv4Terms(const uint8_t* d) {
  return term(d[0], 0) + term(load8(d + 2) & 0xFFFF'FFFF'FFFFull, 1) + term(d[9], 2) + term(load8(d + 12), 3);
}
// The key of an IPv4 frame (`n` bytes captured from its IP header `d` on) whose transport header was captured, `h`
// the terms up to it, when its payload (at `payload`, the fields numbered from `f`) was captured for 16 bytes or not
// at all; false for a payload cut inside its first 16 bytes.
[[gnu::always_inline]] inline bool usualIpv4Key(const uint8_t* d, size_t n, size_t payload, uint64_t h, int f,
                                                uint64_t* key) {
  if (payload + 16 <= n) {
    *key = finishDuplicateKey(h + term(load8(d + payload), f) + term(load8(d + payload + 8), f + 1));
    return true;
  }
  if (payload >= n) {
    *key = finishDuplicateKey(h + term(0, f) + term(0, f + 1));
    return true;
  }
  return false;
}
}  // namespace

// The key of any frame, cut off anywhere. Each field is read as one zero-padded word (cut off at the captured
// length) and the words are combined by independent multiplies, so that nothing waits on a chain of mixes or on
// byte stores to a buffer (gathering the fields into a buffer and hashing it cost 17 ns a frame, twice the rest of
// decoding). Equal frames give equal keys.
static bool duplicateKeyCut(std::span<const uint8_t> d, uint16_t type, uint64_t* key) {
  uint64_t h = 0;
  int field = 0;
  auto put = [&](size_t from, size_t len) {  // len <= 8
    uint64_t w = 0;
    if (from + 8 <= d.size()) {  // one load, the bytes beyond len masked off (little-endian)
      std::memcpy(&w, d.data() + from, 8);
      if (len < 8) w &= (uint64_t{1} << (8 * len)) - 1;
    } else if (from < d.size()) {
      std::memcpy(&w, d.data() + from, std::min(len, d.size() - from));
    }
    h += term(w, field);
    ++field;
  };
  size_t l4;
  uint8_t proto;
  if (type == 0x0800) {
    if (d.size() < 20 || (d[0] >> 4) != 4) return false;
    const size_t ihl = size_t{d[0] & 0x0Fu} * 4;
    put(0, 1);   // version, header length
    put(2, 6);   // total length, IP ID, flags and fragment offset
    put(9, 1);   // protocol
    put(12, 8);  // addresses
    proto = d[9];
    const bool later_fragment = ((d[6] & 0x1F) | d[7]) != 0;
    if (later_fragment) proto = 0;  // no transport header in it: payload bytes follow
    l4 = std::max<size_t>(ihl, 20);
  } else if (type == 0x86DD) {
    if (d.size() < 40 || (d[0] >> 4) != 6) return false;
    uint64_t w;
    std::memcpy(&w, d.data(), 8);
    // Flow label (its high bits share a byte with the traffic class), payload length, next header.
    const uint64_t mask = 0x00FFFFFFFFFF0F00ull;  // bytes 1 (low nibble) to 6, little-endian
    h += term(w & mask, 0);
    field = 1;
    put(8, 8);  // addresses
    put(16, 8);
    put(24, 8);
    put(32, 8);
    proto = d[6];
    l4 = 40;
  } else {
    return false;
  }
  size_t payload = l4;
  if (proto == 6) {
    put(l4, 8);      // ports, sequence
    put(l4 + 8, 8);  // acknowledgement, offset, flags, window
    payload = l4 + 4 * size_t{l4 + 12 < d.size() ? static_cast<size_t>(d[l4 + 12] >> 4) : 5};
  } else if (proto == 17) {
    put(l4, 6);
    payload = l4 + 8;
  }
  put(payload, 8);
  put(payload + 8, 8);
  *key = finishDuplicateKey(h);
  return true;
}

bool duplicateKeyFromIp(std::span<const uint8_t> d, uint16_t type, uint64_t* key) {
  // It runs for every IP frame in the decoder. The usual frames, an IPv4 TCP or UDP segment whose transport header
  // was captured and whose payload was captured for 16 bytes or not at all (an ACK), are keyed in one straight
  // line: the same words as duplicateKeyCut's, each in one load, without its checks of every field against the
  // captured length (the key was 42% of decoding's time, `perf record` of decode_bench: an ACK's payload words lie
  // beyond the end, a data segment's do not, and the two alternate). Everything else (IPv6, a header or payload cut
  // short, no transport header) goes the general way.
  const size_t n = d.size();
  if (type == 0x0800 && n >= 20 && (d[0] >> 4) == 4) {
    const size_t l4 = std::max<size_t>(size_t{d[0] & 0x0Fu} * 4, 20);
    const bool later_fragment = ((d[6] & 0x1F) | d[7]) != 0;
    const uint8_t proto = later_fragment ? 0 : d[9];
    const uint64_t ip = ipv4Terms(d.data());
    // The payload's two fields follow the transport header's.
    if (proto == 6 && l4 + 16 <= n) {
      const size_t payload = l4 + 4 * size_t{static_cast<uint8_t>(d[l4 + 12] >> 4)};
      const uint64_t h = ip + term(load8(d.data() + l4), 4) + term(load8(d.data() + l4 + 8), 5);
      if (usualIpv4Key(d.data(), n, payload, h, 6, key)) return true;
    } else if (proto == 17 && l4 + 8 <= n) {
      const uint64_t h = ip + term(load8(d.data() + l4) & 0xFFFF'FFFF'FFFFull, 4);
      if (usualIpv4Key(d.data(), n, l4 + 8, h, 5, key)) return true;
    }
  }
  return duplicateKeyCut(d, type, key);
}

Decoder::Decoder(DecoderConfig config) : config_(std::move(config)) {
  for (const IpPrefix& p : config_.local_nets) {
    if (p.family != 4) continue;  // never contains an IPv4 address: its place in the order does not matter
    if (p.length < 0 || p.length > 32) {
      v4_nets_exact_ = false;
      continue;
    }
    const uint32_t mask = p.length == 0 ? 0 : ~uint32_t{0} << (32 - p.length);
    v4_nets_.push_back({be32(p.addr.data()) & mask, mask});
  }
}

// Training traffic is nearly all TCP (Gloo's and NCCL's sockets) or RoCEv2 (NCCL over RDMA, UDP) in IPv4: 94% of
// the committed traces' frames come this way. The general way takes such a frame through six calls (decodeEthernet
// to decodeTcp or decodeRoce), each checking the captured length again, and zeroes the record field by field before
// writing it: with its duplicate key 16 ns a TCP frame (`decode_bench`), on the RX lcore that is a DPDK port's wall
// (bench/README.md). Here the same frame is checked once for everything the general way would find wrong or
// different (a second tag, fragments, options or a transport header cut off, lengths that disagree, a VXLAN port) and
// written in whole words; anything else goes the general way, which sets every field of the record from the start.
namespace {
// A frame that cannot be usual (not IPv4 TCP or UDP: GRE's mirror encapsulations, IPv6, anything else) is told by
// its ethertype and protocol, before decodeUsual's call, which cost such frames 2 ns each (`decode_bench` ERSPAN III);
// an untagged VXLAN frame with a 20-byte IP header (a kernel's VXLAN mirror) too, by its UDP port at 36. Inline in
// decode(), which calls it for every frame.
inline bool mayBeUsualFrame(std::span<const uint8_t> data, uint16_t vxlan_port) {
  if (data.size() < 14 + 20 + 8) return false;
  const uint8_t* d = data.data();
  const uint16_t type = be16(d + 12);
  return (type == kEthIpv4 &&
          (d[23] == kProtoTcp || (d[23] == kProtoUdp && !(d[14] == 0x45 && be16(d + 36) == vxlan_port)))) ||
         (type == kEthVlan && data.size() >= 18 + 20 + 8 && be16(d + 16) == kEthIpv4 &&
          (d[27] == kProtoTcp || d[27] == kProtoUdp));
}
}  // namespace

bool Decoder::mayBeUsual(std::span<const uint8_t> data) const { return mayBeUsualFrame(data, config_.vxlan_port); }

bool Decoder::decodeUsual(std::span<const uint8_t> data, uint32_t wire_len, PacketRecord* out) {
  const uint8_t* const d = data.data();
  const size_t n = data.size();
  if (n < 14 + 20 + 8 || n > wire_len || !v4_nets_exact_) return false;
  UsualFrame f{d, n, 14, wire_len, wire_len, 0};
  uint16_t type = be16(d + 12);
  if (type == kEthVlan) {  // one tag, taken as decodeEthertype takes it
    if (n < 18 + 20 + 8) return false;
    if (config_.mirror_vlan_tags >= 1 && f.measured >= 4) {
      f.measured -= 4;  // the mirror's transport tag, not the monitored frame's
    } else {
      f.vlan = be16(d + 14) & 0x0FFF;
    }
    type = be16(d + 16);
    f.off = 18;
  }
  if (type != kEthIpv4) return false;
  // One straight line for each transport, its checks and fields chosen at compile time. (Splitting it so did not
  // change `decode_bench`; what did was keeping usualIpv4Key inline: 11.5 -> 10.9 ns a TCP frame.)
  const uint8_t proto = d[f.off + 9];
  if (proto == kProtoTcp) return decodeUsualIpv4<kProtoTcp>(f, out);
  if (proto == kProtoUdp) return decodeUsualIpv4<kProtoUdp>(f, out);
  return false;
}

template <uint8_t kProto>
inline bool Decoder::decodeUsualIpv4(const UsualFrame& f, PacketRecord* out) {
  const uint8_t* const d = f.data;
  const size_t n = f.caplen, off = f.off;
  const uint8_t* const h = d + off;
  const size_t ihl = size_t{h[0] & 0x0Fu} * 4;
  const size_t total = be16(h + 2);
  // Version 4, a sane header and total length, no fragment (neither more to come nor an offset), a length the wire
  // carried.
  const size_t l4 = off + ihl;
  const size_t ip_end = off + total;
  if ((h[0] >> 4) != 4 || ihl < 20 || total < ihl || (be16(h + 6) & 0x3FFF) != 0 || ip_end > f.wire_len) return false;
  const uint8_t* const t = d + l4;
  size_t header = 8;  // the transport header's length (UDP's, or TCP's from its data offset)
  if constexpr (kProto == kProtoTcp) {
    // Its first 20 bytes captured (and so the IP options), a data offset that fits the IP payload.
    if (l4 + 20 > n) return false;
    header = size_t{static_cast<uint8_t>(t[12] >> 4)} * 4;
    if (header < 20 || l4 + header > ip_end) return false;
  } else {
    // Its 8 bytes captured; not a VXLAN mirror's wrapping.
    if (l4 + 8 > n || be16(t + 2) == config_.vxlan_port) return false;
  }

  Direction direction = Direction::kUnknown;
  if (!v4_nets_.empty()) {
    const uint32_t src = be32(h + 12), dst = be32(h + 16);
    for (const V4Net& net : v4_nets_) {
      if ((src & net.mask) == net.net) {
        direction = Direction::kIngress;
        break;
      }
      if ((dst & net.mask) == net.net) {
        direction = Direction::kEgress;
        break;
      }
    }
  }
  uint32_t dup_key = 0;
  if (config_.duplicate_keys) {
    // duplicateKeyFromIp's usual way, from what is known here (the transport header whole).
    uint64_t key = 0;
    bool keyed;
    if constexpr (kProto == kProtoTcp) {
      keyed = usualIpv4Key(h, n - off, ihl + header, ipv4Terms(h) + term(load8(t), 4) + term(load8(t + 8), 5), 6, &key);
    } else {
      keyed = usualIpv4Key(h, n - off, ihl + 8, ipv4Terms(h) + term(load8(t) & 0xFFFF'FFFF'FFFFull, 4), 5, &key);
    }
    if (!keyed) keyed = duplicateKeyFromIp({h, n - off}, kEthIpv4, &key);  // a payload cut inside its first 16 bytes
    dup_key = keyed ? static_cast<uint32_t>(key) | 1u : 0;
  }
  uint32_t src_addr, dst_addr;
  std::memcpy(&src_addr, h + 12, 4);
  std::memcpy(&dst_addr, h + 16, 4);
  const uint64_t ports_and_kind = uint64_t{be16(t)} | uint64_t{be16(t + 2)} << 16 | uint64_t{kProto} << 32 |
                                  uint64_t{4} << 40;  // src_port, dst_port, proto, family; kind and reserved 0
  static_assert(offsetof(FlowKey, src_port) == 32 && offsetof(FlowKey, family) == 37 && offsetof(FlowKey, kind) == 38);
  out->wire_len = f.measured;
  out->direction = direction;
  out->flags = 0;
  out->vlan = f.vlan;
  out->key = FlowKey::fromWords({src_addr, 0, dst_addr, 0, ports_and_kind});
  const auto ecn = static_cast<uint8_t>((h[1] & 3) << 2);
  if constexpr (kProto == kProtoTcp) {
    out->l4 = ecn | static_cast<uint8_t>(L4Kind::kTcp);
    out->op = t[13];
    out->len = static_cast<uint16_t>(std::min<size_t>(ip_end - l4 - header, UINT16_MAX));
    out->seq = be32(t + 4);
    out->ack = (t[13] & kTcpAck) ? be32(t + 8) : 0;
  } else {
    out->l4 = ecn;
    out->op = 0;
    out->len = 0;
    out->seq = out->ack = 0;
    if (be16(t + 2) == config_.roce_port) {
      // RoCEv2: the queue pair, opcode, PSN and payload, as the general way reads them; a BTH or extension header
      // that is cut off or wrong goes the general way, which counts why.
      Cursor c{d, n, l4, f.wire_len};
      c.ip_end = ip_end;
      if (decodeRoce(c, out) != DecodeError::kNone) return false;
    }
  }
  out->dup_key = dup_key;
  ++stats_.errors[static_cast<int>(DecodeError::kNone)];
  return true;
}

DecodeError Decoder::decode(std::span<const uint8_t> data, uint32_t wire_len, PacketRecord* out, LinkType link) {
  if (link == LinkType::kEthernet && usual_way_ && mayBeUsualFrame(data, config_.vxlan_port) &&
      decodeUsual(data, wire_len, out)) {
    return DecodeError::kNone;
  }
  DecodeError caplen_error = DecodeError::kNone;
  if (data.size() > wire_len) {
    // The capture claims more bytes than the wire carried; measure what we hold.
    caplen_error = DecodeError::kCaplenExceedsWireLen;
    wire_len = static_cast<uint32_t>(data.size());
  }
  out->wire_len = wire_len;
  out->direction = Direction::kUnknown;
  out->flags = 0;
  out->vlan = 0;
  out->key = FlowKey{};
  out->l4 = out->op = 0;
  out->len = 0;
  out->seq = out->ack = 0;
  out->dup_key = 0;
  Cursor c{data.data(), data.size(), 0, wire_len};
  DecodeError e = link == LinkType::kEthernet ? decodeEthernet(c, out, 0) : decodeHostLink(c, link, out);
  if (caplen_error != DecodeError::kNone) e = caplen_error;
  if (e != DecodeError::kNone) out->flags |= kRecordDecodeError;
  if (e == DecodeError::kNone && out->key.family == 0) ++stats_.non_ip;
  if (out->flags & kRecordEncapsulated) ++stats_.encapsulated;
  if (out->direction == Direction::kUnknown) classifyDirection(out);
  ++stats_.errors[static_cast<int>(e)];
  return e;
}

void Decoder::classifyDirection(PacketRecord* out) const {
  if (out->key.family == 0) return;
  for (const IpPrefix& p : config_.local_nets) {
    if (p.contains(out->key.family, out->key.src)) {
      out->direction = Direction::kIngress;
      return;
    }
    if (p.contains(out->key.family, out->key.dst)) {
      out->direction = Direction::kEgress;
      return;
    }
  }
}

DecodeError Decoder::decodeEthernet(Cursor& c, PacketRecord* out, int depth) {
  if (!c.have(14)) return DecodeError::kTruncatedEthernet;
  const uint16_t type = be16(c.at() + 12);
  c.off += 14;
  return decodeEthertype(c, type, out, depth);
}

// A host capture's frame: the link header gives the protocol (an ethertype) and its length; the frame is
// measured as on an Ethernet wire (SPEC: frame bytes), so that host captures and a mirror of the same
// traffic agree: wire length - header + 14, and no less than 60 (the padding a wire adds to short frames).
DecodeError Decoder::decodeHostLink(Cursor& c, LinkType link, PacketRecord* out) {
  const LinkHeader h = parseLinkHeader({c.data, c.caplen}, link);
  if (h.error != DecodeError::kNone) return h.error;
  if (out->wire_len < h.length) return DecodeError::kTruncatedLinkHeader;
  const uint64_t ethernet = uint64_t{out->wire_len} - h.length + 14;  // 64-bit: a raw-IP length near 2^32 grows
  out->wire_len = static_cast<uint32_t>(std::clamp<uint64_t>(ethernet, kEthernetMinFrame, UINT32_MAX));
  c.off += h.length;
  return decodeEthertype(c, h.ethertype, out, 0);
}

LinkHeader parseLinkHeader(std::span<const uint8_t> data, LinkType link) {
  LinkHeader h;
  auto need = [&](uint16_t n, DecodeError e) {
    h.length = n;
    if (data.size() < n) h.error = e;
    return data.size() >= n;
  };
  switch (link) {
    case LinkType::kEthernet:
      if (need(14, DecodeError::kTruncatedEthernet)) h.ethertype = be16(&data[12]);
      break;
    case LinkType::kLinuxSll:
      if (need(16, DecodeError::kTruncatedLinkHeader)) h.ethertype = be16(&data[14]);
      break;
    case LinkType::kLinuxSll2:
      if (need(20, DecodeError::kTruncatedLinkHeader)) h.ethertype = be16(&data[0]);
      break;
    case LinkType::kNull:
    case LinkType::kLoop: {
      if (!need(4, DecodeError::kTruncatedLinkHeader)) break;
      // AF_INET is 2 everywhere; AF_INET6 is 10 (Linux), 24 (NetBSD, OpenBSD), 28 (FreeBSD), 30 (macOS).
      // LINKTYPE_NULL is in the capturing host's byte order, which the file does not say: both are tried.
      auto family = [](uint32_t af) -> uint16_t {
        if (af == 2) return kEthIpv4;
        return af == 10 || af == 24 || af == 28 || af == 30 ? kEthIpv6 : 0;
      };
      h.ethertype = family(be32(data.data()));
      if (h.ethertype == 0 && link == LinkType::kNull) {
        h.ethertype = family(uint32_t{data[3]} << 24 | uint32_t{data[2]} << 16 | uint32_t{data[1]} << 8 | data[0]);
      }
      break;
    }
    case LinkType::kRawIp:
      if (!need(1, DecodeError::kTruncatedIpv4)) break;
      h.length = 0;
      if ((data[0] >> 4) == 4) {
        h.ethertype = kEthIpv4;
      } else if ((data[0] >> 4) == 6) {
        h.ethertype = kEthIpv6;
      } else {
        h.error = DecodeError::kUnknownIpVersion;
      }
      break;
    case LinkType::kIpv4:
      h.ethertype = kEthIpv4;
      break;
    case LinkType::kIpv6:
      h.ethertype = kEthIpv6;
      break;
    case LinkType::kUnsupported:
      h.error = DecodeError::kUnsupportedLinkType;
      break;
  }
  return h;
}

DecodeError Decoder::decodeEthertype(Cursor& c, uint16_t type, PacketRecord* out, int depth) {
  int tags = 0;
  while (type == kEthVlan || type == kEthQinQ || type == kEthQinQOld) {
    if (++tags > kMaxVlanTags) return DecodeError::kTooManyVlanTags;
    if (!c.have(4)) return DecodeError::kTruncatedVlan;
    if (depth == 0 && tags <= config_.mirror_vlan_tags && out->wire_len >= 4) {
      out->wire_len -= 4;  // the mirror's transport tag, not the monitored frame's
    } else {
      out->vlan = be16(c.at()) & 0x0FFF;
    }
    type = be16(c.at() + 2);
    c.off += 4;
  }
  if ((type == kEthIpv4 || type == kEthIpv6) && config_.duplicate_keys) {
    uint64_t key;
    // An encapsulated frame's inner header comes later and replaces the mirror's outer one.
    out->dup_key = duplicateKeyFromIp({c.at(), c.off <= c.caplen ? c.caplen - c.off : 0}, type, &key)
                       ? static_cast<uint32_t>(key) | 1u
                       : 0;
  }
  switch (type) {
    case kEthIpv4:
      return decodeIpv4(c, out, depth);
    case kEthIpv6:
      return decodeIpv6(c, out, depth);
    case kEthMacControl:
      return decodeMacControl(c, out);
    default:
      return DecodeError::kNone;  // non-IP: measured on the port stream only
  }
}

DecodeError Decoder::decodeIpv4(Cursor& c, PacketRecord* out, int depth) {
  if (!c.have(20)) return DecodeError::kTruncatedIpv4;
  const uint8_t* h = c.at();
  if ((h[0] >> 4) != 4) return DecodeError::kBadIpv4Version;
  size_t ihl = size_t{h[0] & 0x0Fu} * 4;
  if (ihl < 20 || be16(h + 2) < ihl) return DecodeError::kBadIpv4HeaderLength;
  FlowKey& k = out->key;
  k.family = 4;
  std::memcpy(k.src.data(), h + 12, 4);
  std::memcpy(k.dst.data(), h + 16, 4);
  k.proto = h[9];
  out->l4 = static_cast<uint8_t>((h[1] & 3) << 2);
  c.ip_end = c.off + be16(h + 2);
  if (!c.have(ihl)) return DecodeError::kTruncatedIpv4;  // options run past the capture
  uint16_t frag = be16(h + 6);
  bool more_fragments = frag & 0x2000;
  uint16_t frag_offset = frag & 0x1FFF;
  if (more_fragments || frag_offset != 0) out->flags |= kRecordFragment;
  // The header is intact but claims more bytes than the wire carried: measure the frame as it was (its
  // wire length), decode on, and count the lie unless something deeper went wrong first.
  const bool too_long = c.off + be16(h + 2) > c.outer_wire_len;
  c.off += ihl;
  DecodeError e = frag_offset != 0 ? DecodeError::kNone  // ports only in the first fragment
                                   : decodeL4(c, k.proto, out, depth);
  return e == DecodeError::kNone && too_long ? DecodeError::kIpv4LengthExceedsFrame : e;
}

DecodeError Decoder::decodeIpv6(Cursor& c, PacketRecord* out, int depth) {
  if (!c.have(40)) return DecodeError::kTruncatedIpv6;
  const uint8_t* h = c.at();
  if ((h[0] >> 4) != 6) return DecodeError::kBadIpv6Version;
  FlowKey& k = out->key;
  k.family = 6;
  std::memcpy(k.src.data(), h + 8, 16);
  std::memcpy(k.dst.data(), h + 24, 16);
  // Payload length 0 is a jumbogram's (its length is in a hop-by-hop option); otherwise it must fit the
  // frame's wire length, as for IPv4 above.
  const size_t payload = be16(h + 4);
  out->l4 = static_cast<uint8_t>(((h[1] >> 4) & 3) << 2);
  c.ip_end = payload != 0 ? c.off + 40 + payload : c.outer_wire_len;
  const bool too_long = payload != 0 && c.off + 40 + payload > c.outer_wire_len;
  DecodeError e = decodeIpv6Chain(c, h[6], out, depth);
  return e == DecodeError::kNone && too_long ? DecodeError::kIpv6LengthExceedsFrame : e;
}

DecodeError Decoder::decodeIpv6Chain(Cursor& c, uint8_t next, PacketRecord* out, int depth) {
  FlowKey& k = out->key;
  c.off += 40;
  for (int n = 0;; ++n) {
    size_t len;
    bool fragment_rest = false;
    switch (next) {
      case 0:    // hop-by-hop options
      case 43:   // routing
      case 60:   // destination options
      case 135:  // mobility
      case 139:  // HIP
      case 140:  // shim6
        if (!c.have(2)) return DecodeError::kTruncatedIpv6ExtHeader;
        len = (size_t{c.at()[1]} + 1) * 8;
        break;
      case 51:  // authentication header: length in 4-byte units, minus 2
        if (!c.have(2)) return DecodeError::kTruncatedIpv6ExtHeader;
        len = (size_t{c.at()[1]} + 2) * 4;
        break;
      case 44:  // fragment
        if (!c.have(8)) return DecodeError::kTruncatedIpv6ExtHeader;
        len = 8;
        out->flags |= kRecordFragment;
        fragment_rest = (be16(c.at() + 2) >> 3) != 0;
        break;
      default:
        k.proto = next;
        return decodeL4(c, next, out, depth);
    }
    if (n >= kMaxIpv6ExtHeaders) return DecodeError::kIpv6ExtChainTooLong;
    if (!c.have(len)) return DecodeError::kTruncatedIpv6ExtHeader;
    next = c.at()[0];
    c.off += len;
    if (fragment_rest) {
      k.proto = next;
      return DecodeError::kNone;
    }
  }
}

DecodeError Decoder::decodeL4(Cursor& c, uint8_t proto, PacketRecord* out, int depth) {
  if (proto == kProtoGre) return decodeGre(c, out, depth);
  if (proto != kProtoTcp && proto != kProtoUdp && proto != kProtoSctp) return DecodeError::kNone;
  if (!c.have(4)) return DecodeError::kTruncatedL4;
  out->key.src_port = be16(c.at());
  out->key.dst_port = be16(c.at() + 2);
  if (out->flags & kRecordFragment) return DecodeError::kNone;  // a first fragment: its transport is incomplete
  if (proto == kProtoTcp) return decodeTcp(c, out);
  if (proto == kProtoUdp && out->key.dst_port == config_.roce_port) return decodeRoce(c, out);
  if (proto != kProtoUdp || out->key.dst_port != config_.vxlan_port) return DecodeError::kNone;
  // VXLAN: 8-byte UDP header, 8-byte VXLAN header (flags, 24 reserved bits, VNI, 8 reserved bits).
  if (!c.have(16)) return DecodeError::kTruncatedVxlan;
  if (!(c.at()[8] & 0x08)) return DecodeError::kVxlanFlagsInvalid;
  c.off += 16;
  return decodeInnerEthernet(c, out, depth);
}

// TCP's flags, payload length and sequence (or, for a segment without data, SYN or FIN, acknowledgement)
// number: what the retransmission analysis needs (docs/evidence.md).
DecodeError Decoder::decodeTcp(Cursor& c, PacketRecord* out) {
  if (!c.have(20)) return DecodeError::kTruncatedTcpHeader;
  const uint8_t* h = c.at();
  const size_t header = static_cast<size_t>(h[12] >> 4) * 4;
  if (header < 20 || c.off + header > c.ip_end) return DecodeError::kBadTcpHeaderLength;
  const size_t payload = std::min<size_t>(c.ip_end - c.off - header, UINT16_MAX);
  out->l4 = static_cast<uint8_t>((out->l4 & ~3u) | static_cast<uint8_t>(L4Kind::kTcp));
  out->op = h[13];
  out->len = static_cast<uint16_t>(payload);
  out->seq = be32(h + 4);
  out->ack = (h[13] & kTcpAck) ? be32(h + 8) : 0;
  return DecodeError::kNone;
}

// RoCEv2: the InfiniBand base transport header after the UDP header, and the extension headers its opcode
// brings (IBTA vol. 1, 9.2-9.5). The flow becomes the queue pair (docs/evidence.md).
DecodeError Decoder::decodeRoce(Cursor& c, PacketRecord* out) {
  if (!c.have(8 + 12)) return DecodeError::kTruncatedBth;
  const uint8_t* u = c.at();
  const uint8_t* bth = u + 8;
  if ((bth[1] & 0x0F) != 0) return DecodeError::kBadBthVersion;
  const uint8_t opcode = bth[0];
  const uint32_t qp = be32(bth + 4) & 0xFFFFFF;
  FlowKey& k = out->key;
  k.kind = static_cast<uint8_t>(FlowKind::kRoceQp);
  k.src_port = static_cast<uint16_t>(qp >> 16);
  k.dst_port = static_cast<uint16_t>(qp & 0xFFFF);
  out->l4 = static_cast<uint8_t>((out->l4 & ~3u) | static_cast<uint8_t>(L4Kind::kRoce));
  out->op = opcode;
  out->seq = be32(bth + 8) & 0xFFFFFF;
  // Extension headers by opcode: RC (0x00-0x1F) and UC (0x20-0x3F) share the low five bits' meaning.
  size_t ext = 0;
  bool aeth = false;
  if (opcode == 0x81) {
    ext = 16;  // CNP: 16 reserved bytes
  } else if (opcode < 0x40) {
    const uint8_t op = opcode & 0x1F;
    const bool rc = opcode < 0x20;
    if (op == 0x06 || op == 0x0A || op == 0x0B || (rc && op == 0x0C)) ext += 16;  // RETH
    if (op == 0x03 || op == 0x05 || op == 0x09 || op == 0x0B) ext += 4;           // ImmDt
    if (rc && (op == 0x16 || op == 0x17)) ext += 4;                               // IETH
    if (rc && (op == 0x0D || op == 0x0F || op == 0x10 || op == 0x11 || op == 0x12)) aeth = true;
    if (rc && (op == 0x13 || op == 0x14)) ext += 28;  // AtomicETH
    if (rc && op == 0x12) ext += 8;                   // AtomicAckETH
  }
  if (aeth) {
    if (!c.have(8 + 12 + 4)) return DecodeError::kTruncatedRoceExtension;
    out->seq |= uint32_t{bth[12]} << 24;  // the AETH syndrome
    ext += 4;
  }
  if (!c.have(8 + 12 + ext)) return DecodeError::kTruncatedRoceExtension;
  // IB payload: the UDP payload less BTH, extension headers, pad bytes and the 4-byte invariant CRC.
  const size_t udp_len = be16(u + 4);
  const size_t overhead = 8 + 12 + ext + ((bth[1] >> 4) & 3) + 4;
  out->len = static_cast<uint16_t>(udp_len > overhead ? udp_len - overhead : 0);
  return DecodeError::kNone;
}

// MAC control (IEEE 802.3 annex 31B): 802.3x PAUSE and 802.1Qbb priority-based flow control.
DecodeError Decoder::decodeMacControl(Cursor& c, PacketRecord* out) {
  if (!c.have(2)) return DecodeError::kTruncatedMacControl;
  const uint16_t opcode = be16(c.at());
  if (opcode == 0x0001) {
    if (!c.have(4)) return DecodeError::kTruncatedMacControl;
    out->l4 = static_cast<uint8_t>(L4Kind::kMacControl);
    out->op = kMacPause;
    out->len = be16(c.at() + 2);
  } else if (opcode == 0x0101) {
    if (!c.have(4 + 16)) return DecodeError::kTruncatedMacControl;
    out->l4 = static_cast<uint8_t>(L4Kind::kMacControl);
    out->op = kMacPfc;
    out->seq = be16(c.at() + 2) & 0xFF;  // class-enable vector
    for (int p = 0; p < 8; ++p) {
      const uint16_t q = be16(c.at() + 4 + 2 * p);
      std::memcpy(out->key.src.data() + 2 * p, &q, 2);
    }
  }
  return DecodeError::kNone;
}

DecodeError Decoder::decodeGre(Cursor& c, PacketRecord* out, int depth) {
  if (!c.have(4)) return DecodeError::kTruncatedGre;
  uint16_t flags = be16(c.at());
  uint16_t proto = be16(c.at() + 2);
  if ((flags & 0x0007) != 0 || (flags & 0x4000) != 0) return DecodeError::kBadGreHeader;
  bool has_checksum = flags & 0x8000, has_key = flags & 0x2000, has_seq = flags & 0x1000;
  size_t len = 4 + (has_checksum ? 4 : 0) + (has_key ? 4 : 0) + (has_seq ? 4 : 0);
  if (!c.have(len)) return DecodeError::kTruncatedGre;
  size_t p = 4 + (has_checksum ? 4 : 0);
  uint32_t key = has_key ? be32(c.at() + p) : 0;
  uint32_t seq = has_seq ? be32(c.at() + len - 4) : 0;
  c.off += len;
  switch (proto) {
    case kGreErspan2: {
      if (!has_seq) return decodeInnerEthernet(c, out, depth);  // ERSPAN type I: no ERSPAN header
      if (!c.have(8)) return DecodeError::kTruncatedErspan;
      const uint8_t* h = c.at();
      if ((h[0] >> 4) != 1) return DecodeError::kBadErspanVersion;
      noteSequence((h[2] & 0x03u) << 8 | h[3], seq);
      c.off += 8;
      return decodeInnerEthernet(c, out, depth);
    }
    case kGreErspan3: {
      if (!c.have(12)) return DecodeError::kTruncatedErspan;
      const uint8_t* h = c.at();
      if ((h[0] >> 4) != 2) return DecodeError::kBadErspanVersion;
      if (has_seq) noteSequence((h[2] & 0x03u) << 8 | h[3], seq);
      uint16_t tail = be16(h + 10);  // P(1) FT(5) HW ID(6) D(1) Gra(2) O(1)
      bool egress = tail & 0x0008;
      size_t hlen = (tail & 0x0001) ? 20 : 12;  // O: an 8-byte platform-specific subheader follows
      if (!c.have(hlen)) return DecodeError::kTruncatedErspan;
      c.off += hlen;
      DecodeError e = decodeInnerEthernet(c, out, depth);
      out->direction = egress ? Direction::kEgress : Direction::kIngress;
      return e;
    }
    case kGreTeb:
      // Sessions keyed by GRE key live in the upper half of the id space, apart from ERSPAN's 10-bit ids.
      if (has_seq) noteSequence(0x80000000u | (key & 0x7FFFFFFFu), seq);
      return decodeInnerEthernet(c, out, depth);
    default:
      return DecodeError::kUnknownGreProtocol;
  }
}

DecodeError Decoder::decodeInnerEthernet(Cursor& c, PacketRecord* out, int depth) {
  if (depth + 1 > kMaxEncapsulations) return DecodeError::kTooManyEncapsulations;
  // From here on the inner frame is what is measured, with its own wire length.
  out->wire_len = c.outer_wire_len - static_cast<uint32_t>(c.off);
  out->flags |= kRecordEncapsulated;
  out->vlan = 0;
  out->key = FlowKey{};
  out->l4 = out->op = 0;  // the outer header's ECN and transport are the mirror's, not the measured frame's
  out->len = 0;
  out->seq = out->ack = 0;
  out->dup_key = 0;
  return decodeEthernet(c, out, depth + 1);
}

void Decoder::noteSequence(uint32_t session, uint32_t seq) {
  auto it = last_seq_.find(session);
  if (it == last_seq_.end()) {
    if (last_seq_.size() < kMaxTrackedSessions) last_seq_.emplace(session, seq);
    return;
  }
  uint32_t gap = seq - (it->second + 1);  // modulo 2^32: sequence numbers wrap
  if (gap == 0) {
    it->second = seq;
  } else if (gap < 0x80000000u) {
    stats_.mirror_seq_gaps += gap;
    it->second = seq;
  } else {
    ++stats_.mirror_seq_reorders;
  }
}

}  // namespace burstscope
