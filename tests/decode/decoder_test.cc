#include "burstscope/decode.h"

#include <gtest/gtest.h>

#include <pcap/pcap.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "tests/common/frames.h"

namespace burstscope {
namespace {

using testing::FrameBuilder;
using testing::ip4;

// Decodes `n` bytes of `f` from a heap buffer of exactly n bytes, so that AddressSanitizer catches any
// read past the captured length.
DecodeError decodePrefix(Decoder& d, const std::vector<uint8_t>& f, size_t n, uint32_t wire_len, PacketRecord* r) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[n == 0 ? 1 : n]);
  std::copy(f.begin(), f.begin() + static_cast<ptrdiff_t>(n), copy.get());
  return d.decode({copy.get(), n}, wire_len, r);
}

DecodeError decodeAll(Decoder& d, const FrameBuilder& b, PacketRecord* r, uint32_t extra_wire = 0) {
  return decodePrefix(d, b.bytes, b.bytes.size(), static_cast<uint32_t>(b.bytes.size()) + extra_wire, r);
}

FrameBuilder innerTcp(uint16_t sport = 40000, uint16_t dport = 29500) {
  FrameBuilder b;
  b.eth(0x0800).ipv4(ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 6, 20 + 100).tcp(sport, dport).payload(100);
  return b;
}

void expectInnerTcp(const PacketRecord& r) {
  EXPECT_EQ(r.key.family, 4);
  EXPECT_EQ(r.key.src[0], 10);
  EXPECT_EQ(r.key.dst[3], 2);
  EXPECT_EQ(r.key.proto, 6);
  EXPECT_EQ(r.key.src_port, 40000);
  EXPECT_EQ(r.key.dst_port, 29500);
}

TEST(DecoderTest, PlainIpv4TcpGivesFiveTupleAndWireLength) {
  Decoder d;
  PacketRecord r;
  FrameBuilder b = innerTcp();
  EXPECT_EQ(decodeAll(d, b, &r, 1000), DecodeError::kNone);
  expectInnerTcp(r);
  EXPECT_EQ(r.wire_len, b.bytes.size() + 1000);  // wire length, not captured length
  EXPECT_EQ(r.flags, 0);
  EXPECT_EQ(d.stats().errors[0], 1u);
}

TEST(DecoderTest, VlanStacksOfEveryTpidAreWalkedAndInnermostIdKept) {
  Decoder d;
  PacketRecord r;
  FrameBuilder b;
  b.eth(0x88A8).vlan(100, 0x9100).vlan(200, 0x8100).vlan(300, 0x0800);
  b.ipv4(ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 17, 8).ports(1, 2, 8);
  EXPECT_EQ(decodeAll(d, b, &r), DecodeError::kNone);
  EXPECT_EQ(r.vlan, 300);
  EXPECT_EQ(r.key.dst_port, 2);
}

TEST(DecoderTest, VlanStackDepthIsBounded) {
  for (int tags : {Decoder::kMaxVlanTags, Decoder::kMaxVlanTags + 1, 20}) {
    Decoder d;
    PacketRecord r;
    FrameBuilder b;
    b.eth(0x8100);
    for (int i = 0; i < tags; ++i) b.vlan(static_cast<uint16_t>(i + 1), i + 1 < tags ? 0x8100 : 0x0800);
    b.ipv4(ip4(1, 1, 1, 1), ip4(2, 2, 2, 2), 6, 20).tcp(5, 6);
    DecodeError want = tags <= Decoder::kMaxVlanTags ? DecodeError::kNone : DecodeError::kTooManyVlanTags;
    EXPECT_EQ(decodeAll(d, b, &r), want) << tags << " tags";
    EXPECT_EQ(r.wire_len, b.bytes.size()) << "bytes still count";
  }
}

TEST(DecoderTest, MirrorVlanTagsAreNotCountedAsFrameBytes) {
  DecoderConfig cfg;
  cfg.mirror_vlan_tags = 2;
  Decoder d(cfg);
  PacketRecord r;
  FrameBuilder b;
  b.eth(0x88A8).vlan(100, 0x8100).vlan(200, 0x8100).vlan(300, 0x0800);
  b.ipv4(ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 6, 20).tcp(1, 2);
  EXPECT_EQ(decodeAll(d, b, &r), DecodeError::kNone);
  EXPECT_EQ(r.wire_len, b.bytes.size() - 8);
  EXPECT_EQ(r.vlan, 300);
}

TEST(DecoderTest, Ipv4OptionsAreSkippedBeforePorts) {
  Decoder d;
  PacketRecord r;
  FrameBuilder b;
  b.eth(0x0800).ipv4(ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 6, 20, /*ihl=*/7).tcp(1234, 80);
  EXPECT_EQ(decodeAll(d, b, &r), DecodeError::kNone);
  EXPECT_EQ(r.key.src_port, 1234);
  EXPECT_EQ(r.key.dst_port, 80);
}

TEST(DecoderTest, BadIpv4HeadersAreCountedByReason) {
  struct Case {
    uint8_t first_byte;
    DecodeError want;
  };
  for (Case c : {Case{0x44, DecodeError::kBadIpv4HeaderLength}, Case{0x55, DecodeError::kBadIpv4Version},
                 Case{0x40, DecodeError::kBadIpv4HeaderLength}}) {
    Decoder d;
    PacketRecord r;
    FrameBuilder b = innerTcp();
    b.bytes[14] = c.first_byte;
    EXPECT_EQ(decodeAll(d, b, &r), c.want);
    EXPECT_EQ(d.stats().errors[static_cast<int>(c.want)], 1u);
    EXPECT_TRUE(r.flags & kRecordDecodeError);
    EXPECT_EQ(r.wire_len, b.bytes.size());
  }
  Decoder d;
  PacketRecord r;
  FrameBuilder b = innerTcp();
  b.bytes[16] = 0;
  b.bytes[17] = 10;  // total length shorter than the header
  EXPECT_EQ(decodeAll(d, b, &r), DecodeError::kBadIpv4HeaderLength);
}

