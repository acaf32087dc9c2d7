// The compact per-packet record that crosses from capture to the window engine, and the flow identity
// it carries. Everything after the decoder sees only these types, never raw frames.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace burstscope {

// Direction of a frame at the mirrored switch port: kIngress is into the switch from the monitored hosts,
// kEgress is out of the switch toward them. It comes from the ERSPAN type III "D" bit when the
// mirror says so, else from the configured local networks (a frame from a local address is kIngress, to one
// kEgress); otherwise it is kUnknown.
enum class Direction : uint8_t { kUnknown = 0, kIngress = 1, kEgress = 2 };
inline constexpr int kDirectionCount = 3;
const char* directionName(Direction d);

// What a flow key holds. A RoCEv2 queue pair is keyed by (source IP, destination IP, destination QP): the UDP
// source port is per-QP entropy, so the 5-tuple would split or merge queue pairs at random (docs/evidence.md).
enum class FlowKind : uint8_t { kFiveTuple = 0, kRoceQp = 1 };

// An IP 5-tuple. IPv4 addresses occupy the first 4 bytes of `src`/`dst`; `family` is 0 for non-IP frames
// (then only the port stream counts them), 4 or 6. Ports are 0 when the frame carries none (non-TCP/UDP,
// non-first fragments, truncated L4).
struct FlowKey {
  std::array<uint8_t, 16> src{};
  std::array<uint8_t, 16> dst{};
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint8_t proto = 0;
  uint8_t family = 0;
  uint8_t kind = 0;      // FlowKind: how the key was formed (a RoCEv2 queue pair is not a 5-tuple)
  uint8_t reserved = 0;  // keeps the struct free of padding, so byte-wise hashing and equality agree

  // A RoCEv2 flow's destination queue pair (24 bits), kept in the port fields.
  uint32_t qp() const { return uint32_t{src_port} << 16 | dst_port; }

  // Word-wise: the defaulted comparison calls memcmp per array, which dominated the flow-table lookup. Each word
  // is loaded from the key itself (copies into arrays on the stack made the loads wait on the copies' stores).
  bool operator==(const FlowKey& o) const {
    return ((word(0) ^ o.word(0)) | (word(1) ^ o.word(1)) | (word(2) ^ o.word(2)) | (word(3) ^ o.word(3)) |
            (word(4) ^ o.word(4))) == 0;
  }
  // A cheap index for a direct-mapped cache of recent keys (`bits` of them): the words multiplied side by side, not
  // one after the other. Unseeded and weak: never the hash of a table that traffic can fill.
  size_t recentSlot(int bits) const {
    const uint64_t h = (word(0) * 0x9E3779B97F4A7C15ull) ^ (word(1) * 0xC2B2AE3D27D4EB4Full) ^
                       (word(2) * 0x165667B19E3779F9ull) ^ (word(3) * 0xD6E8FEB86659FD93ull) ^
                       (word(4) * 0xFF51AFD7ED558CCDull);
    return static_cast<size_t>((h ^ (h >> 29)) >> (64 - bits));
  }
  // The key's i-th 64-bit word (0 to 4).
  uint64_t word(int i) const {
    uint64_t w;
    std::memcpy(&w, reinterpret_cast<const unsigned char*>(this) + 8 * i, sizeof(w));
    return w;
  }

  // The key whose five words are `w` (the inverse of word()).
  static FlowKey fromWords(const uint64_t (&w)[5]) {
    FlowKey k;
    std::memcpy(static_cast<void*>(&k), w, sizeof(k));
    return k;
  }

  // The directed host pair (addresses only) of this flow: the addresses' words and the family byte of the fifth
  // (little-endian). Made of whole words: a key built field by field (16-byte addresses, a 1-byte family) is read
  // back by the hash and the comparison as 8-byte words, and a load that spans several smaller stores waits for
  // them to retire instead of taking their bytes forwarded.
  FlowKey pairKey() const {
    constexpr uint64_t kFamily = uint64_t{0xFF} << (8 * (offsetof(FlowKey, family) - 32));
    return fromWords({word(0), word(1), word(2), word(3), word(4) & kFamily});
  }

  template <typename H>
  friend H AbslHashValue(H h, const FlowKey& k) {
    return H::combine_contiguous(std::move(h), reinterpret_cast<const unsigned char*>(&k), sizeof(k));
  }
};
static_assert(sizeof(FlowKey) == 40, "FlowKey must have no padding");
static_assert(std::endian::native == std::endian::little, "FlowKey's word-wise operations read little-endian words");

