// The congestion-evidence aggregator (docs/evidence.md). Per packet it does little: a few counters per
// direction, a look-up of the TCP connection or RoCEv2 queue pair (the last one is cached: a training burst is
// a train of one connection's segments), and the current base bin's six signal counts. Host pairs and flows
// are charged only for events, which are rare; microbursts are annotated once the bins after them are in.
#include "burstscope/evidence.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <deque>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "src/window/large_pages.h"

namespace burstscope {
namespace {

constexpr EvidenceCounts kZero{};
using Field = uint64_t EvidenceCounts::*;
constexpr Field kFields[] = {&EvidenceCounts::ip_packets,
                             &EvidenceCounts::ect,
                             &EvidenceCounts::ce,
                             &EvidenceCounts::tcp_ece,
                             &EvidenceCounts::tcp_cwr,
                             &EvidenceCounts::tcp_data_segments,
                             &EvidenceCounts::tcp_retransmissions,
                             &EvidenceCounts::tcp_out_of_order,
                             &EvidenceCounts::tcp_untracked_segments,
                             &EvidenceCounts::tcp_lost_segments,
                             &EvidenceCounts::tcp_ack_lost_segments,
                             &EvidenceCounts::tcp_holes_filled,
                             &EvidenceCounts::tcp_holes_acked_unseen,
                             &EvidenceCounts::tcp_bytes_acked_unseen,
                             &EvidenceCounts::tcp_holes_untracked,
                             &EvidenceCounts::roce_packets,
                             &EvidenceCounts::cnp,
                             &EvidenceCounts::nak_psn_sequence_error,
                             &EvidenceCounts::nak_rnr,
                             &EvidenceCounts::nak_other,
                             &EvidenceCounts::roce_resent,
                             &EvidenceCounts::roce_messages,
                             &EvidenceCounts::roce_message_bytes,
                             &EvidenceCounts::pause_frames};

EvidenceCounts minus(const EvidenceCounts& a, const EvidenceCounts& b) {
  EvidenceCounts d;
  for (Field f : kFields) d.*f = a.*f - b.*f;
  return d;
}

// A host pair's or flow's events: the fields of EvidenceCounts that charge() and tcpPacket() count per key, not all
// 24 (most are totals that no key has). Where connections churn, the per-key maps fill toward their bounds: a slot
// of 112 bytes instead of 232 halves their memory and the cache lines a look-up touches.
struct KeyEvents {
  uint64_t ce = 0;
  uint64_t tcp_ece = 0;
  uint64_t tcp_retransmissions = 0;
  uint64_t tcp_out_of_order = 0;
  uint64_t cnp = 0;
  uint64_t nak_psn_sequence_error = 0;
  uint64_t nak_rnr = 0;
  uint64_t nak_other = 0;
  uint64_t roce_resent = 0;
  uint64_t events() const { return counts().events(); }  // the report's figure, by definition
  EvidenceCounts counts() const {
    EvidenceCounts c;
    c.ce = ce;
    c.tcp_ece = tcp_ece;
    c.tcp_retransmissions = tcp_retransmissions;
    c.tcp_out_of_order = tcp_out_of_order;
    c.cnp = cnp;
    c.nak_psn_sequence_error = nak_psn_sequence_error;
    c.nak_rnr = nak_rnr;
    c.nak_other = nak_other;
    c.roce_resent = roce_resent;
    return c;
  }
};
using KeyField = uint64_t KeyEvents::*;

// TCP sequence arithmetic (RFC 1982 on 32 bits), as Wireshark's LT_SEQ and friends.
bool seqLt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
bool seqLe(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }
bool seqGt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) > 0; }

constexpr int64_t kOutOfOrderNs = 3'000'000;       // Wireshark's threshold when it has no handshake RTT
constexpr int64_t kFastRetransmitNs = 20'000'000;  // Wireshark: within 20 ms of the last duplicate ACK
constexpr int64_t kIdleForgetNs = 60'000'000'000;  // state of a connection or QP idle this long may go

// A sequence range [start, end) a direction skipped (a segment began beyond nextseq): the mirror's loss
// if the receiver acknowledges it unseen, the network's (or a reordering) if the sender sends into it.
struct TcpHole {
  uint32_t start = 0;
  uint32_t end = 0;
  bool filled = false;  // the sender sent into it already (counted once)
  bool acked = false;   // the receiver acknowledged part of it unseen already (counted once)
};
inline constexpr int kTcpHoles = 2;  // per direction: holes beyond these are counted as untracked

// One direction of a TCP connection: what Wireshark's tcp_analyze_seq_info keeps that we can.
struct TcpDir {
  uint32_t nextseq = 0;
  uint32_t lastack = 0;
  int64_t nextseq_ns = 0;
  int64_t lastack_ns = 0;
  uint32_t dupacks = 0;
  uint32_t maxseqtobeacked = 0;  // the end of the contiguous data seen (Wireshark's, for ACKed-unseen)
  bool has_nextseq = false;
  bool has_lastack = false;
  bool has_maxseqtobeacked = false;
  uint8_t holes = 0;
  std::array<TcpHole, kTcpHoles> hole{};
};
struct TcpConn {
  TcpDir dir[2];
  int64_t last_ns = 0;
  int64_t syn_ns = 0;        // the most recent SYN (without ACK)
  int64_t first_rtt_ns = 0;  // from it to the next segment with ACK and no SYN: the out-of-order threshold
};
static_assert(alignof(TcpConn) >= 2);  // a flow hint keeps the key's direction in the address's low bit
struct QpState {
  uint32_t highest = 0;
  int64_t last_ns = 0;
  bool has = false;
};

static_assert(std::endian::native == std::endian::little, "canonical compares byte-swapped little-endian words");

// A connection's key independent of direction, and which direction this packet goes.
FlowKey canonical(const FlowKey& k, int* d) {
  // The addresses compared as memcmp compares them (byte by byte: big-endian words), without the call; a
  // connection with many others beside it misses the recent-connection cache at most segments and comes here.
  const uint64_t s0 = __builtin_bswap64(k.word(0)), s1 = __builtin_bswap64(k.word(1));
  const uint64_t d0 = __builtin_bswap64(k.word(2)), d1 = __builtin_bswap64(k.word(3));
  int c = s0 != d0 ? (s0 < d0 ? -1 : 1) : s1 != d1 ? (s1 < d1 ? -1 : 1) : 0;
  if (c == 0) c = k.src_port < k.dst_port ? -1 : (k.src_port > k.dst_port ? 1 : 0);
  if (c <= 0) {
    *d = 0;
    return k;
  }
  *d = 1;
  // Swapped as whole words (as FlowKey::pairKey, for the same reason: the hash reads the key back as words).
  const uint64_t w4 = k.word(4);
  const uint64_t ports = w4 & 0xFFFFFFFFull;
  return FlowKey::fromWords(
      {k.word(2), k.word(3), k.word(0), k.word(1), (w4 & ~0xFFFFFFFFull) | (ports >> 16) | ((ports & 0xFFFF) << 16)});
}