TEST(DecoderTest, PortsComeOnlyFromTheFirstFragment) {
  Decoder d;
  PacketRecord r;
  FrameBuilder first;
  first.eth(0x0800).ipv4(ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 17, 8, 5, 0x2000).ports(7, 8, 8);
  EXPECT_EQ(decodeAll(d, first, &r), DecodeError::kNone);
  EXPECT_EQ(r.key.dst_port, 8);
  EXPECT_TRUE(r.flags & kRecordFragment);
  FrameBuilder later;
  later.eth(0x0800).ipv4(ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 17, 8, 5, 185).ports(7, 8, 8);
  EXPECT_EQ(decodeAll(d, later, &r), DecodeError::kNone);
  EXPECT_EQ(r.key.dst_port, 0);
  EXPECT_EQ(r.key.proto, 17);
  EXPECT_TRUE(r.flags & kRecordFragment);
}

TEST(DecoderTest, Ipv6ExtensionHeadersAreWalked) {
  Decoder d;
  PacketRecord r;
  FrameBuilder b;
  b.eth(0x86DD).ipv6(1, 2, 0, 8 + 16 + 20);
  b.mark("ext").u8(60).u8(0).zeros(6);  // hop-by-hop, 8 bytes, next: destination options
  b.mark("ext").u8(6).u8(1).zeros(14);  // destination options, 16 bytes, next: TCP
  b.tcp(5555, 443);
  EXPECT_EQ(decodeAll(d, b, &r), DecodeError::kNone);
  EXPECT_EQ(r.key.family, 6);
  EXPECT_EQ(r.key.src[15], 1);
  EXPECT_EQ(r.key.proto, 6);
  EXPECT_EQ(r.key.dst_port, 443);
}

TEST(DecoderTest, Ipv6NonFirstFragmentHasNoPorts) {
  Decoder d;
  PacketRecord r;
  FrameBuilder b;
  b.eth(0x86DD).ipv6(1, 2, 44, 8 + 8);
  b.mark("ext").u8(17).u8(0).u16(100 << 3).u32(7);
  b.ports(1, 2, 8);
  EXPECT_EQ(decodeAll(d, b, &r), DecodeError::kNone);
  EXPECT_EQ(r.key.proto, 17);
  EXPECT_EQ(r.key.dst_port, 0);
  EXPECT_TRUE(r.flags & kRecordFragment);
}

TEST(DecoderTest, Ipv6ExtensionChainsAreBoundedAndNeverReadPastTheEnd) {
  {
    Decoder d;
    PacketRecord r;
    FrameBuilder b;
    b.eth(0x86DD).ipv6(1, 2, 60, 8 * 20);
    for (int i = 0; i < 20; ++i) b.u8(60).u8(0).zeros(6);  // a chain that never ends
    EXPECT_EQ(decodeAll(d, b, &r), DecodeError::kIpv6ExtChainTooLong);
  }
  {
    Decoder d;
    PacketRecord r;
    FrameBuilder b;
    b.eth(0x86DD).ipv6(1, 2, 0, 8);
    b.u8(6).u8(200).zeros(6);  // claims 1608 bytes
    EXPECT_EQ(decodeAll(d, b, &r), DecodeError::kTruncatedIpv6ExtHeader);
    EXPECT_EQ(r.key.family, 6) << "addresses decoded, so the pair is known";
  }
}

struct EncapCase {
  const char* name;
  FrameBuilder outer;  // everything before the inner Ethernet frame
};

std::vector<EncapCase> encapsulations() {
  std::vector<EncapCase> v;
  auto ipgre = [](FrameBuilder& b) { b.eth(0x0800).ipv4(ip4(192, 168, 1, 1), ip4(192, 168, 1, 2), 47, 0); };
  {
    FrameBuilder b;
    ipgre(b);
    b.gre(0x0000, 0x88BE);
    v.push_back({"erspan1", b});
  }
  {
    FrameBuilder b;
    ipgre(b);
    b.gre(0x1000, 0x88BE, 5).erspan2(7);
    v.push_back({"erspan2", b});
  }
  {
    FrameBuilder b;
    ipgre(b);
    b.gre(0x1000, 0x22EB, 5).erspan3(9, false, false);
    v.push_back({"erspan3", b});
  }
  {
    FrameBuilder b;
    ipgre(b);
    b.gre(0x1000, 0x22EB, 5).erspan3(9, true, true);
    v.push_back({"erspan3_subheader", b});
  }
  {
    FrameBuilder b;
    ipgre(b);
    b.gre(0xB000, 0x6558, 5);  // checksum, key and sequence present
    v.push_back({"gre_teb", b});
  }
  {
    FrameBuilder b;
    b.eth(0x8100).vlan(10, 0x0800).ipv4(ip4(192, 168, 1, 1), ip4(192, 168, 1, 2), 17, 0);
    b.ports(50000, 4789, 0).vxlan();
    v.push_back({"vxlan", b});
  }
  return v;
}

TEST(DecoderTest, MirrorEncapsulationsAreRemovedAndTheInnerFrameMeasured) {
  for (const EncapCase& c : encapsulations()) {
    SCOPED_TRACE(c.name);
    Decoder d;
    PacketRecord r;
    FrameBuilder inner = innerTcp();
    std::vector<uint8_t> frame = c.outer.bytes;
    frame.insert(frame.end(), inner.bytes.begin(), inner.bytes.end());
    const uint32_t wire = static_cast<uint32_t>(frame.size()) + 1400;  // captured with a small snaplen
    EXPECT_EQ(decodePrefix(d, frame, frame.size(), wire, &r), DecodeError::kNone);
    expectInnerTcp(r);
    EXPECT_EQ(r.wire_len, inner.bytes.size() + 1400);
    EXPECT_TRUE(r.flags & kRecordEncapsulated);
    EXPECT_EQ(d.stats().encapsulated, 1u);
    if (std::string(c.name) == "erspan3_subheader") {
      EXPECT_EQ(r.direction, Direction::kEgress);
    }
    if (std::string(c.name) == "erspan3") {
      EXPECT_EQ(r.direction, Direction::kIngress);
    }
  }
}

