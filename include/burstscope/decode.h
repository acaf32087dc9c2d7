// Mirror-port-aware frame decoder: Ethernet, VLAN stacks, IPv4/IPv6, TCP/UDP, and the mirror
// encapsulations (ERSPAN I/II/III, GRE transparent Ethernet bridging, VXLAN), which are taken off so that the
// inner frame is what gets measured. It never reads past the captured length; every frame yields a record,
// and a frame that does not decode completely is also counted under one reason.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "burstscope/packet.h"

namespace burstscope {

// Why a frame did not decode completely. The record still counts, at the deepest layer that decoded.
enum class DecodeError : uint8_t {
  kNone = 0,
  kTruncatedEthernet,
  kTruncatedVlan,
  kTooManyVlanTags,
  kTruncatedIpv4,
  kBadIpv4Version,
  kBadIpv4HeaderLength,     // IHL < 5, or total length shorter than the header
  kIpv4LengthExceedsFrame,  // total length runs past the frame's wire length
  kTruncatedIpv6,
  kBadIpv6Version,
  kIpv6LengthExceedsFrame,  // payload length runs past the frame's wire length
  kTruncatedIpv6ExtHeader,
  kIpv6ExtChainTooLong,
  kTruncatedL4,
  kTruncatedGre,
  kBadGreHeader,  // GRE version other than 0, or the routing bit set
  kUnknownGreProtocol,
  kTruncatedErspan,
  kBadErspanVersion,
  kTruncatedVxlan,
  kVxlanFlagsInvalid,  // the I flag (VNI valid) is clear
  kTooManyEncapsulations,
  kCaplenExceedsWireLen,    // capture said it holds more bytes than were on the wire
  kTruncatedLinkHeader,     // a host capture's link header (Linux cooked, BSD loopback) is cut off
  kUnknownIpVersion,        // a raw-IP frame whose version is neither 4 nor 6
  kUnsupportedLinkType,     // a pcapng interface of a link type burstscope does not measure
  kTruncatedTcpHeader,      // fewer than 20 bytes of TCP header captured (ports may still be known)
  kBadTcpHeaderLength,      // data offset below 5, or the header runs past the IP payload
  kTruncatedBth,            // RoCEv2 (UDP 4791) whose InfiniBand base transport header is cut off
  kBadBthVersion,           // BTH transport header version other than 0
  kTruncatedRoceExtension,  // the RETH, AETH, ImmDt or other extension header its opcode says follows is cut off
  kTruncatedMacControl,     // MAC control (EtherType 0x8808) PAUSE or PFC frame cut off
  kCount
};
inline constexpr int kDecodeErrorCount = static_cast<int>(DecodeError::kCount);
const char* decodeErrorName(DecodeError e);  // snake_case, stable: used as a metric label

// The link layer a frame begins with. A mirror port delivers Ethernet; host captures (`tcpdump -i any`,
// tunnels, loopback) begin with a cooked header, the IP header itself or a 4-byte address family.
enum class LinkType : uint8_t {
  kEthernet,
  kLinuxSll,   // Linux cooked v1 (LINKTYPE_LINUX_SLL 113): 16-byte header, protocol at 14
  kLinuxSll2,  // Linux cooked v2 (LINKTYPE_LINUX_SLL2 276): 20-byte header, protocol at 0
  kRawIp,      // LINKTYPE_RAW (101; DLT_RAW 12 or 14): IPv4 or IPv6, by the version nibble
  kIpv4,       // LINKTYPE_IPV4 (228)
  kIpv6,       // LINKTYPE_IPV6 (229)
  kNull,       // BSD loopback (LINKTYPE_NULL 0): 4-byte address family in the capturing host's byte order
  kLoop,       // OpenBSD loopback (LINKTYPE_LOOP 108): the same in network byte order
  kUnsupported,
};
const char* linkTypeName(LinkType t);  // "ethernet", "linux_sll", "linux_sll2", "raw_ip", ...: stable
// The link type of a LINKTYPE_ value (pcapng interfaces, classic pcap headers) or of libpcap's DLT_ value.
LinkType linkTypeFromPcap(uint32_t linktype);
// Its inverse, for writing captures (the flight recorder): the LINKTYPE_ value; none for kUnsupported.
std::optional<uint32_t> linkTypeToPcap(LinkType t);

// A frame's link header: its length and the protocol (an ethertype) it carries. For Ethernet the outer
// ethertype (VLAN tags may follow); for raw IP the version's ethertype. `error` says why it cannot be read.
struct LinkHeader {
  DecodeError error = DecodeError::kNone;
  uint16_t length = 0;
  uint16_t ethertype = 0;  // 0: not IP (an unknown BSD address family, say)
};
LinkHeader parseLinkHeader(std::span<const uint8_t> data, LinkType link);

struct DecodeStats {
  std::array<uint64_t, kDecodeErrorCount> errors{};  // errors[0] (kNone) counts frames decoded fully
  uint64_t non_ip = 0;                               // decoded completely, but not IPv4/IPv6 (ARP, LLDP, ...)
  uint64_t encapsulated = 0;                         // frames measured as the inner frame of a mirror encapsulation
  uint64_t mirror_seq_gaps = 0;                      // packets the mirror lost, from ERSPAN/GRE sequence numbers
  uint64_t mirror_seq_reorders = 0;                  // a sequence number at or below the last one seen for its session