enum class TcpVerdict { kNone, kRetransmission, kOutOfOrder };

// What one segment says about the mirror (docs/mirror.md).
struct TcpMirrorFacts {
  bool lost_segment = false;      // Wireshark's TCP_A_LOST_PACKET
  bool ack_lost_segment = false;  // Wireshark's TCP_A_ACK_LOST_PACKET
  uint32_t holes_filled = 0;
  uint32_t holes_acked_unseen = 0;
  uint64_t bytes_acked_unseen = 0;
  uint32_t holes_untracked = 0;
};

// The sender sent [seq, end): every hole it overlaps is filled there (the network lost or reordered it).
void fillHoles(TcpDir& dir, uint32_t seq, uint32_t end, TcpMirrorFacts* f) {
  for (int i = 0; i < dir.holes;) {
    TcpHole& h = dir.hole[i];
    if (seqLt(seq, h.end) && seqGt(end, h.start)) {
      if (!h.filled) ++f->holes_filled;
      h.filled = true;
      // Keep what is left of it: below the segment, else above it (a segment inside a hole leaves two
      // parts; the upper one is dropped, which can only under-count the mirror's loss).
      if (seqLt(h.start, seq)) {
        h.end = seq;
      } else if (seqLt(end, h.end)) {
        h.start = end;
      } else {
        dir.hole[i] = dir.hole[--dir.holes];
        continue;
      }
    }
    ++i;
  }
}

// The receiver acknowledged up to `ack`: what of the sender's holes lies below it was never shown by the mirror.
void ackHoles(TcpDir& dir, uint32_t ack, TcpMirrorFacts* f) {
  for (int i = 0; i < dir.holes;) {
    TcpHole& h = dir.hole[i];
    if (seqGt(ack, h.start)) {
      const uint32_t upto = seqLt(ack, h.end) ? ack : h.end;
      f->bytes_acked_unseen += upto - h.start;
      if (!h.acked) ++f->holes_acked_unseen;
      h.acked = true;
      if (upto == h.end) {
        dir.hole[i] = dir.hole[--dir.holes];
        continue;
      }
      h.start = upto;
    }
    ++i;
  }
}

// The last steps of every segment's analysis, once nextseq is moved: Wireshark's 'max seq to be acked' moves to
// nextseq when a segment starts exactly at it, and the segment's acknowledgement is the direction's last.
void afterSegment(TcpDir& fwd, uint32_t seq, uint32_t ack, int64_t t) {
  if (!fwd.has_maxseqtobeacked || seq == fwd.maxseqtobeacked) {
    fwd.maxseqtobeacked = fwd.nextseq;
    fwd.has_maxseqtobeacked = true;
  }
  fwd.lastack = ack;
  fwd.lastack_ns = t;
  fwd.has_lastack = true;
}

// Most segments of a training flow are common: with ACK, without SYN, FIN or RST, starting where the sequence
// space seen ends, no hole tracked either way, the first RTT taken (or no SYN seen). For them analyseTcp's steps
// reduce to commonSegment's (no lost segment, no keep-alive, never "not advanced": no fast retransmission or
// out-of-order, no hole to fill), in the same order. steadyAt: all but the flags.
bool steadyAt(const TcpConn& conn, const TcpDir& fwd, const TcpDir& rev, uint32_t seq) {
  return fwd.has_nextseq && seq == fwd.nextseq && (fwd.holes | rev.holes) == 0 &&
         (conn.syn_ns == 0 || conn.first_rtt_ns != 0);
}

// A common segment's steps; whether it is a (spurious) retransmission. *ack_lost: it acknowledges data the mirror
// did not show the other way.
inline bool commonSegment(TcpDir& fwd, TcpDir& rev, uint32_t seglen, uint32_t seq, uint32_t ack, int64_t t,
                          bool* ack_lost) {
  const bool same_ack = fwd.has_lastack && ack == fwd.lastack;
  fwd.dupacks = same_ack ? fwd.dupacks + (seglen == 0) : 0;  // a duplicate ACK has no data
  if (rev.has_maxseqtobeacked && seqGt(ack, rev.maxseqtobeacked)) {
    *ack_lost = true;
    rev.maxseqtobeacked = rev.nextseq;
  }
  // Spurious: the other side had acknowledged it already.
  const bool spurious = seglen > 0 && rev.has_lastack && rev.lastack != 0 && seqLe(seq + seglen, rev.lastack);
  if (seglen > 0) {  // the sequence space grows: seq + seglen is beyond nextseq (seglen < 2^16)
    fwd.nextseq = seq + seglen;
    fwd.nextseq_ns = t;
  }
  afterSegment(fwd, seq, ack, t);
  return spurious;
}