// Cuts every frame at every byte: never a crash or an over-read, exactly one count per frame, and at each
// header boundary the error names the layer that was cut.
TEST(DecoderTest, TruncationAtEveryHeaderBoundaryIsCountedByLayer) {
  const std::map<std::string, DecodeError> want_at_layer = {{"ethernet", DecodeError::kTruncatedEthernet},
                                                            {"vlan", DecodeError::kTruncatedVlan},
                                                            {"ipv4", DecodeError::kTruncatedIpv4},
                                                            {"ipv6", DecodeError::kTruncatedIpv6},
                                                            {"l4", DecodeError::kTruncatedL4},
                                                            {"gre", DecodeError::kTruncatedGre},
                                                            {"erspan", DecodeError::kTruncatedErspan},
                                                            {"vxlan", DecodeError::kTruncatedVxlan},
                                                            {"ext", DecodeError::kTruncatedIpv6ExtHeader}};
  std::vector<std::pair<std::string, FrameBuilder>> frames;
  for (const EncapCase& c : encapsulations()) {
    FrameBuilder b = c.outer;
    FrameBuilder inner = innerTcp();
    for (auto [layer, off] : inner.marks) b.marks.push_back({layer, off + b.bytes.size()});
    b.bytes.insert(b.bytes.end(), inner.bytes.begin(), inner.bytes.end());
    frames.emplace_back(c.name, b);
  }
  {
    FrameBuilder b;
    b.eth(0x88A8).vlan(1, 0x8100).vlan(2, 0x86DD).ipv6(1, 2, 0, 8 + 20);
    b.mark("ext").u8(6).u8(0).zeros(6);
    b.tcp(1, 2);
    frames.emplace_back("qinq_ipv6", b);
  }
  for (const auto& [name, b] : frames) {
    SCOPED_TRACE(name);
    Decoder d;
    const uint32_t wire = static_cast<uint32_t>(b.bytes.size()) + 500;
    for (size_t n = 0; n <= b.bytes.size(); ++n) {
      PacketRecord r;
      DecodeError e = decodePrefix(d, b.bytes, n, wire, &r);
      EXPECT_LE(r.wire_len, wire);
      for (const auto& [layer, off] : b.marks) {
        // A frame cut exactly where a header starts (or within its first byte) fails at that header.
        if (off == n) {
          EXPECT_EQ(e, want_at_layer.at(layer)) << "cut at " << n << " (start of " << layer << ")";
        }
      }
      if (n == b.bytes.size()) {
        EXPECT_EQ(e, DecodeError::kNone);
      }
    }
    uint64_t total = 0;
    for (uint64_t c : d.stats().errors) total += c;
    EXPECT_EQ(total, b.bytes.size() + 1) << "each frame counted exactly once";
  }
}

TEST(DecoderTest, BadGreErspanAndVxlanHeadersAreCountedByReason) {
  auto build = [](auto&& fill) {
    FrameBuilder b;
    fill(b);
    FrameBuilder inner = innerTcp();
    b.bytes.insert(b.bytes.end(), inner.bytes.begin(), inner.bytes.end());
    return b;
  };
  auto ipgre = [](FrameBuilder& b) { b.eth(0x0800).ipv4(ip4(192, 168, 1, 1), ip4(192, 168, 1, 2), 47, 0); };
  struct Case {
    const char* name;
    FrameBuilder frame;
    DecodeError want;
  };
  std::vector<Case> cases = {
      {"gre version 1", build([&](FrameBuilder& b) {
         ipgre(b);
         b.gre(0x0001, 0x88BE);
       }),
       DecodeError::kBadGreHeader},
      {"gre routing bit", build([&](FrameBuilder& b) {
         ipgre(b);
         b.gre(0x4000, 0x6558);
       }),
       DecodeError::kBadGreHeader},
      {"unknown gre protocol", build([&](FrameBuilder& b) {
         ipgre(b);
         b.gre(0, 0x0800);
       }),
       DecodeError::kUnknownGreProtocol},
      {"erspan2 version 3", build([&](FrameBuilder& b) {
         ipgre(b);
         b.gre(0x1000, 0x88BE, 1).erspan2(1, 3);
       }),
       DecodeError::kBadErspanVersion},
      {"erspan3 version 1", build([&](FrameBuilder& b) {
         ipgre(b);
         b.gre(0x1000, 0x22EB, 1).erspan3(1, 0, 0, 1);
       }),
       DecodeError::kBadErspanVersion},
      {"vxlan without I flag", build([&](FrameBuilder& b) {
         b.eth(0x0800).ipv4(ip4(1, 1, 1, 1), ip4(2, 2, 2, 2), 17, 0).ports(1, 4789, 0).vxlan(0x00);
       }),
       DecodeError::kVxlanFlagsInvalid},
  };
  for (const Case& c : cases) {
    Decoder d;
    PacketRecord r;
    EXPECT_EQ(decodeAll(d, c.frame, &r), c.want) << c.name;
    EXPECT_EQ(r.wire_len, c.frame.bytes.size()) << c.name << ": outer frame still counts";
    EXPECT_EQ(d.stats().errorTotal(), 1u) << c.name;
  }
}

TEST(DecoderTest, NestedEncapsulationDepthIsBounded) {
  Decoder d;
  PacketRecord r;
  FrameBuilder b;
  for (int i = 0; i <= Decoder::kMaxEncapsulations; ++i) {
    b.eth(0x0800).ipv4(ip4(1, 1, 1, 1), ip4(2, 2, 2, 2), 17, 0).ports(1, 4789, 0).vxlan();
  }
  b.eth(0x0806).zeros(28);
  EXPECT_EQ(decodeAll(d, b, &r), DecodeError::kTooManyEncapsulations);
}

TEST(DecoderTest, MirrorSequenceGapsAndReordersAreCounted) {
  Decoder d;
  for (uint32_t seq : {0xFFFFFFF0u, 0xFFFFFFF1u, 0xFFFFFFF4u, 0xFFFFFFF5u, 0xFFFFFFF3u, 0xFFFFFFFFu, 0u, 3u}) {
    FrameBuilder b;
    b.eth(0x0800).ipv4(ip4(192, 168, 1, 1), ip4(192, 168, 1, 2), 47, 0).gre(0x1000, 0x88BE, seq).erspan2(3);
    FrameBuilder inner = innerTcp();
    b.bytes.insert(b.bytes.end(), inner.bytes.begin(), inner.bytes.end());
    PacketRecord r;
    decodeAll(d, b, &r);
  }
  // F1 -> F4 loses 2; F3 comes late; F5 -> FF loses 9; the wrap to 0 loses nothing; 0 -> 3 loses 2.
  EXPECT_EQ(d.stats().mirror_seq_gaps, 2u + 9u + 2u);
  EXPECT_EQ(d.stats().mirror_seq_reorders, 1u);
}