  uint64_t errorTotal() const;
  void merge(const DecodeStats& o);
};

// An IPv4 or IPv6 prefix that holds monitored ("local") hosts, for the direction of a frame.
struct IpPrefix {
  uint8_t family = 4;
  std::array<uint8_t, 16> addr{};
  int length = 0;
  bool contains(uint8_t fam, const std::array<uint8_t, 16>& a) const;
};
// Parses "10.0.0.0/24" or "fd00::/64"; false on a malformed string.
bool parsePrefix(std::string_view text, IpPrefix* out);

// The key that makes two captures of one packet equal and two packets different (docs/analyze.md "Duplicate
// suppression"): read from the IP header on (`ip` starts at it; `ethertype` 0x0800 or 0x86DD). False when the
// frame is not IP or is cut off before its addresses. The one definition for analyze's --dedup-window and the
// mirror's duplicate check.
bool duplicateKeyFromIp(std::span<const uint8_t> ip, uint16_t ethertype, uint64_t* key);

struct DecoderConfig {
  std::vector<IpPrefix> local_nets;  // empty: direction only from ERSPAN III
  uint16_t vxlan_port = 4789;
  uint16_t roce_port = 4791;  // RoCEv2's UDP destination port (IANA)
  // Outermost VLAN tags that the mirror itself added (RSPAN VLAN, a QinQ service tag): their 4 bytes each
  // are not part of the measured frame. 0 measures the frame exactly as it arrived.
  int mirror_vlan_tags = 0;
  // Fill PacketRecord::dup_key (the mirror's duplicate check, docs/mirror.md): a hash of up to 96 header bytes,
  // ~9 ns a frame on the bundled trace; `run` turns it off with mirror.enabled: false.
  bool duplicate_keys = true;
};

// Stateful only for mirror sequence tracking (one entry per ERSPAN session, bounded).
class Decoder {
 public:
  static constexpr int kMaxVlanTags = 8;
  static constexpr int kMaxIpv6ExtHeaders = 8;
  static constexpr int kMaxEncapsulations = 3;
  static constexpr size_t kMaxTrackedSessions = 1024;

  explicit Decoder(DecoderConfig config = {});