// Wireshark's tcp_analyze_sequence_number (4.0), the parts that decide retransmission and out-of-order, in
// its order (docs/evidence.md says what is left out), and the lost-segment checks (docs/mirror.md).
TcpVerdict analyseTcp(TcpConn& conn, int d, const PacketRecord& r, TcpMirrorFacts* mf) {
  TcpDir& fwd = conn.dir[d];
  TcpDir& rev = conn.dir[1 - d];
  const uint8_t flags = r.op;
  const uint32_t seglen = r.len;
  const uint32_t seq = r.seq;
  const uint32_t ack = r.ack;
  const int64_t t = r.ts_ns;
  if ((flags & (kTcpSyn | kTcpFin | kTcpRst | kTcpAck)) == kTcpAck && steadyAt(conn, fwd, rev, seq)) {
    return commonSegment(fwd, rev, seglen, seq, ack, t, &mf->ack_lost_segment) ? TcpVerdict::kRetransmission
                                                                               : TcpVerdict::kNone;
  }
  // The first RTT: from the most recent SYN to the next segment with ACK and without SYN.
  if ((flags & (kTcpSyn | kTcpAck)) == kTcpAck && conn.syn_ns != 0 && conn.first_rtt_ns == 0) {
    conn.first_rtt_ns = std::max<int64_t>(t - conn.syn_ns, 1);
  }
  if ((flags & (kTcpSyn | kTcpAck)) == kTcpSyn) conn.syn_ns = t;
  const bool plain = !(flags & (kTcpSyn | kTcpFin | kTcpRst));
  // LOST PACKET: the segment starts beyond the highest sequence seen (RST excepted): a hole before it.
  if (fwd.has_nextseq && seqGt(seq, fwd.nextseq) && !(flags & kTcpRst)) {
    mf->lost_segment = true;
    if (fwd.holes < kTcpHoles) {
      fwd.hole[fwd.holes++] = TcpHole{.start = fwd.nextseq, .end = seq, .filled = false, .acked = false};
    } else {
      ++mf->holes_untracked;
    }
  }
  const bool keepalive = fwd.has_nextseq && seglen <= 1 && plain && seq == fwd.nextseq - 1;
  // Duplicate ACK: no data, the same sequence and acknowledgement as before (Wireshark also asks for the
  // same window, which the record does not keep).
  if (seglen == 0 && plain && fwd.has_nextseq && seq == fwd.nextseq && fwd.has_lastack && ack == fwd.lastack) {
    ++fwd.dupacks;
  }
  if (!fwd.has_lastack || ack != fwd.lastack) fwd.dupacks = 0;
  // ACKED LOST PACKET: an acknowledgement beyond the end of the contiguous data seen the other way.
  // Wireshark's rule as its 4.0 sources state it (docs/mirror.md: tshark 4.0.17 flags fewer on some traces).
  if ((flags & kTcpAck) && rev.has_maxseqtobeacked && seqGt(ack, rev.maxseqtobeacked)) {
    mf->ack_lost_segment = true;
    rev.maxseqtobeacked = rev.nextseq;
  }
  if ((flags & kTcpAck) && rev.holes > 0) ackHoles(rev, ack, mf);

  TcpVerdict v = TcpVerdict::kNone;
  if ((seglen > 0 || (flags & (kTcpSyn | kTcpFin))) && !keepalive) {
    bool not_advanced = fwd.has_nextseq && seqLt(seq, fwd.nextseq);
    if (seglen > 1 && fwd.nextseq - 1 == seq) not_advanced = false;  // after a possible zero-window probe
    const int64_t ooo_threshold = conn.first_rtt_ns != 0 ? conn.first_rtt_ns : kOutOfOrderNs;
    const uint32_t end = seq + seglen + ((flags & (kTcpSyn | kTcpFin)) ? 1 : 0);
    // In Wireshark's order: spurious (the other side had acknowledged it), fast (after duplicate ACKs for
    // it), out of order (soon after the newest segment), else a plain retransmission.
    const bool spurious = seglen > 0 && rev.has_lastack && rev.lastack != 0 && seqLe(seq + seglen, rev.lastack);
    const bool fast = not_advanced && rev.dupacks >= 2 && rev.lastack == seq && t - rev.lastack_ns < kFastRetransmitNs;
    const bool out_of_order = not_advanced && t - fwd.nextseq_ns < ooo_threshold && fwd.nextseq != end;
    if (spurious || fast || (not_advanced && !out_of_order)) {
      v = TcpVerdict::kRetransmission;
    } else if (out_of_order) {
      v = TcpVerdict::kOutOfOrder;
    }
  }
  const uint32_t next = seq + seglen + ((flags & (kTcpSyn | kTcpFin)) ? 1 : 0);
  if (fwd.holes > 0 && next != seq) fillHoles(fwd, seq, next, mf);
  if (!fwd.has_nextseq || seqGt(next, fwd.nextseq)) {
    fwd.nextseq = next;
    fwd.nextseq_ns = t;
    fwd.has_nextseq = true;
  }
  afterSegment(fwd, seq, ack, t);
  return v;
}

// Packets that carry payload: SEND and RDMA WRITE (RC, UC) and RDMA READ responses (RC).
bool carriesData(uint8_t op) {
  if (op >= 0x40) return false;
  const uint8_t low = op & 0x1F;
  return low <= 0x0B || (op < 0x20 && low >= 0x0D && low <= 0x10);
}
bool startsMessage(uint8_t op) {
  if (op >= 0x40) return false;
  const uint8_t low = op & 0x1F;
  return low == 0x00 || low == 0x04 || low == 0x05 || low == 0x06 || low == 0x0A || low == 0x0B || (op == 0x0C);
}
bool carriesMessageData(uint8_t op) { return op < 0x40 && (op & 0x1F) <= 0x0B && (op & 0x1F) != 0x0C; }

// A multiply-mix of the key's five words: the packet path's tables are looked up per packet, and absl's
// generic byte hash of 40 bytes cost more than the rest of a packet's evidence.
struct KeyHash {
  size_t operator()(const FlowKey& k) const {
    uint64_t w[5];
    std::memcpy(w, &k, sizeof(w));
    uint64_t h = w[0] * 0x9E3779B97F4A7C15ull;
    h = (h ^ w[1]) * 0xC2B2AE3D27D4EB4Full;
    h = (h ^ w[2]) * 0x165667B19E3779F9ull;
    h = (h ^ w[3]) * 0x9E3779B97F4A7C15ull;
    h = (h ^ w[4]) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

static_assert(sizeof(FlowKey) == 40 && offsetof(FlowKey, src_port) == 32 && offsetof(FlowKey, dst_port) == 34);

// `b` is `a` seen from the other end: addresses and ports swapped, the rest equal.
bool isReverse(const FlowKey& a, const FlowKey& b) {
  const uint64_t a4 = a.word(4);
  const uint64_t ports = a4 & 0xFFFFFFFFull;
  const uint64_t swapped = (a4 & ~0xFFFFFFFFull) | (ports >> 16) | ((ports & 0xFFFF) << 16);
  return ((a.word(0) ^ b.word(2)) | (a.word(1) ^ b.word(3)) | (a.word(2) ^ b.word(0)) | (a.word(3) ^ b.word(1)) |
          (swapped ^ b.word(4))) == 0;
}

// The same slot for both directions of a connection.
size_t symmetricSlot(const FlowKey& k, size_t mask) {
  uint64_t s, d;
  std::memcpy(&s, k.src.data(), 8);
  std::memcpy(&d, k.dst.data(), 8);
  const uint64_t h = ((s ^ d) + (uint64_t{k.src_port} ^ k.dst_port)) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h >> 40) & mask;
}

// A host's bit in a 64-bit signature: a burst's hosts are the OR of its packets' source and destination bits,
// and evidence counts toward it when its packets' bits meet them (docs/evidence.md: exact up to collisions).
uint64_t hostBit(const std::array<uint8_t, 16>& a) {
  uint64_t w0, w1;
  std::memcpy(&w0, a.data(), 8);
  std::memcpy(&w1, a.data() + 8, 8);
  return uint64_t{1} << (((w0 ^ (w1 * 0xC2B2AE3D27D4EB4Full)) * 0x9E3779B97F4A7C15ull) >> 58);
}

// A table keyed by flow or host pair; those that can grow to megabytes (connections, evidence per key) on large
// pages where the kernel has them (src/window/large_pages.h).
template <typename V>
using KeyMap = internal::FlowMap<V, KeyHash>;

template <typename V>
V* boundedFind(KeyMap<V>& m, const FlowKey& k, size_t cap) {
  auto it = m.find(k);
  if (it != m.end()) return &it->second;
  if (m.size() >= cap) return nullptr;
  return &m[k];
}

}  // namespace