TEST(DecoderTest, CaplenLargerThanWireLengthIsCountedAndMeasuredAsCaptured) {
  Decoder d;
  PacketRecord r;
  FrameBuilder b = innerTcp();
  EXPECT_EQ(decodePrefix(d, b.bytes, b.bytes.size(), 60, &r), DecodeError::kCaplenExceedsWireLen);
  EXPECT_EQ(r.wire_len, b.bytes.size());
  expectInnerTcp(r);
}

TEST(DecoderTest, LocalNetworksGiveTheDirection) {
  DecoderConfig cfg;
  IpPrefix p;
  ASSERT_TRUE(parsePrefix("10.0.0.1/32", &p));
  cfg.local_nets.push_back(p);
  Decoder d(cfg);
  PacketRecord r;
  decodeAll(d, innerTcp(), &r);
  EXPECT_EQ(r.direction, Direction::kIngress);  // from a local host into the switch
  FrameBuilder back;
  back.eth(0x0800).ipv4(ip4(10, 0, 0, 2), ip4(10, 0, 0, 1), 6, 20).tcp(1, 2);
  decodeAll(d, back, &r);
  EXPECT_EQ(r.direction, Direction::kEgress);
  EXPECT_FALSE(parsePrefix("10.0.0.0/33", &p));
  EXPECT_FALSE(parsePrefix("not-an-address", &p));
  ASSERT_TRUE(parsePrefix("fd00::/8", &p));
  EXPECT_EQ(p.family, 6);
}

// A host capture's frame: the Ethernet frame `eth` with its 14-byte header replaced by `link`'s header.
std::vector<uint8_t> asHostCapture(const std::vector<uint8_t>& eth, LinkType link, uint32_t family = 0) {
  const uint16_t type = static_cast<uint16_t>(eth[12] << 8 | eth[13]);
  std::vector<uint8_t> h;
  switch (link) {
    case LinkType::kLinuxSll:  // packet type 4 (outgoing), ARPHRD_ETHER, address length 6, address, protocol
      h = {0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, static_cast<uint8_t>(type >> 8), static_cast<uint8_t>(type)};
      break;
    case LinkType::kLinuxSll2:  // protocol, reserved, interface index, ARPHRD_ETHER, packet type, address
      h = {static_cast<uint8_t>(type >> 8),
           static_cast<uint8_t>(type),
           0,
           0,
           0,
           0,
           0,
           3,
           0,
           1,
           4,
           6,
           2,
           0,
           0,
           0,
           0,
           1,
           0,
           0};
      break;
    case LinkType::kNull:  // the address family in little-endian (the capturing host's order)
      h = {static_cast<uint8_t>(family), 0, 0, 0};
      break;
    case LinkType::kLoop:
      h = {0, 0, 0, static_cast<uint8_t>(family)};
      break;
    default:
      break;
  }
  h.insert(h.end(), eth.begin() + 14, eth.end());
  return h;
}

DecodeError decodeLink(Decoder& d, const std::vector<uint8_t>& f, size_t n, uint32_t wire_len, LinkType link,
                       PacketRecord* r) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[n == 0 ? 1 : n]);
  std::copy(f.begin(), f.begin() + static_cast<ptrdiff_t>(n), copy.get());
  return d.decode({copy.get(), n}, wire_len, r, link);
}

TEST(DecoderTest, HostCapturesMeasureTheEthernetFrameTheirPacketWasOnTheWire) {
  FrameBuilder tcp = innerTcp();
  FrameBuilder v6;
  v6.eth(0x86DD).ipv6(1, 2, 17, 8 + 200).ports(5000, 5001, 8 + 200).payload(200);
  struct Case {
    LinkType link;
    uint32_t family;
  };
  for (const Case c : {Case{LinkType::kLinuxSll, 0}, Case{LinkType::kLinuxSll2, 0}, Case{LinkType::kRawIp, 0},
                       Case{LinkType::kNull, 2}, Case{LinkType::kLoop, 2}, Case{LinkType::kIpv4, 0}}) {
    SCOPED_TRACE(linkTypeName(c.link));
    Decoder d;
    PacketRecord r;
    const std::vector<uint8_t> f = asHostCapture(tcp.bytes, c.link, c.family);
    // Snapped to 60 captured bytes of a frame whose wire length is 1000 bytes more than captured.
    const size_t cap = std::min<size_t>(f.size(), 60);
    EXPECT_EQ(decodeLink(d, f, cap, static_cast<uint32_t>(f.size()) + 1000, c.link, &r), DecodeError::kNone);
    expectInnerTcp(r);
    EXPECT_EQ(r.wire_len, tcp.bytes.size() + 1000);  // the Ethernet frame's length
  }
  for (const Case c : {Case{LinkType::kLinuxSll2, 0}, Case{LinkType::kRawIp, 0}, Case{LinkType::kNull, 30},
                       Case{LinkType::kNull, 10}, Case{LinkType::kLoop, 24}, Case{LinkType::kIpv6, 0}}) {
    SCOPED_TRACE(linkTypeName(c.link));
    Decoder d;
    PacketRecord r;
    const std::vector<uint8_t> f = asHostCapture(v6.bytes, c.link, c.family);
    EXPECT_EQ(decodeLink(d, f, f.size(), static_cast<uint32_t>(f.size()), c.link, &r), DecodeError::kNone);
    EXPECT_EQ(r.key.family, 6);
    EXPECT_EQ(r.key.dst_port, 5001);
    EXPECT_EQ(r.wire_len, v6.bytes.size());
  }
}

TEST(DecoderTest, AShortHostCapturePacketIsPaddedToTheEthernetMinimum) {
  FrameBuilder ack;
  ack.eth(0x0800).ipv4(ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 6, 20).tcp(1, 2);  // 54 bytes
  Decoder d;
  PacketRecord r;
  const std::vector<uint8_t> f = asHostCapture(ack.bytes, LinkType::kLinuxSll);
  EXPECT_EQ(decodeLink(d, f, f.size(), static_cast<uint32_t>(f.size()), LinkType::kLinuxSll, &r), DecodeError::kNone);
  EXPECT_EQ(r.wire_len, 60u);
  // A mirror's Ethernet frame is measured as captured: a padded one says 60 itself.
  EXPECT_EQ(decodeAll(d, ack, &r), DecodeError::kNone);
  EXPECT_EQ(r.wire_len, ack.bytes.size());
}

