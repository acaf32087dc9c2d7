// Builds test frames byte by byte, recording where each header starts, so that tests can cut a frame at
// every header boundary.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace burstscope::testing {

class FrameBuilder {
 public:
  FrameBuilder& mark(std::string layer) {
    marks.push_back({std::move(layer), bytes.size()});
    return *this;
  }
  FrameBuilder& u8(uint8_t v) {
    bytes.push_back(v);
    return *this;
  }
  FrameBuilder& u16(uint16_t v) { return u8(static_cast<uint8_t>(v >> 8)).u8(static_cast<uint8_t>(v)); }
  FrameBuilder& u32(uint32_t v) { return u16(static_cast<uint16_t>(v >> 16)).u16(static_cast<uint16_t>(v)); }
  FrameBuilder& zeros(size_t n) {
    bytes.insert(bytes.end(), n, 0);
    return *this;
  }

  FrameBuilder& eth(uint16_t type) {
    mark("ethernet");
    for (int i = 0; i < 6; ++i) u8(0x02);
    for (int i = 0; i < 6; ++i) u8(0x04);
    return u16(type);
  }
  FrameBuilder& vlan(uint16_t vid, uint16_t type) {
    mark("vlan");
    return u16(vid).u16(type);
  }
  // IPv4 header; total length covers `payload` bytes after the header (IHL in 32-bit words).
  FrameBuilder& ipv4(uint32_t src, uint32_t dst, uint8_t proto, uint16_t payload, uint8_t ihl = 5, uint16_t frag = 0) {
    mark("ipv4");
    u8(static_cast<uint8_t>(0x40 | ihl)).u8(0).u16(static_cast<uint16_t>(ihl * 4 + payload));
    u16(1).u16(frag).u8(64).u8(proto).u16(0).u32(src).u32(dst);
    return zeros((ihl > 5 ? ihl - 5 : 0) * 4);
  }
  FrameBuilder& ipv6(uint8_t last_byte_src, uint8_t last_byte_dst, uint8_t next, uint16_t payload) {
    mark("ipv6");
    u32(0x60000000).u16(payload).u8(next).u8(64);
    u16(0xfd00).zeros(13).u8(last_byte_src);
    return u16(0xfd00).zeros(13).u8(last_byte_dst);
  }
  FrameBuilder& ports(uint16_t sport, uint16_t dport, uint16_t udp_len = 0) {
    mark("l4");
    u16(sport).u16(dport);
    return udp_len ? u16(udp_len).u16(0) : u32(0);
  }
  // A 20-byte TCP header (data offset 5).
  FrameBuilder& tcp(uint16_t sport, uint16_t dport, uint32_t seq = 0, uint32_t ack = 0, uint8_t flags = 0x10) {
    mark("l4");
    u16(sport).u16(dport).u32(seq).u32(ack);
    return u8(0x50).u8(flags).u16(65535).u32(0);
  }
  FrameBuilder& gre(uint16_t flags, uint16_t proto, uint32_t seq = 0) {
    mark("gre");
    u16(flags).u16(proto);
    if (flags & 0x8000) u32(0);       // checksum + reserved
    if (flags & 0x2000) u32(0xABCD);  // key
    if (flags & 0x1000) u32(seq);
    return *this;
  }
  FrameBuilder& erspan2(uint16_t session, uint8_t version = 1) {
    mark("erspan");
    return u32(uint32_t{version} << 28 | session).u32(0);
  }
  FrameBuilder& erspan3(uint16_t session, bool egress, bool subheader, uint8_t version = 2) {
    mark("erspan");
    u32(uint32_t{version} << 28 | session).u32(0x12345678).u16(0);
    u16(static_cast<uint16_t>((egress ? 0x0008 : 0) | (subheader ? 0x0001 : 0)));
    return subheader ? zeros(8) : *this;
  }
  FrameBuilder& vxlan(uint8_t flags = 0x08) {
    mark("vxlan");
    return u8(flags).zeros(3).u32(42 << 8);
  }
  FrameBuilder& payload(size_t n) { return zeros(n); }

  std::vector<uint8_t> bytes;
  std::vector<std::pair<std::string, size_t>> marks;  // layer name, offset where it starts
};

constexpr uint32_t ip4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return uint32_t{a} << 24 | uint32_t{b} << 16 | uint32_t{c} << 8 | d;
}

}  // namespace burstscope::testing