const char* signalName(int s) {
  static const char* const kNames[kSignalCount] = {"ce",          "cnp", "naks", "roce_resent", "tcp_retransmissions",
                                                   "pause_frames"};
  return s >= 0 && s < kSignalCount ? kNames[s] : "unknown";
}

void EvidenceCounts::merge(const EvidenceCounts& o) {
  for (Field f : kFields) this->*f += o.*f;
}

absl::Status validateEvidenceConfig(const EvidenceConfig& c, int64_t base_bin_ns) {
  if (c.after_ns < -1) return absl::InvalidArgumentError("evidence.after: must not be negative");
  if (c.retain_ns < base_bin_ns) {
    return absl::InvalidArgumentError(absl::StrCat("evidence.retain: at least one base bin (", base_bin_ns, " ns)"));
  }
  return absl::OkStatus();
}

struct EvidenceAggregator::Impl {
  Impl(const EvidenceConfig& c, const EngineConfig& e, bool iv)
      : cfg(c),
        after_ns(c.after_ns >= 0 ? c.after_ns : e.microburst_tau_ns),
        bin_ns(e.base_bin_ns),
        capacity_bps(e.link_capacity_bps),
        flow_cap(e.flow_table_capacity),
        pair_cap(e.pair_table_capacity),
        intervals(iv) {
    pause_from.fill(0);
    pause_until.fill(INT64_MIN);
  }

  EvidenceConfig cfg;
  int64_t after_ns;
  int64_t bin_ns;
  double capacity_bps;
  size_t flow_cap;
  size_t pair_cap;
  bool intervals;

  std::array<EvidenceCounts, kDirectionCount> dirs{};
  std::array<bool, kDirectionCount> dir_seen{};
  EvidenceCounts at_last_close;
  KeyMap<KeyEvents> pairs, flows;
  // Grows as connections come (reserving the capacity up front cost its memory at once: with huge pages all of
  // it); the slot cache below holds pointers into it and is cleared whenever it grows.
  KeyMap<TcpConn> tcp;
  KeyMap<QpState> qps;
  KeyMap<uint64_t> cnp_targets;
  // Recent connections, direct-mapped by a hash both directions share: a hit costs a key comparison.
  struct TcpSlot {
    FlowKey key;  // as direction 0 sees it
    TcpConn* conn = nullptr;
  };
  static constexpr size_t kTcpSlots = 256;
  std::array<TcpSlot, kTcpSlots> tcp_slots{};
  // The epoch of the connections' places, for the engine's flow hints (a connection's address and its key's
  // direction): it changes whenever entries of `tcp` may have moved or gone (the table grew, or idle ones were
  // forgotten).
  uint64_t conn_epoch = 1;
  FlowKey last_qp_key;
  QpState* last_qp = nullptr;

  std::array<PauseCounts, kPausePriorities> pause{};
  std::array<int64_t, kPausePriorities> pause_from{};   // paused time is accounted up to here
  std::array<int64_t, kPausePriorities> pause_until{};  // the priority is paused until here

  int64_t bin_start = INT64_MIN;
  int64_t bin_end = INT64_MIN;
  SignalCounts bin;
  uint64_t bin_hosts = 0;        // every packet's hosts in the current bin
  uint64_t bin_event_hosts = 0;  // the hosts of its evidence
  // The last kHostBins bins' host signatures, by bin number (touched in full at start: no resident-size creep).
  static constexpr size_t kHostBins = size_t{1} << 15;
  std::vector<std::pair<int64_t, uint64_t>> host_ring = std::vector<std::pair<int64_t, uint64_t>>(kHostBins, {-1, 0});
  std::deque<EvidenceBin> recent;  // bins with events, for annotating microbursts
  std::vector<EvidenceBin> listed;
  std::vector<std::pair<FlowKey, SignalCounts>> bin_pairs;  // offline: the current bin's events per host pair
  std::vector<PairBinEvidence> listed_pairs;                // offline: all; with intervals: this interval's
  std::deque<Microburst> pending;
  uint64_t microbursts = 0, congesting = 0;
  uint64_t microbursts_at_close = 0, congesting_at_close = 0;
  Histogram sizes{{1e3, 4e3, 16e3, 64e3, 256e3, 1e6, 4e6, 16e6, 64e6, 256e6}};  // as the microburst sizes
  std::vector<AnnotatedBurst> bursts;
  uint64_t listed_dropped = 0;
  int64_t first_ns = INT64_MIN, last_ns = 0;
  std::vector<uint32_t> run_starts;  // scratch for add() without the engine's runs
  uint64_t slot_misses = 0;          // connection look-ups that missed tcp_slots, so far
  uint64_t refused_by_hint = 0;      // runs whose connection's refusal (the table full) came from their flow's hint
  uint64_t misses_before = 0;        // slot_misses before the last batch
  size_t runs_before = 0;            // the last batch's runs
  uint64_t segments_by_run = 0;      // TCP segments that took tcpRun's common step, so far

