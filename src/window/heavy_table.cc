#include "src/window/heavy_table.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <random>

namespace burstscope::internal {

// The eviction's two fields in one 16-byte part of a slot (HeavyCounts, at the start of every entry).
static_assert((sizeof(FlowKey) + offsetof(HeavyCounts, bytes)) / 16 ==
              (sizeof(FlowKey) + offsetof(HeavyCounts, slot) + sizeof(int32_t) - 1) / 16);
static_assert(sizeof(std::pair<const FlowKey, HeavyCounts>) == 80 &&
              sizeof(std::pair<const FlowKey, FlowEntry>) == 128);

uint64_t FlowKeyHash::seed() {
  static const uint64_t s = std::random_device{}() * 0x9E3779B97F4A7C15ull | 1;
  return s;
}

size_t FlowKeyHash::operator()(const FlowKey& k) const {
  uint64_t w[5];
  static_assert(sizeof(w) == sizeof(FlowKey));
  std::memcpy(w, &k, sizeof(w));
  uint64_t h = seed();
  for (uint64_t x : w) {
    h ^= x;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
  }
  return static_cast<size_t>(h);
}

template <typename EntryT>
HeavyTable<EntryT>::HeavyTable(const EngineConfig& cfg, size_t capacity) : cfg_(cfg), capacity_(capacity) {
  slots_.reserve(cfg.tracked_streams);
}

template <typename EntryT>
EntryT& HeavyTable<EntryT>::lookup(const FlowKey& key, int64_t ts) {
  Recent& r = recent_[key.recentSlot(kRecentBits)];
  if (r.generation == generation_ && r.key == key) return *r.entry;
  ++recent_misses_;
  // Below the capacity a new key goes in with the probe that looks for it (one hash, one probe: where flows
  // churn, most look-ups are of new keys); at the capacity a new key first evicts.
  auto [it, made] =
      entries_.size() < capacity_ ? entries_.try_emplace(key, fresh(ts)) : std::pair{entries_.find(key), false};
  if (it == entries_.end()) {
    evictLighterHalf();
    it = entries_.try_emplace(key, fresh(ts)).first;
    made = true;
  }
  if (made) ++generation_;
  r = Recent{key, &it->second, generation_};
  return it->second;
}

template <typename EntryT>
void HeavyTable<EntryT>::account(const FlowKey& key, Entry& e, int64_t first_ts, int64_t last_ts, uint64_t bytes,
                                 uint64_t packets) {
  total_bytes_ += bytes;
  total_packets_ += packets;
  e.bytes += bytes;
  e.packets += packets;
  e.last_ns = last_ts;
  if (e.slot >= 0) {
    Slot& s = slots_[e.slot];
    s.bytes = e.bytes;
    s.stream->addRun(first_ts, last_ts, bytes, packets);
  } else if (slots_.size() < cfg_.tracked_streams || e.bytes > promote_above_) {
    promote(key, e, first_ts, last_ts, bytes, packets);
  }
}

template <typename EntryT>
void HeavyTable<EntryT>::promote(const FlowKey& key, Entry& e, int64_t first_ts, int64_t last_ts, uint64_t bytes,
                                 uint64_t packets) {
  int32_t slot;
  if (slots_.size() < cfg_.tracked_streams) {
    slot = static_cast<int32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    auto lightest =
        std::min_element(slots_.begin(), slots_.end(), [](const Slot& a, const Slot& b) { return a.bytes < b.bytes; });
    promote_above_ = lightest->bytes + lightest->bytes / 4;
    if (e.bytes <= promote_above_) return;
    slot = static_cast<int32_t>(lightest - slots_.begin());
    entries_.find(lightest->key)->second.slot = -1;
  }
  Slot& s = slots_[slot];
  s.key = key;
  s.bytes = e.bytes;
  s.since_ns = first_ts;
  // The windows start with this run; earlier packets of a key promoted late are only in its totals.
  s.stream = std::make_unique<Stream>(cfg_, /*full=*/false);
  s.stream->addRun(first_ts, last_ts, bytes, packets);
  e.slot = slot;
  if (slots_.size() == cfg_.tracked_streams) {
    uint64_t lightest = UINT64_MAX;
    for (const Slot& x : slots_) lightest = std::min(lightest, x.bytes);
    promote_above_ = lightest + lightest / 4;
  }
}

template <typename EntryT>
void HeavyTable<EntryT>::evictLighterHalf() {
  // One pass over the table lists the untracked entries; the cut is their median, and every untracked entry at
  // or below it goes. The erasures go by the list (in the table's order, as a pass over it would), not by a
  // second pass over the table: where flows churn the table is megabytes, and each pass streams all of it. The
  // lists are the eviction's own (megabytes too at the table's bound: not kept between evictions).
  std::vector<std::pair<uint64_t, typename Map::iterator>> untracked;
  untracked.reserve(entries_.size());
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.slot < 0) untracked.emplace_back(it->second.bytes, it);
  }
  if (untracked.empty()) return;
  std::vector<uint64_t> sizes(untracked.size());
  for (size_t i = 0; i < untracked.size(); ++i) sizes[i] = untracked[i].first;
  auto mid = sizes.begin() + static_cast<ptrdiff_t>(sizes.size() / 2);
  std::nth_element(sizes.begin(), mid, sizes.end());
  const uint64_t cut = *mid;
  size_t before = entries_.size();
  for (const auto& [bytes, it] : untracked) {
    if (bytes <= cut) entries_.erase(it);
  }
  ++generation_;
  evictions_ += before - entries_.size();
}