std::string addressToString(const FlowKey& k, bool source);
std::string flowToString(const FlowKey& k);  // "10.0.0.1:4000 > 10.0.0.2:5000 tcp", "... qp 0x0000c1 rocev2"
const char* flowKindName(const FlowKey& k);  // "tcp", "udp", "sctp", "rocev2", "other": stable (JSON)
std::string pairToString(const FlowKey& k);  // "10.0.0.1 > 10.0.0.2"

// Flags on a record.
enum RecordFlags : uint8_t {
  kRecordDecodeError = 1 << 0,   // decoding stopped early; the record holds what decoded
  kRecordEncapsulated = 1 << 1,  // measured frame was the inner frame of a mirror encapsulation
  kRecordFragment = 1 << 2,      // an IP fragment (ports only in the first one)
  // Not a packet: a capture queue's watermark. No later record on that queue is older than ts_ns, so the
  // worker merging queues may move on while the queue is idle. Never counted as a frame.
  kRecordTick = 1 << 7,
};

// What the decoder read of a packet's transport, for the congestion evidence (docs/evidence.md).
enum class L4Kind : uint8_t { kNone = 0, kTcp = 1, kRoce = 2, kMacControl = 3 };
enum MacControlOp : uint8_t { kMacPause = 1, kMacPfc = 2 };
inline constexpr uint8_t kTcpFin = 0x01, kTcpSyn = 0x02, kTcpRst = 0x04, kTcpPsh = 0x08, kTcpAck = 0x10, kTcpEce = 0x40,
                         kTcpCwr = 0x80;

// One measured packet. `wire_len` is the measured frame's length on the wire in bytes (Ethernet header
// included, FCS excluded); for an encapsulated mirror frame that is the inner frame's length.
struct PacketRecord {
  int64_t ts_ns = 0;  // nanoseconds since the Unix epoch
  uint32_t wire_len = 0;
  Direction direction = Direction::kUnknown;
  uint8_t flags = 0;
  uint16_t vlan = 0;  // innermost VLAN id of the measured frame, 0 if untagged
  FlowKey key;
  // Transport facts (docs/evidence.md), zero when there are none:
  //   l4   L4Kind in bits 0-1, the IP ECN field in bits 2-3 (any IP packet);
  //   op   TCP: flags | RoCEv2: BTH opcode | MAC control: MacControlOp;
  //   len  TCP: payload bytes | RoCEv2: IB payload bytes | PAUSE: quanta;
  //   seq  TCP: sequence number | RoCEv2: PSN in bits 0-23, AETH syndrome in bits 24-31 | PFC: class-enable vector;
  //   ack  TCP: acknowledgement number (0 without the ACK flag).
  // A PFC frame's 8 quanta (native order) are in key.src, unused by a non-IP record (pfcQuanta()).
  uint8_t l4 = 0;
  uint8_t op = 0;
  uint16_t len = 0;
  uint32_t seq = 0;
  uint32_t ack = 0;
  // The low 32 bits of the frame's duplicate key (decode.h duplicateKeyFromIp, the key of analyze's
  // --dedup-window), never 0; 0 when the frame has none (not IP) or the decoder was not asked for it. The mirror
  // self-checks look for the same key twice within a short horizon (docs/mirror.md).
  uint32_t dup_key = 0;

  L4Kind l4Kind() const { return static_cast<L4Kind>(l4 & 3); }
  uint8_t ecn() const { return (l4 >> 2) & 3; }
  uint32_t psn() const { return seq & 0xFFFFFF; }
  uint8_t syndrome() const { return static_cast<uint8_t>(seq >> 24); }
  uint16_t pfcQuanta(int priority) const {
    uint16_t q;
    std::memcpy(&q, key.src.data() + 2 * priority, 2);
    return q;
  }
};
// 72 bytes: TCP's sequence analysis needs both the sequence and the acknowledgement number of every segment
// (docs/evidence.md), which did not fit the 8 bytes a 64-byte record leaves after the flow key. A field added here
// must also be set by Decoder::decode (src/decode/decode.cc), which writes a live queue's records in place into
// ring slots that hold an earlier lap's record or nothing at all (ring.h), or into one scratch record that holds
// the frame before's (QueueProducer::add).
static_assert(sizeof(PacketRecord) == 72);

}  // namespace burstscope