  // What the packets of one run (findFlowRuns: one key) share, found at the first that needs it.
  struct Run {
    uint64_t hosts = 0;  // the key's host bits (IP)
    bool tcp_known = false;
    TcpConn* conn = nullptr;  // the TCP connection once known; nullptr: untracked (the table is full)
    int d = 0;                // which direction of it the key goes
    // The key's and its host pair's events, found at the run's first event (nullptr: not kept, the map is full).
    // Valid for the whole run: the only keys put into those maps during it are these two, and nothing is taken
    // out of them. A retransmission storm (every segment an event) looks each up once a run, not once a packet.
    std::optional<KeyEvents*> flow_events, pair_events;  // empty until the run's first event
    FlowHint* hint = nullptr;                            // the engine's flow table's, for the run's key (nullptr: none)
  };
  KeyEvents* flowEvents(const FlowKey& k, Run& run) {
    if (!run.flow_events) run.flow_events = boundedFind(flows, k, flow_cap);
    return *run.flow_events;
  }
  KeyEvents* pairEvents(const FlowKey& k, Run& run) {
    if (!run.pair_events) run.pair_events = boundedFind(pairs, k.pairKey(), pair_cap);
    return *run.pair_events;
  }

  void charge(const FlowKey& k, Run& run, KeyField f, SignalCounts& ev, int s) {
    ev.n[s]++;
    bin_event_hosts |= run.hosts;  // hostBit(k.src) | hostBit(k.dst)
    if (KeyEvents* p = pairEvents(k, run)) ++(p->*f);
    if (KeyEvents* p = flowEvents(k, run)) ++(p->*f);
    {  // each bin's events per host pair, for the training jobs' steps: a linear search of the bin's pairs (on the
       // replayed trace, every segment an event, a few pairs a bin, as fast as keeping a run's place: bench/README.md)
      const FlowKey pair = k.pairKey();
      auto it = std::find_if(bin_pairs.begin(), bin_pairs.end(), [&](const auto& x) { return x.first == pair; });
      if (it == bin_pairs.end()) it = bin_pairs.insert(it, {pair, SignalCounts{}});
      it->second.n[s]++;
    }
  }

  void accruePause(int p, int64_t t) {
    if (pause_until[p] > pause_from[p] && t > pause_from[p])
      pause[p].paused_ns += std::min(pause_until[p], t) - pause_from[p];
    pause_from[p] = std::max(pause_from[p], t);
  }
  void pauseFrame(int p, int64_t t, uint16_t quanta) {
    accruePause(p, t);
    ++pause[p].frames;
    pause[p].quanta += quanta;
    // One quantum is 512 bit times at the link's speed.
    pause_until[p] = t + static_cast<int64_t>(static_cast<double>(quanta) * 512e9 / capacity_bps);
    pause_from[p] = t;
  }

  void flushBin() {
    if (bin_start != INT64_MIN) {
      const int64_t n = bin_start / bin_ns;
      host_ring[static_cast<size_t>(n) & (kHostBins - 1)] = {n, bin_hosts};
    }
    bin_hosts = 0;
    if (bin.total() == 0) return;
    recent.push_back({bin_start, bin, bin_event_hosts});
    bin_event_hosts = 0;
    if (!intervals) {
      if (listed.size() < cfg.max_listed) {
        listed.push_back(recent.back());
      } else {
        ++listed_dropped;
      }
    }
    for (const auto& [pair, counts] : bin_pairs) {
      if (listed_pairs.size() < cfg.max_listed) {
        listed_pairs.push_back({bin_start, pair, counts});
      } else {
        ++listed_dropped;
      }
    }
    bin_pairs.clear();
    bin = SignalCounts{};
  }

  // Annotates every pending microburst whose bins are all complete: those that end (plus `after`) before
  // `complete_ns`.
  void annotate(int64_t complete_ns) {
    while (!pending.empty() && pending.front().end_ns + after_ns < complete_ns) {
      const Microburst m = pending.front();
      pending.pop_front();
      // The burst's hosts: every packet's in the bins it spans (the last kHostBins of them).
      uint64_t hosts = 0;
      const int64_t first = std::max(m.start_ns / bin_ns, m.end_ns / bin_ns - static_cast<int64_t>(kHostBins) + 1);
      for (int64_t n = first; n <= m.end_ns / bin_ns; ++n) {
        const auto& [bin_no, mask] = host_ring[static_cast<size_t>(n) & (kHostBins - 1)];
        if (bin_no == n) hosts |= mask;
      }
      SignalCounts ev;
      const int64_t lo = m.start_ns - bin_ns;  // bins starting after this overlap [start, ...]
      const int64_t hi = m.end_ns + after_ns;
      auto it = std::upper_bound(recent.begin(), recent.end(), lo,
                                 [](int64_t v, const EvidenceBin& b) { return v < b.start_ns; });
      for (; it != recent.end() && it->start_ns <= hi; ++it) {
        if (it->hosts & hosts) ev.add(it->evidence);  // evidence toward or from the burst's hosts
      }
      ++microbursts;
      if (ev.total() == 0) continue;
      ++congesting;
      sizes.observe(static_cast<double>(m.bytes));
      if (bursts.size() < cfg.max_listed) {
        bursts.push_back({m, ev});
      } else {
        ++listed_dropped;
      }
    }
    // Bins that no pending or future microburst can reach any more.
    const int64_t keep_from = pending.empty()
                                  ? complete_ns - cfg.retain_ns
                                  : std::min(pending.front().start_ns - bin_ns, complete_ns - cfg.retain_ns);
    while (!recent.empty() && recent.front().start_ns < keep_from) recent.pop_front();
  }

  void add(const PacketRecord& r, Run& run) {
    if (first_ns == INT64_MIN) first_ns = r.ts_ns;
    last_ns = r.ts_ns;
    if (r.ts_ns >= bin_end || r.ts_ns < bin_start) {
      const int64_t b = r.ts_ns - ((r.ts_ns % bin_ns) + bin_ns) % bin_ns;
      flushBin();
      bin_start = b;
      bin_end = b + bin_ns;
      if (!pending.empty()) annotate(b);
    }
    const int d = static_cast<int>(r.direction);
    EvidenceCounts& c = dirs[d];
    dir_seen[d] = true;
    if (r.key.family != 0) {
      bin_hosts |= run.hosts;
      ++c.ip_packets;
      const uint8_t ecn = r.ecn();
      if (ecn == 1 || ecn == 2) ++c.ect;
      if (ecn == 3) {
        ++c.ce;
        charge(r.key, run, &KeyEvents::ce, bin, kSignalCe);
      }
    }
    switch (r.l4Kind()) {
      case L4Kind::kNone:
        break;
      case L4Kind::kTcp:
        tcpPacket(r, c, run);
        break;
      case L4Kind::kRoce:
        rocePacket(r, c, run);
        break;
      case L4Kind::kMacControl:
        ++c.pause_frames;
        ++bin.n[kSignalPause];
        bin_event_hosts = ~uint64_t{0};  // a pause stops the link: every host on it
        if (r.op == kMacPause) {
          pauseFrame(8, r.ts_ns, r.len);
        } else {
          for (int p = 0; p < 8; ++p) {
            if (r.seq & (1u << p)) pauseFrame(p, r.ts_ns, r.pfcQuanta(p));
          }
        }
        break;
    }
  }