template <typename EntryT>
void HeavyTable<EntryT>::finish() {
  for (Slot& s : slots_) s.stream->finish();
}

template <typename EntryT>
HeavyResult HeavyTable<EntryT>::result(size_t top_k, bool with_windows) const {
  // The top_k heaviest by one pass over the table with a bounded heap (no copy of the table): it runs on
  // the worker at every report interval's close. Heaviest first; among equals, the earliest first, then by key:
  // the table's order is its hash's, seeded per process, and keys equal in bytes and first packet (single-packet
  // flows in one microsecond of a capture) came out in a different order from run to run.
  using Item = std::pair<const FlowKey*, const Entry*>;
  auto heavier = [](const Item& a, const Item& b) {
    if (a.second->bytes != b.second->bytes) return a.second->bytes > b.second->bytes;
    if (a.second->first_ns != b.second->first_ns) return a.second->first_ns < b.second->first_ns;
    return std::memcmp(a.first, b.first, sizeof(FlowKey)) < 0;  // FlowKey has no padding (packet.h)
  };
  std::vector<Item> all;  // a heap whose top is the lightest kept
  all.reserve(std::min(top_k, entries_.size()) + 1);
  for (const auto& [k, e] : entries_) {
    if (top_k == 0) break;
    if (all.size() == top_k && !heavier({&k, &e}, all.front())) continue;
    all.emplace_back(&k, &e);
    std::push_heap(all.begin(), all.end(), heavier);
    if (all.size() > top_k) {
      std::pop_heap(all.begin(), all.end(), heavier);
      all.pop_back();
    }
  }
  std::sort_heap(all.begin(), all.end(), heavier);
  const size_t n = all.size();
  HeavyResult r;
  r.entries = entries_.size();
  r.evictions = evictions_;
  uint64_t top_bytes = 0, top_packets = 0;
  for (size_t i = 0; i < n; ++i) {
    const Entry& e = *all[i].second;
    HeavyHitter h;
    h.key = *all[i].first;
    h.packets = e.packets;
    h.bytes = e.bytes;
    h.first_ns = e.first_ns;
    h.last_ns = e.last_ns;
    if (with_windows && e.slot >= 0) {
      const Slot& s = slots_[e.slot];
      h.windows = s.stream->result();
      h.windows_since_ns = s.since_ns;
    }
    top_bytes += e.bytes;
    top_packets += e.packets;
    r.top.push_back(std::move(h));
  }
  r.other_bytes = total_bytes_ - top_bytes;
  r.other_packets = total_packets_ - top_packets;
  return r;
}

template class HeavyTable<HeavyCounts>;
template class HeavyTable<FlowEntry>;

}  // namespace burstscope::internal