  // Decodes one frame of `data` (the captured bytes) whose wire length was `wire_len`, into `out`
  // (ts_ns is left to the caller). Returns the reason decoding stopped early, or kNone; stats are updated.
  // A frame of a host capture (any `link` but Ethernet) is measured as the Ethernet frame it was on the wire:
  // its link header replaced by Ethernet's 14 bytes, and at least 60 bytes (Ethernet's minimum without FCS).
  DecodeError decode(std::span<const uint8_t> data, uint32_t wire_len, PacketRecord* out,
                     LinkType link = LinkType::kEthernet);

  const DecodeStats& stats() const { return stats_; }

  // Whether decode() may take the usual frame (Ethernet, at most one 802.1Q tag, IPv4 unfragmented, TCP or UDP with
  // RoCEv2 but not VXLAN, every header whole and consistent) the straight way (the default): the same record and
  // counts as the general way, which the tests compare it with on every committed frame and cut, and the benchmarks
  // with it (`decode_bench`).
  void setUsualWay(bool allowed) { usual_way_ = allowed; }
  // An Ethernet frame decoded the usual way into `out`, counted as decoded fully; false, with nothing that counts
  // written, for any frame that is not usual (decode() then takes it the general way, from the start). Public for the
  // tests, which make sure that the usual frames do come this way.
  bool decodeUsual(std::span<const uint8_t> data, uint32_t wire_len, PacketRecord* out);
  // decode()'s quick look before decodeUsual: false for a frame that cannot be usual; true for every one that is (the
  // tests hold it to that), and for some that are not.
  bool mayBeUsual(std::span<const uint8_t> data) const;

 private:
  struct Cursor;
  // decodeUsual's frame once its Ethernet header (and tag) is read: `off` is where the IPv4 header starts.
  struct UsualFrame {
    const uint8_t* data;
    size_t caplen;
    size_t off;
    uint32_t wire_len;
    uint32_t measured;  // the record's wire length (less a mirror's own tag)
    uint16_t vlan;
  };
  template <uint8_t kProto>
  [[gnu::always_inline]] bool decodeUsualIpv4(const UsualFrame& f, PacketRecord* out);  // TCP (6) or UDP (17)
  DecodeError decodeEthernet(Cursor& c, PacketRecord* out, int depth);
  DecodeError decodeEthertype(Cursor& c, uint16_t type, PacketRecord* out, int depth);  // VLAN tags, then IP
  DecodeError decodeHostLink(Cursor& c, LinkType link, PacketRecord* out);
  DecodeError decodeIpv4(Cursor& c, PacketRecord* out, int depth);
  DecodeError decodeIpv6(Cursor& c, PacketRecord* out, int depth);
  DecodeError decodeIpv6Chain(Cursor& c, uint8_t next, PacketRecord* out, int depth);  // extension headers, L4
  DecodeError decodeL4(Cursor& c, uint8_t proto, PacketRecord* out, int depth);
  DecodeError decodeTcp(Cursor& c, PacketRecord* out);
  DecodeError decodeRoce(Cursor& c, PacketRecord* out);
  DecodeError decodeMacControl(Cursor& c, PacketRecord* out);
  DecodeError decodeGre(Cursor& c, PacketRecord* out, int depth);
  DecodeError decodeInnerEthernet(Cursor& c, PacketRecord* out, int depth);
  void noteSequence(uint32_t session, uint32_t seq);
  void classifyDirection(PacketRecord* out) const;

  DecoderConfig config_;
  // The IPv4 prefixes of config_.local_nets in their order, as (network, mask) in host order; v4_nets_exact_ is
  // false when one of them is not a length IpPrefix::contains takes the same way (over 32), and the usual way then
  // leaves the direction to classifyDirection.
  struct V4Net {
    uint32_t net;
    uint32_t mask;
  };
  std::vector<V4Net> v4_nets_;
  bool v4_nets_exact_ = true;
  bool usual_way_ = true;
  DecodeStats stats_;
  absl::flat_hash_map<uint32_t, uint32_t> last_seq_;  // ERSPAN session (or GRE key) -> last sequence
};

}  // namespace burstscope