  // A run of TCP segments of one key (IP), more than one (a run of one gains nothing, and with many jobs
  // interleaved most runs are one packet): what add() does for each, with what the run's segments share found
  // once. The common segment of a training flow -- in the current bin, its run's direction, ECN not CE, with ACK
  // and without SYN, FIN, RST, ECE or CWR, starting where its direction's sequence space ends, no hole tracked
  // either way, the first RTT taken or no SYN seen -- is taken here in analyseTcp's fast path's steps, in its
  // order, its counters summed in registers and added at the run's end (nothing reads them before it ends: not
  // flushBin, annotate or charge). Every other segment goes through add().
  void tcpRun(const PacketRecord* p, const PacketRecord* const end, Run& run) {
    if (!run.tcp_known) {  // as tcpPacket() at the run's first segment (the maps it and ECE's look-up touch differ)
      run.tcp_known = true;
      run.conn = connectionOf(p->key, run);
    }
    if (run.conn == nullptr) {
      for (; p != end; ++p) add(*p, run);
      return;
    }
    TcpConn& conn = *run.conn;
    TcpDir& fwd = conn.dir[run.d];
    TcpDir& rev = conn.dir[1 - run.d];
    const Direction dir = p->direction;
    const uint64_t hosts = run.hosts;
    uint64_t packets = 0, ect = 0, data = 0, ack_lost = 0;
    constexpr uint8_t kFlags = kTcpSyn | kTcpFin | kTcpRst | kTcpAck | kTcpEce | kTcpCwr;
    for (; p != end; ++p) {
      const PacketRecord& r = *p;
      const uint8_t l4 = r.l4 & 0xF;  // the kind and ECN
      if (!(r.ts_ns < bin_end && r.ts_ns >= bin_start && r.direction == dir &&
            (l4 & 3) == static_cast<uint8_t>(L4Kind::kTcp) && l4 < (3 << 2) && (r.op & kFlags) == kTcpAck &&
            steadyAt(conn, fwd, rev, r.seq))) {
        add(r, run);
        continue;
      }
      const uint32_t seglen = r.len;
      bin_hosts |= hosts;
      ++packets;
      ect += l4 >= (1 << 2);
      data += seglen > 0;
      conn.last_ns = r.ts_ns;
      bool lost = false;
      const bool spurious = commonSegment(fwd, rev, seglen, r.seq, r.ack, r.ts_ns, &lost);
      ack_lost += lost;
      if (spurious) {
        ++dirs[static_cast<int>(dir)].tcp_retransmissions;
        charge(r.key, run, &KeyEvents::tcp_retransmissions, bin, kSignalTcpRetransmission);
      }
    }
    // Every record sets last_ns, as add() does (after the loop: a record through add() sets it to its own time);
    // first_ns is set by add() at the first record of all, which opens the first bin.
    last_ns = end[-1].ts_ns;
    EvidenceCounts& c = dirs[static_cast<int>(dir)];
    if (packets > 0) dir_seen[static_cast<int>(dir)] = true;
    c.ip_packets += packets;
    c.ect += ect;
    c.tcp_data_segments += data;
    c.tcp_ack_lost_segments += ack_lost;
    segments_by_run += packets;
  }

  // Fetches what findConnection will read for a TCP record some runs ahead, unless its connection is a recent one:
  // connections that churn miss the caches at every new key.
  void prefetchConnection(const PacketRecord& r) const {
    if (r.l4Kind() != L4Kind::kTcp) return;
    int d;
    if (slotHolds(tcp_slots[symmetricSlot(r.key, kTcpSlots - 1)], r.key, &d)) return;
    tcp.prefetch(canonical(r.key, &d));
  }
  // Whether `slot` holds the connection of `key`, and which way the key goes (*d).
  static bool slotHolds(const TcpSlot& slot, const FlowKey& key, int* d) {
    if (slot.conn == nullptr) return false;
    if (slot.key == key) {
      *d = 0;
      return true;
    }
    *d = 1;
    return isReverse(slot.key, key);
  }

  // The connection of `key` and which way the key goes (*d), made if new; nullptr when the table is full. Valid
  // until the next connection is made (the table may move its entries).
  TcpConn* findConnection(const FlowKey& key, int* d) {
    TcpSlot& slot = tcp_slots[symmetricSlot(key, kTcpSlots - 1)];
    if (!slotHolds(slot, key, d)) {
      ++slot_misses;
      const FlowKey k = canonical(key, d);
      KeyMap<TcpConn>::iterator it;
      if (tcp.size() < flow_cap) {  // a new connection goes in with the probe that looks for it
        const size_t buckets = tcp.bucket_count();
        it = tcp.try_emplace(k).first;
        if (tcp.bucket_count() != buckets) {  // entries moved
          tcp_slots.fill(TcpSlot{});
          ++conn_epoch;
        }
      } else if (it = tcp.find(k); it == tcp.end()) {
        return nullptr;
      }
      slot.key = k;
      slot.conn = &it->second;
    }
    return slot.conn;
  }

  // findConnection() through the run's hint: the connection the hint holds while its epoch is current, else found
  // (or made) and put in the hint. The same connection either way. A refusal (the table full: nullptr) is hinted
  // too: the table stays full until idle connections are forgotten, which changes the epoch, so a refusal of the
  // epoch holds, and a flow beyond the table's bound is not looked up again at every run.
  TcpConn* connectionOf(const FlowKey& key, Run& run) {
    FlowHint* h = run.hint;
    if (h != nullptr && h->epoch == conn_epoch) {
      run.d = static_cast<int>(h->value & 1);
      TcpConn* conn = reinterpret_cast<TcpConn*>(h->value & ~uintptr_t{1});
      refused_by_hint += conn == nullptr;
      return conn;
    }
    TcpConn* conn = findConnection(key, &run.d);
    if (h != nullptr) *h = FlowHint{reinterpret_cast<uintptr_t>(conn) | static_cast<uintptr_t>(run.d), conn_epoch};
    return conn;
  }

