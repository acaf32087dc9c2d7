// Per-key byte and packet counts for host pairs or 5-tuple flows, bounded in memory, with window statistics
// for the heaviest keys. All keys are counted exactly until the table is full; then the lighter half of the
// untracked entries is evicted (counted, their bytes folded into "other"). A fixed number of tracked slots
// carry full window statistics; a key takes a slot when one is free, or from the lightest tracked key once it
// carries 25% more bytes (hysteresis against churn). The result says from when each key's windows count.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "burstscope/packet.h"
#include "burstscope/window.h"
#include "src/window/large_pages.h"
#include "src/window/stream.h"

namespace burstscope::internal {

// A fast hash of the 40-byte key: five 64-bit words mixed by multiplication. The seed is random per
// process, so that traffic crafted to collide in one monitor does not collide in another.
struct FlowKeyHash {
  size_t operator()(const FlowKey& k) const;
  static uint64_t seed();
};

// A key's counts: all that a host pair's entry holds, and the first part of a flow's. Laid out so that `bytes` and
// `slot`, all that the eviction's pass over the table reads of an entry, lie in one 16-byte part of its slot (the
// key's 40 bytes come first): so in one cache line wherever absl's slots start on 16 bytes, as they do past a few
// entries. Before, a slot starting 0 or 16 bytes into a line had them in two; by absl's layout (the control bytes,
// capacity + 16 of them, before the slots) every slot of a table on huge pages starts 16 bytes into one. Where flows
// churn, that pass was a tenth of the tables' and evidence's samples (bench/README.md, issue 41's thirty-seventh
// session).
struct HeavyCounts {
  int64_t first_ns = 0;
  uint64_t bytes = 0;
  int32_t slot = -1;
  uint64_t packets = 0;
  int64_t last_ns = 0;
};

// A flow's entry: its counts, its host pair's entry and what the hinted aggregators keep of it. A pair's entry is
// its counts alone: an 80-byte slot instead of 128, which where flows churn made BM_Churn's tables and evidence about
// 6% faster (bench/README.md, issue 41's thirty-eighth session).
struct FlowEntry : HeavyCounts {
  // The flow's host pair's entry in the pair table, valid while that table's generation is unchanged: one hash
  // lookup per packet instead of two.
  HeavyCounts* link = nullptr;
  uint64_t link_generation = 0;
  // Each hinted aggregator's state of the flow (window.h), one hint an owner.
  std::array<FlowHint, kFlowHintOwners> hints = {};
};

// A table of host pairs (Entry = HeavyCounts) or of 5-tuple flows (FlowEntry).
template <typename EntryT>
class HeavyTable {
 public:
  using Entry = EntryT;

  HeavyTable(const EngineConfig& cfg, size_t capacity);

  // The entry of `key`, created if new (which may evict); valid until the generation changes.
  Entry& lookup(const FlowKey& key, int64_t ts);
  // Counts a run of `packets` packets of `key` from `first_ts` to `last_ts`, all in one base bin (a tracked
  // key's windows are made of base bins, so a run is the same to them as its packets one by one).
  void account(const FlowKey& key, Entry& e, int64_t first_ts, int64_t last_ts, uint64_t bytes, uint64_t packets);
  void add(const FlowKey& key, int64_t ts, uint32_t len) { account(key, lookup(key, ts), ts, ts, len, 1); }
  // Fetches what looking `key` up will read, unless it is a recent key (which costs a key comparison): for a
  // look-up a few runs ahead, since a table of churning flows misses the caches at every new key. False if recent.
  bool prefetch(const FlowKey& key) const {
    const Recent& r = recent_[key.recentSlot(kRecentBits)];
    if (r.generation == generation_ && r.key == key) return false;
    entries_.prefetch(key);
    return true;
  }
  // Look-ups that did not find their key among the recent ones (a new or a churning flow), so far.
  uint64_t recentMisses() const { return recent_misses_; }
  // Changes whenever entries may have moved or gone (insertion, eviction).
  uint64_t generation() const { return generation_; }
  // The slots the table has room for: its memory is this many slots of a key and an entry each.
  size_t slotCount() const { return entries_.capacity(); }

  void finish();
  // The top_k keys by bytes; with_windows adds the tracked ones' window statistics (costly: for the end).
  HeavyResult result(size_t top_k, bool with_windows = true) const;

 private:
  using Map = FlowMap<Entry, FlowKeyHash>;
  struct Slot {
    FlowKey key;
    uint64_t bytes = 0;  // the owner's byte count, mirrored for the promotion check
    int64_t since_ns = 0;
    std::unique_ptr<Stream> stream;
  };

  // A new key's entry, first seen at `ts`.
  static Entry fresh(int64_t ts) {
    Entry e;
    e.first_ns = ts;
    return e;
  }
  void promote(const FlowKey& key, Entry& e, int64_t first_ts, int64_t last_ts, uint64_t bytes, uint64_t packets);
  void evictLighterHalf();

  const EngineConfig& cfg_;
  size_t capacity_;
  Map entries_;
  // Recent keys, direct-mapped (FlowKey::recentSlot): a hit costs a key comparison instead of the seeded hash and
  // the map's probe. An entry counts while its generation is the table's.
  struct Recent {
    FlowKey key;
    Entry* entry = nullptr;
    uint64_t generation = 0;
  };
  static constexpr int kRecentBits = 8;
  std::vector<Recent> recent_ = std::vector<Recent>(size_t{1} << kRecentBits);
  std::vector<Slot> slots_;
  uint64_t promote_above_ = 0;  // a cached lower bound of the lightest slot's bytes, times 1.25
  uint64_t total_bytes_ = 0;
  uint64_t total_packets_ = 0;
  uint64_t evictions_ = 0;
  uint64_t generation_ = 1;
  uint64_t recent_misses_ = 0;
};

extern template class HeavyTable<HeavyCounts>;
extern template class HeavyTable<FlowEntry>;
using PairTable = HeavyTable<HeavyCounts>;
using FlowTable = HeavyTable<FlowEntry>;

}  // namespace burstscope::internal