TEST(DecoderTest, BrokenHostLinkHeadersAreCountedByReasonAndNeverReadPast) {
  FrameBuilder tcp = innerTcp();
  for (LinkType link : {LinkType::kLinuxSll, LinkType::kLinuxSll2, LinkType::kNull, LinkType::kLoop}) {
    SCOPED_TRACE(linkTypeName(link));
    const std::vector<uint8_t> f = asHostCapture(tcp.bytes, link, 2);
    const size_t header = f.size() - (tcp.bytes.size() - 14);
    Decoder d;
    PacketRecord r;
    for (size_t n = 0; n < header; ++n) {
      EXPECT_EQ(decodeLink(d, f, n, static_cast<uint32_t>(f.size()), link, &r), DecodeError::kTruncatedLinkHeader);
    }
    // Whole captured header, but a wire length shorter than it: the record lies, and is counted.
    EXPECT_EQ(decodeLink(d, f, header, static_cast<uint32_t>(header) - 1, link, &r),
              DecodeError::kCaplenExceedsWireLen);
    EXPECT_EQ(d.stats().errors[static_cast<int>(DecodeError::kTruncatedLinkHeader)], header);
  }
  Decoder d;
  PacketRecord r;
  std::vector<uint8_t> raw = asHostCapture(tcp.bytes, LinkType::kRawIp);
  raw[0] = 0x55;  // version 5
  EXPECT_EQ(decodeLink(d, raw, raw.size(), static_cast<uint32_t>(raw.size()), LinkType::kRawIp, &r),
            DecodeError::kUnknownIpVersion);
  EXPECT_EQ(decodeLink(d, raw, 0, 0, LinkType::kRawIp, &r), DecodeError::kTruncatedIpv4);
  EXPECT_EQ(decodeLink(d, raw, raw.size(), static_cast<uint32_t>(raw.size()), LinkType::kUnsupported, &r),
            DecodeError::kUnsupportedLinkType);
  EXPECT_STREQ(decodeErrorName(DecodeError::kUnsupportedLinkType), "unsupported_link_type");
  // An address family that is not IP is measured as a non-IP frame, not an error.
  const std::vector<uint8_t> other = asHostCapture(tcp.bytes, LinkType::kNull, 7);
  EXPECT_EQ(decodeLink(d, other, other.size(), static_cast<uint32_t>(other.size()), LinkType::kNull, &r),
            DecodeError::kNone);
  EXPECT_EQ(r.key.family, 0);
  EXPECT_EQ(d.stats().non_ip, 1u);
}

// The duplicate key as docs/analyze.md defines it, the slow, obvious way: each field's bytes one at a time, zero past
// the captured length, each field's word plus its number times its multiplier, summed and mixed.
std::optional<uint64_t> referenceDuplicateKey(std::span<const uint8_t> d, uint16_t type) {
  static constexpr uint64_t kMul[] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                                      0xD6E8FEB86659FD93ull, 0xA0761D6478BD642Full, 0xE7037ED1A0B428DBull,
                                      0x8EBC6AF09C88C6E3ull, 0x589965CC75374CC3ull, 0x1D8E4E27C47D124Full,
                                      0xFF51AFD7ED558CCDull, 0xC4CEB9FE1A85EC53ull, 0x94D049BB133111EBull};
  auto word = [&](size_t from, size_t len) {
    uint64_t w = 0;
    for (size_t i = 0; i < len; ++i) {
      if (from + i < d.size()) w |= uint64_t{d[from + i]} << (8 * i);
    }
    return w;
  };
  std::vector<uint64_t> words;
  size_t l4 = 0;
  uint8_t proto = 0;
  if (type == 0x0800) {
    if (d.size() < 20 || d[0] >> 4 != 4) return std::nullopt;
    words = {word(0, 1), word(2, 6), word(9, 1), word(12, 8)};
    const bool later_fragment = (d[6] & 0x1F) != 0 || d[7] != 0;
    proto = later_fragment ? 0 : d[9];
    l4 = std::max<size_t>(20, (d[0] & 0x0Fu) * 4u);
  } else if (type == 0x86DD) {
    if (d.size() < 40 || d[0] >> 4 != 6) return std::nullopt;
    // The flow label's 20 bits, the payload length and the next header: byte 1's low half, bytes 2-6.
    words = {(word(1, 1) & 0x0F) << 8 | word(2, 5) << 16, word(8, 8), word(16, 8), word(24, 8), word(32, 8)};
    proto = d[6];
    l4 = 40;
  } else {
    return std::nullopt;
  }
  size_t payload = l4;
  if (proto == 6) {
    words.push_back(word(l4, 8));
    words.push_back(word(l4 + 8, 8));
    payload = l4 + 4 * (l4 + 12 < d.size() ? d[l4 + 12] >> 4 : 5);
  } else if (proto == 17) {
    words.push_back(word(l4, 6));
    payload = l4 + 8;
  }
  words.push_back(word(payload, 8));
  words.push_back(word(payload + 8, 8));
  uint64_t h = 0;
  for (size_t i = 0; i < words.size(); ++i) h += (words[i] + i + 1) * kMul[i];
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 29);
}

// Calls visit(file name, the frame's number in its file, its pcap header, its bytes) for every frame of every
// committed trace under data/ (all Ethernet), until a test fails; returns how many files it read.
template <typename Visit>
size_t forEachCommittedFrame(Visit visit) {
  const std::filesystem::path data = std::filesystem::path(BURSTSCOPE_SOURCE_ROOT) / "data";
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(data)) {
    if (entry.path().extension() != ".pcap") continue;
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* p = pcap_open_offline(entry.path().c_str(), err);
    EXPECT_NE(p, nullptr) << err;
    if (p == nullptr) break;
    EXPECT_EQ(pcap_datalink(p), DLT_EN10MB) << entry.path();
    ++files;
    size_t in_file = 0;
    pcap_pkthdr* h;
    const u_char* bytes;
    while (!::testing::Test::HasFailure() && pcap_next_ex(p, &h, &bytes) == 1) {
      visit(entry.path().filename().string(), in_file++, *h, bytes);
    }
    pcap_close(p);
    if (::testing::Test::HasFailure()) break;
  }
  return files;
}