  void tcpPacket(const PacketRecord& r, EvidenceCounts& c, Run& run) {
    if (r.op & kTcpEce) {
      ++c.tcp_ece;
      if (KeyEvents* p = flowEvents(r.key, run)) ++p->tcp_ece;
    }
    if (r.op & kTcpCwr) ++c.tcp_cwr;
    if (r.len > 0) ++c.tcp_data_segments;
    if (!run.tcp_known) {
      run.tcp_known = true;
      run.conn = connectionOf(r.key, run);
    }
    if (run.conn == nullptr) {
      if (r.len > 0) ++c.tcp_untracked_segments;
      return;
    }
    TcpConn& conn = *run.conn;
    conn.last_ns = r.ts_ns;
    TcpMirrorFacts mf;
    const TcpVerdict verdict = analyseTcp(conn, run.d, r, &mf);
    if (mf.lost_segment | mf.ack_lost_segment | (mf.holes_filled != 0) | (mf.bytes_acked_unseen != 0) |
        (mf.holes_untracked != 0)) {
      c.tcp_lost_segments += mf.lost_segment;
      c.tcp_ack_lost_segments += mf.ack_lost_segment;
      c.tcp_holes_filled += mf.holes_filled;
      c.tcp_holes_acked_unseen += mf.holes_acked_unseen;
      c.tcp_bytes_acked_unseen += mf.bytes_acked_unseen;
      c.tcp_holes_untracked += mf.holes_untracked;
    }
    switch (verdict) {
      case TcpVerdict::kNone:
        break;
      case TcpVerdict::kRetransmission:
        ++c.tcp_retransmissions;
        charge(r.key, run, &KeyEvents::tcp_retransmissions, bin, kSignalTcpRetransmission);
        break;
      case TcpVerdict::kOutOfOrder:
        ++c.tcp_out_of_order;
        if (KeyEvents* p = flowEvents(r.key, run)) ++p->tcp_out_of_order;
        break;
    }
  }

  void rocePacket(const PacketRecord& r, EvidenceCounts& c, Run& run) {
    ++c.roce_packets;
    const uint8_t op = r.op;
    if (op == 0x81) {
      ++c.cnp;
      charge(r.key, run, &KeyEvents::cnp, bin, kSignalCnp);
      FlowKey target;
      target.dst = r.key.dst;
      target.family = r.key.family;
      target.kind = r.key.kind;
      target.src_port = r.key.src_port;
      target.dst_port = r.key.dst_port;
      if (uint64_t* n = boundedFind(cnp_targets, target, pair_cap)) ++*n;
      return;
    }
    if (op == 0x11) {  // SPEC: a NAK is an ACKNOWLEDGE whose syndrome says so
      const uint8_t s = r.syndrome();
      const int type = (s >> 5) & 3;
      if (type == 3) {
        charge(r.key, run, (s & 0x1F) == 0 ? &KeyEvents::nak_psn_sequence_error : &KeyEvents::nak_other, bin,
               kSignalNak);
        ++((s & 0x1F) == 0 ? c.nak_psn_sequence_error : c.nak_other);
      } else if (type == 1) {
        charge(r.key, run, &KeyEvents::nak_rnr, bin, kSignalNak);
        ++c.nak_rnr;
      }
    }
    if (op == 0x0C) ++c.roce_messages;  // an RDMA READ request starts a message that its responses carry
    if (!carriesData(op)) return;       // SPEC: resent packets are data packets
    if (last_qp == nullptr || !(r.key == last_qp_key)) {
      auto it = qps.find(r.key);
      if (it == qps.end()) {
        if (qps.size() >= flow_cap) return;
        it = qps.emplace(r.key, QpState{}).first;
      }
      last_qp = &it->second;
      last_qp_key = r.key;
    }
    QpState& q = *last_qp;
    q.last_ns = r.ts_ns;
    const uint32_t psn = r.psn();
    if (q.has && ((q.highest - psn) & 0xFFFFFF) < 0x800000) {
      ++c.roce_resent;
      charge(r.key, run, &KeyEvents::roce_resent, bin, kSignalRoceResent);
      return;
    }
    q.highest = psn;
    q.has = true;
    if (startsMessage(op)) ++c.roce_messages;
    if (carriesMessageData(op)) c.roce_message_bytes += r.len;
  }

  // Drops the state of connections and queue pairs idle for a minute once the tables are half full.
  void forgetIdle(int64_t now) {
    tcp_slots.fill(TcpSlot{});
    last_qp = nullptr;
    if (tcp.size() > flow_cap / 2 &&
        absl::erase_if(tcp, [&](const auto& kv) { return kv.second.last_ns < now - kIdleForgetNs; }) > 0) {
      // Erased entries leave tombstones, and absl may later make room by rehashing in place (entries move with
      // the bucket count unchanged), which tcp_slots' pointers could not tell. A rehash now clears them: from here
      // entries move only when the table grows, which findConnection sees.
      tcp.rehash(0);
      ++conn_epoch;
    }
    if (qps.size() > flow_cap / 2)
      absl::erase_if(qps, [&](const auto& kv) { return kv.second.last_ns < now - kIdleForgetNs; });
  }

  EvidenceCounts totals() const {
    EvidenceCounts t;
    for (const EvidenceCounts& d : dirs) t.merge(d);
    return t;
  }

  std::shared_ptr<EvidenceReport> report(const HeavyResult& top_pairs, const HeavyResult& top_flows,
                                         int64_t span) const {
    auto r = std::make_shared<EvidenceReport>();
    r->after_ns = after_ns;
    r->span_ns = span;
    r->totals = totals();
    for (int d = 0; d < kDirectionCount; ++d) {
      if (dir_seen[d]) r->directions.emplace_back(static_cast<Direction>(d), dirs[d]);
    }
    auto keyed = [](const KeyMap<KeyEvents>& m, const HeavyResult& h) {
      std::vector<KeyedEvidence> v;
      for (const HeavyHitter& x : h.top) {
        auto it = m.find(x.key);
        v.push_back({x.key, it == m.end() ? kZero : it->second.counts()});
      }
      return v;
    };
    r->pairs = keyed(pairs, top_pairs);
    r->flows = keyed(flows, top_flows);
    for (const auto& [k, n] : cnp_targets) r->cnp_targets.push_back({k, n});
    std::sort(r->cnp_targets.begin(), r->cnp_targets.end(), [](const CnpTarget& a, const CnpTarget& b) {
      return a.cnp != b.cnp ? a.cnp > b.cnp : std::memcmp(&a.key, &b.key, sizeof(FlowKey)) < 0;
    });
    if (r->cnp_targets.size() > 10) r->cnp_targets.resize(10);
    // The pairs with events, most first (among equals by key), at most kEventPairs: ranked by their sums and
    // pointers, only the listed ones sorted and copied (at every interval's close, and the table may hold
    // thousands where connections churn).
    constexpr size_t kEventPairs = 4096;
    std::vector<std::pair<uint64_t, const std::pair<const FlowKey, KeyEvents>*>> ranked;
    for (const auto& kv : pairs) {
      if (const uint64_t n = kv.second.events(); n > 0) ranked.emplace_back(n, &kv);
    }
    const auto before = [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first
                                : std::memcmp(&a.second->first, &b.second->first, sizeof(FlowKey)) < 0;
    };
    const auto listed_end = ranked.begin() + static_cast<ptrdiff_t>(std::min(ranked.size(), kEventPairs));
    std::nth_element(ranked.begin(), listed_end, ranked.end(), before);
    std::sort(ranked.begin(), listed_end, before);
    r->event_pairs.reserve(static_cast<size_t>(listed_end - ranked.begin()));
    for (auto it = ranked.begin(); it != listed_end; ++it)
      r->event_pairs.push_back({it->second->first, it->second->second.counts()});
    r->pause = pause;
    r->microbursts = microbursts;
    r->congesting = congesting;
    r->congesting_sizes_bytes = sizes;
    r->listed_dropped = listed_dropped;
    return r;
  }
};

EvidenceAggregator::EvidenceAggregator(const EvidenceConfig& c, const EngineConfig& engine, bool intervals)
    : impl_(std::make_unique<Impl>(c, engine, intervals)) {}
EvidenceAggregator::~EvidenceAggregator() = default;

void EvidenceAggregator::add(std::span<const PacketRecord> records) {
  findFlowRuns(records, &impl_->run_starts);
  addRuns(records, impl_->run_starts);
}

void EvidenceAggregator::addRuns(std::span<const PacketRecord> records, std::span<const uint32_t> starts) {
  addRunsHinted(records, starts, {});
}

void EvidenceAggregator::addRunsHinted(std::span<const PacketRecord> records, std::span<const uint32_t> starts,
                                       std::span<FlowHint* const> hints) {
  Impl& m = *impl_;
  // Where connections churn (the last batch's runs missed the recent ones often), the connection of the run
  // kAhead runs on is fetched first; steady traffic does not pay for the check.
  constexpr size_t kAhead = 4;
  const bool churn = m.slot_misses - m.misses_before > m.runs_before / 8;
  m.misses_before = m.slot_misses;
  m.runs_before = starts.size() - 1;
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    if (churn && k + kAhead + 1 < starts.size()) {
      const FlowHint* h = hints.empty() ? nullptr : hints[k + kAhead];
      if (h == nullptr || h->epoch != m.conn_epoch) m.prefetchConnection(records[starts[k + kAhead]]);
    }
    Impl::Run run;
    if (!hints.empty()) run.hint = hints[k];
    const FlowKey& key = records[starts[k]].key;
    if (key.family != 0) run.hosts = hostBit(key.src) | hostBit(key.dst);
    if (m.cfg.common_segments_by_run && starts[k + 1] - starts[k] > 1 && key.family != 0 &&
        records[starts[k]].l4Kind() == L4Kind::kTcp) {
      m.tcpRun(&records[starts[k]], records.data() + starts[k + 1], run);
    } else {
      for (uint32_t i = starts[k]; i < starts[k + 1]; ++i) m.add(records[i], run);
    }
  }
}

void EvidenceAggregator::onMicroburst(const Microburst& m) { impl_->pending.push_back(m); }

uint64_t EvidenceAggregator::segmentsTakenByRun() const { return impl_->segments_by_run; }

uint64_t EvidenceAggregator::refusedByHint() const { return impl_->refused_by_hint; }

void EvidenceAggregator::closeInterval(const IntervalContext& c, IntervalReport* out) {
  Impl& m = *impl_;
  if (m.bin_start != INT64_MIN && m.bin_start < c.end_ns) {
    m.flushBin();  // every record before the interval's end is in: its bins are complete
    m.bin_start = INT64_MIN;
  }
  m.annotate(c.end_ns);
  for (int p = 0; p < kPausePriorities; ++p) m.accruePause(p, c.end_ns);
  m.forgetIdle(c.end_ns);
  auto r = m.report(out->pairs, out->flows, c.end_ns - c.start_ns);
  r->interval = minus(r->totals, m.at_last_close);
  r->interval_microbursts = m.microbursts - m.microbursts_at_close;
  r->interval_congesting = m.congesting - m.congesting_at_close;
  r->bursts = std::move(m.bursts);
  m.bursts.clear();
  r->pair_bins = std::move(m.listed_pairs);
  m.listed_pairs.clear();
  m.at_last_close = r->totals;
  m.microbursts_at_close = m.microbursts;
  m.congesting_at_close = m.congesting;
  out->evidence = std::move(r);
}

void EvidenceAggregator::finish() {
  Impl& m = *impl_;
  m.flushBin();
  m.annotate(INT64_MAX);
  if (!m.intervals) {
    for (int p = 0; p < kPausePriorities; ++p) m.accruePause(p, m.last_ns);
  }
}

void EvidenceAggregator::result(EngineResult* out) const {
  const Impl& m = *impl_;
  const int64_t span = m.first_ns == INT64_MIN ? 0 : m.last_ns - m.first_ns;
  auto r = m.report(out->pairs, out->flows, span);
  if (!m.intervals) {
    r->bursts = m.bursts;
    r->bins = m.listed;
    r->pair_bins = m.listed_pairs;
  }
  out->evidence = std::move(r);
}

}  // namespace burstscope