// Checks duplicateKeyFromIp against the reference on `ip` cut at every length up to `max_cut` (and whole), each from
// a heap buffer of exactly that many bytes (AddressSanitizer catches a read past it). Returns the checks made.
size_t expectKeysAtEveryCut(const std::vector<uint8_t>& ip, uint16_t type, size_t max_cut, const std::string& what) {
  size_t checks = 0;
  for (size_t n = 0; n <= ip.size(); n = n < max_cut ? n + 1 : std::max(n + 1, ip.size())) {
    std::unique_ptr<uint8_t[]> copy(new uint8_t[n == 0 ? 1 : n]);
    std::copy(ip.begin(), ip.begin() + static_cast<ptrdiff_t>(n), copy.get());
    uint64_t key = 0;
    const bool ok = duplicateKeyFromIp({copy.get(), n}, type, &key);
    const std::optional<uint64_t> want = referenceDuplicateKey({copy.get(), n}, type);
    EXPECT_EQ(ok, want.has_value()) << what << " cut at " << n;
    if (ok && want) {
      EXPECT_EQ(key, *want) << what << " cut at " << n;
    }
    ++checks;
    if (::testing::Test::HasFailure()) break;
  }
  return checks;
}

// Every IP frame of the committed traces (TCP data and ACKs, RoCEv2's UDP, IPv6, ERSPAN's GRE) keyed as the
// reference keys it: whole, and the first frames of each file cut at every length the key reads; then TCP and UDP
// packets with a sample of IP header lengths, fragment fields and (TCP) data offsets, sensible or not. The decoder keys
// the usual frames (IPv4 TCP and UDP, whole headers, payload captured for 16 bytes or not at all) another way than the
// rest: both must agree with this.
TEST(DuplicateKeyTest, EqualsTheDefinitionOnEveryCommittedFrameAndEveryCut) {
  size_t frames = 0, fast_shaped = 0, checks = 0;
  std::vector<std::vector<uint8_t>> tcp4, udp4;  // a few IPv4 TCP and UDP packets to mutate below
  size_t ip_in_file = 0;  // the file's IP frames so far: the first hundred are cut at every length
  const size_t files =
      forEachCommittedFrame([&](const std::string& file, size_t in_file, const pcap_pkthdr& h, const u_char* bytes) {
        if (in_file == 0) ip_in_file = 0;
        if (h.caplen < 14) return;
        const uint16_t type = static_cast<uint16_t>(bytes[12] << 8 | bytes[13]);
        if (type != 0x0800 && type != 0x86DD) return;
        const std::vector<uint8_t> ip(bytes + 14, bytes + h.caplen);
        ++frames;
        if (type == 0x0800 && ip.size() >= 20 && (ip[9] == 6 || ip[9] == 17)) ++fast_shaped;
        checks +=
            expectKeysAtEveryCut(ip, type, ip_in_file++ < 100 ? 160 : 0, file + " frame " + std::to_string(in_file));
        if (type == 0x0800 && ip.size() >= 40 && ip[9] == 6 && tcp4.size() < 40) tcp4.push_back(ip);
        if (type == 0x0800 && ip.size() >= 40 && ip[9] == 17 && udp4.size() < 10) udp4.push_back(ip);
      });
  if (::testing::Test::HasFailure()) return;
  ASSERT_GE(files, 10u) << "the committed traces under data/";
  ASSERT_GT(fast_shaped, frames / 2) << "most frames must take the decoder's straight-line way";
  ASSERT_EQ(tcp4.size(), 40u);
  ASSERT_EQ(udp4.size(), 10u) << "RoCEv2's UDP frames under data/roce";
  // Every IP header length (0-4 are taken as 20), the fragment fields (none, don't fragment, a first fragment, later
  // fragments: no transport header in those) and, for TCP, data offsets sensible or not; the bytes past the frame's
  // end filled in, so that every cut up to 160 has something to read.
  const std::vector<std::pair<const char*, const std::vector<std::vector<uint8_t>>*>> kinds = {{"tcp", &tcp4},
                                                                                               {"udp", &udp4}};
  for (const auto& [kind, frames_of_kind] : kinds) {
    const bool tcp = frames_of_kind == &tcp4;
    for (size_t i = 0; i < frames_of_kind->size(); ++i) {
      for (uint8_t ihl : {0, 4, 5, 6, 15}) {
        for (uint16_t frag : {0x0000, 0x4000, 0x2000, 0x0001, 0x1FFF}) {
          for (int doff : tcp ? std::vector<int>{0, 1, 4, 5, 8, 15} : std::vector<int>{-1}) {
            std::vector<uint8_t> ip = (*frames_of_kind)[i];
            ip.resize(std::max<size_t>(ip.size(), 160), 0xA5);
            ip[0] = static_cast<uint8_t>(0x40 | ihl);
            ip[6] = static_cast<uint8_t>(frag >> 8);
            ip[7] = static_cast<uint8_t>(frag);
            const size_t l4 = std::max<size_t>(20, size_t{ihl} * 4);
            if (doff >= 0) ip[l4 + 12] = static_cast<uint8_t>(doff << 4 | (ip[l4 + 12] & 0x0F));
            checks += expectKeysAtEveryCut(ip, 0x0800, 160,
                                           std::string(kind) + " frame " + std::to_string(i) + " ihl " +
                                               std::to_string(ihl) + " fragment field " + std::to_string(frag) +
                                               " data offset " + std::to_string(doff));
            if (::testing::Test::HasFailure()) return;
          }
        }
      }
    }
  }
  EXPECT_GT(checks, 100'000u);
}

// The usual frames (Ethernet, at most one 802.1Q tag, IPv4 unfragmented, TCP or UDP with RoCEv2, whole and consistent
// headers) are decoded a straight way, everything else the general way: both must give every frame the same record,
// the same return and the same counts. Every Ethernet frame of the committed traces, whole and (the first hundred of
// each file) cut at every length up to 160; then IPv4 TCP frames with a sample of header lengths, fragment fields,
// data offsets, total lengths, a tag, two tags and a capture longer than the wire, and RoCEv2 frames the same way,
// also to other UDP ports (VXLAN's among them) and with every BTH opcode; each under decoder settings that change what
// the usual way writes (local networks in both families and of every kind of length, a mirror's own tag, no duplicate
// keys, RoCEv2 on VXLAN's port).
struct UsualWayCheck {
  std::vector<DecoderConfig> configs;
  std::vector<Decoder> usual, general, probe;
  size_t frames = 0, taken = 0, compared = 0;

  UsualWayCheck() {
    auto nets = [](std::initializer_list<const char*> texts) {
      std::vector<IpPrefix> out;
      for (const char* t : texts) {
        IpPrefix p;
        EXPECT_TRUE(parsePrefix(t, &p)) << t;
        out.push_back(p);
      }
      return out;
    };
    configs.emplace_back();
    configs.emplace_back().local_nets = nets({"fd00::/8", "10.77.0.1/32", "192.168.0.0/17"});
    configs.emplace_back().local_nets = nets({"10.0.0.0/8"});
    configs.emplace_back().local_nets = nets({"172.16.0.0/12", "0.0.0.0/0"});
    configs.emplace_back().mirror_vlan_tags = 1;
    configs.emplace_back().duplicate_keys = false;
    configs.emplace_back().roce_port = 4789;  // RoCEv2 where VXLAN would be: RoCEv2 is read first
    for (const DecoderConfig& c : configs) {
      usual.emplace_back(c);
      general.emplace_back(c);
      general.back().setUsualWay(false);
      probe.emplace_back(c);
    }
  }

  // Decodes the first `n` bytes of `f` (a heap buffer of exactly n bytes, for AddressSanitizer) every way.
  void check(const std::vector<uint8_t>& f, size_t n, uint32_t wire_len, const std::string& what) {
    std::unique_ptr<uint8_t[]> copy(new uint8_t[n == 0 ? 1 : n]);
    std::copy(f.begin(), f.begin() + static_cast<ptrdiff_t>(n), copy.get());
    const std::span<const uint8_t> bytes{copy.get(), n};
    ++frames;
    for (size_t i = 0; i < configs.size(); ++i) {
      // Records that start out different, so that a field either way leaves unwritten shows.
      PacketRecord a, b, p;
      std::memset(static_cast<void*>(&a), 0x5A, sizeof(a));
      std::memset(static_cast<void*>(&b), 0xA5, sizeof(b));
      std::memset(static_cast<void*>(&p), 0x3C, sizeof(p));
      a.ts_ns = b.ts_ns = p.ts_ns = 0;
      const DecodeError ea = usual[i].decode(bytes, wire_len, &a);
      const DecodeError eb = general[i].decode(bytes, wire_len, &b);
      if (probe[i].decodeUsual(bytes, wire_len, &p)) {
        // decode() looks first, and must look on at every usual frame; what it took is the general way's record.
        EXPECT_TRUE(probe[i].mayBeUsual(bytes)) << what << " setting " << i;
        EXPECT_EQ(std::memcmp(&p, &b, sizeof(p)), 0) << what << " setting " << i << " (decodeUsual alone)";
        if (i == 0) ++taken;
      }
      ++compared;
      EXPECT_EQ(ea, eb) << what << " setting " << i;
      EXPECT_EQ(std::memcmp(&a, &b, sizeof(a)), 0)
          << what << " setting " << i << ": " << flowToString(a.key) << " / " << flowToString(b.key);
      const DecodeStats& sa = usual[i].stats();
      const DecodeStats& sb = general[i].stats();
      EXPECT_EQ(sa.errors, sb.errors) << what << " setting " << i;
      EXPECT_EQ(sa.non_ip, sb.non_ip) << what << " setting " << i;
      EXPECT_EQ(sa.encapsulated, sb.encapsulated) << what << " setting " << i;
      EXPECT_EQ(sa.mirror_seq_gaps, sb.mirror_seq_gaps) << what << " setting " << i;
      EXPECT_EQ(sa.mirror_seq_reorders, sb.mirror_seq_reorders) << what << " setting " << i;
      if (::testing::Test::HasFailure()) return;
    }
  }
};

void putBe16(std::vector<uint8_t>& f, size_t at, uint16_t v) {
  f[at] = static_cast<uint8_t>(v >> 8);
  f[at + 1] = static_cast<uint8_t>(v);
}

TEST(DecoderUsualWayTest, GivesEveryFrameTheGeneralWaysRecordAndCounts) {
  UsualWayCheck check;
  size_t whole = 0, whole_taken = 0;
  std::vector<std::vector<uint8_t>> tcp4, udp4;  // untagged IPv4 TCP and UDP (RoCEv2) frames to vary below
  const size_t files =
      forEachCommittedFrame([&](const std::string& file, size_t in_file, const pcap_pkthdr& h, const u_char* bytes) {
        const std::vector<uint8_t> f(bytes, bytes + h.caplen);
        const std::string what = file + " frame " + std::to_string(in_file);
        const size_t taken_before = check.taken;
        check.check(f, f.size(), h.len, what);
        ++whole;
        whole_taken += check.taken - taken_before;
        for (size_t n = 0; in_file < 100 && n < std::min<size_t>(f.size(), 160); ++n) {
          check.check(f, n, h.len, what + " cut at " + std::to_string(n));
        }
        if (f.size() >= 66 && f[12] == 0x08 && f[13] == 0x00 && f[23] == 6 && tcp4.size() < 40) tcp4.push_back(f);
        if (f.size() >= 66 && f[12] == 0x08 && f[13] == 0x00 && f[23] == 17 && f[14] == 0x45 && udp4.size() < 10) {
          udp4.push_back(f);
        }
      });
  if (::testing::Test::HasFailure()) return;
  ASSERT_GE(files, 10u) << "the committed traces under data/";
  ASSERT_GT(whole_taken, whole / 2) << "most committed frames are usual and must take the usual way";
  ASSERT_EQ(tcp4.size(), 40u);
  // Varied: IP header length, fragment field, TCP data offset, IP total length (as captured, below the header, to the
  // TCP header's end, past the wire), no tag, one tag, two, and a capture claiming more than the wire carried.
  for (size_t i = 0; i < tcp4.size(); ++i) {
    for (uint8_t ihl : {0, 4, 5, 6, 15}) {
      for (uint16_t frag : {0x0000, 0x4000, 0x2000, 0x0001, 0x1FFF}) {
        for (int doff : {0, 4, 5, 8, 15}) {
          for (int total : {-1, 19, 0, 40, 9000}) {  // -1: as it is; 0: the IP and TCP headers exactly
            for (int tags : {0, 1, 2}) {
              for (int wire_less : {0, 1}) {
                std::vector<uint8_t> f = tcp4[i];
                f.resize(std::max<size_t>(f.size(), 160), 0xA5);
                f[14] = static_cast<uint8_t>(0x40 | ihl);
                f[15] = static_cast<uint8_t>(i * 37);  // DSCP and ECN: every ECN codepoint among the frames
                putBe16(f, 20, frag);
                const size_t l4 = 14 + std::max<size_t>(20, size_t{ihl} * 4);
                f[l4 + 12] = static_cast<uint8_t>(doff << 4 | (f[l4 + 12] & 0x0F));
                if (total >= 0) putBe16(f, 16, static_cast<uint16_t>(total == 0 ? (l4 - 14) + doff * 4 : total));
                for (int t = 0; t < tags; ++t) {
                  const uint8_t tag[4] = {0x81, 0x00, static_cast<uint8_t>(0x20 + t), 0x07};
                  f.insert(f.begin() + 12, tag, tag + 4);
                }
                const auto wire = static_cast<uint32_t>(f.size() - static_cast<size_t>(wire_less) * 8);
                const std::string what = "tcp frame " + std::to_string(i) + " ihl " + std::to_string(ihl) +
                                         " fragment field " + std::to_string(frag) + " data offset " +
                                         std::to_string(doff) + " total " + std::to_string(total) + " tags " +
                                         std::to_string(tags) + " wire less " + std::to_string(wire_less);
                check.check(f, f.size(), wire, what);
                check.check(f, 70, wire, what + " cut at 70");
                if (::testing::Test::HasFailure()) return;
              }
            }
          }
        }
      }
    }
  }
  ASSERT_EQ(udp4.size(), 10u) << "RoCEv2's frames under data/roce";
  // RoCEv2 frames: the same IP variations, to RoCEv2's port, VXLAN's and another, with and without the tag.
  for (size_t i = 0; i < udp4.size(); ++i) {
    for (uint8_t ihl : {0, 4, 5, 6, 15}) {
      for (uint16_t frag : {0x0000, 0x4000, 0x2000, 0x0001}) {
        for (int total : {-1, 19, 0, 9000}) {  // 0: to the UDP header's end
          for (uint16_t port : {4791, 4789, 53}) {
            for (int tags : {0, 1}) {
              std::vector<uint8_t> f = udp4[i];
              f.resize(std::max<size_t>(f.size(), 160), 0xA5);
              f[14] = static_cast<uint8_t>(0x40 | ihl);
              f[15] = static_cast<uint8_t>(i * 37);
              putBe16(f, 20, frag);
              const size_t l4 = 14 + std::max<size_t>(20, size_t{ihl} * 4);
              if (ihl != 5) {  // the UDP header and BTH moved behind the options (from the padded copy: no read past)
                const std::vector<uint8_t> moved(f.begin() + 34, f.begin() + 34 + 60);
                std::copy(moved.begin(), moved.end(), f.begin() + static_cast<ptrdiff_t>(l4));
              }
              putBe16(f, l4 + 2, port);
              f[l4 + 6] = static_cast<uint8_t>(i * 13 + 1);  // a checksum (RoCEv2's are 0), which the key leaves out
              if (total >= 0) putBe16(f, 16, static_cast<uint16_t>(total == 0 ? (l4 - 14) + 8 : total));
              for (int t = 0; t < tags; ++t) {
                const uint8_t tag[4] = {0x81, 0x00, 0x20, 0x07};
                f.insert(f.begin() + 12, tag, tag + 4);
              }
              const std::string what = "udp frame " + std::to_string(i) + " ihl " + std::to_string(ihl) +
                                       " fragment field " + std::to_string(frag) + " total " + std::to_string(total) +
                                       " port " + std::to_string(port) + " tags " + std::to_string(tags);
              const auto wire = static_cast<uint32_t>(f.size());
              check.check(f, f.size(), wire, what);
              check.check(f, 70, wire, what + " cut at 70");
              check.check(f, f.size(), wire - 8, what + " wire less");
              if (::testing::Test::HasFailure()) return;
            }
          }
        }
      }
    }
  }
  // Every BTH opcode, with a sane and a wrong transport header version and pad count, each cut where the extension
  // headers end or do not.
  for (size_t i = 0; i < 2; ++i) {
    for (int opcode = 0; opcode < 256; ++opcode) {
      for (uint8_t flags : {0x00, 0x30, 0x01}) {
        std::vector<uint8_t> f = udp4[i];
        f.resize(std::max<size_t>(f.size(), 160), 0xA5);
        f[42] = static_cast<uint8_t>(opcode);  // BTH after 14 + 20 + 8 bytes
        f[43] = flags;
        const std::string what =
            "roce frame " + std::to_string(i) + " opcode " + std::to_string(opcode) + " flags " + std::to_string(flags);
        check.check(f, f.size(), static_cast<uint32_t>(f.size()), what);
        for (size_t cut : {42, 54, 58, 62, 66, 70, 74, 78, 82, 90, 98}) {
          check.check(f, cut, static_cast<uint32_t>(f.size()), what + " cut at " + std::to_string(cut));
        }
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  EXPECT_GT(check.taken, check.frames / 8) << "the varied frames include usual ones";
  EXPECT_GT(check.compared, 1'000'000u);
}

TEST(DecoderTest, LinkTypesFromPcapNumbers) {
  EXPECT_EQ(linkTypeFromPcap(1), LinkType::kEthernet);
  EXPECT_EQ(linkTypeFromPcap(113), LinkType::kLinuxSll);
  EXPECT_EQ(linkTypeFromPcap(276), LinkType::kLinuxSll2);
  EXPECT_EQ(linkTypeFromPcap(101), LinkType::kRawIp);
  EXPECT_EQ(linkTypeFromPcap(12), LinkType::kRawIp);
  EXPECT_EQ(linkTypeFromPcap(0), LinkType::kNull);
  EXPECT_EQ(linkTypeFromPcap(105), LinkType::kUnsupported);  // 802.11
}

// Writing gives back what reading understands: every supported link type round-trips, the unsupported has none.
TEST(DecoderTest, LinkTypesToPcapNumbersRoundTrip) {
  for (LinkType t : {LinkType::kEthernet, LinkType::kLinuxSll, LinkType::kLinuxSll2, LinkType::kRawIp, LinkType::kIpv4,
                     LinkType::kIpv6, LinkType::kNull, LinkType::kLoop}) {
    ASSERT_TRUE(linkTypeToPcap(t).has_value()) << linkTypeName(t);
    EXPECT_EQ(linkTypeFromPcap(*linkTypeToPcap(t)), t) << linkTypeName(t);
  }
  EXPECT_FALSE(linkTypeToPcap(LinkType::kUnsupported).has_value());
}

}  // namespace
}  // namespace burstscope
