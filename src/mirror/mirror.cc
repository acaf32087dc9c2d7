// The mirror self-checks' aggregator (docs/mirror.md). Per packet: one look-up in a table of recent frames (4-way
// buckets, grown only where a frame would push out one still inside its horizon) and one add per load scale.
#include "burstscope/mirror.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace burstscope {

absl::Status validateMirrorConfig(const MirrorConfig& c) {
  if (c.duplicate_horizon_ns < 0 || c.duplicate_horizon_ns > 1'000'000'000) {
    return absl::InvalidArgumentError("mirror.duplicate-horizon: must lie between 0 and 1s");
  }
  if (!(c.overload_threshold > 0 && c.overload_threshold <= 1)) {
    return absl::InvalidArgumentError("mirror.overload-threshold: must lie in (0, 1]");
  }
  for (int64_t s : c.load_scales_ns) {
    if (s <= 0) return absl::InvalidArgumentError("mirror.load-scales: every scale must be above 0");
  }
  return absl::OkStatus();
}

namespace {

uint32_t flowFingerprint(const FlowKey& k) {
  uint64_t w[5];
  std::memcpy(w, &k, sizeof(w));
  uint64_t h = w[0] * 0x9E3779B97F4A7C15ull;
  h = (h ^ w[1]) * 0xC2B2AE3D27D4EB4Full;
  h = (h ^ w[2]) * 0x165667B19E3779F9ull;
  h = (h ^ w[3]) * 0x9E3779B97F4A7C15ull;
  h = (h ^ w[4]) * 0xC2B2AE3D27D4EB4Full;
  return static_cast<uint32_t>(h >> 32);
}

// A bucket of remembered frames, one cache line: each way's time, duplicate key and fingerprint of its flow key.
// The transport facts the key was made of (TCP: sequence and acknowledgement number; RoCEv2: PSN), the second
// check, lie in an array beside the buckets, read only when key and flow match (a duplicate, or a collision of
// both): a look-up reads one line, not the 96 bytes (two or three lines) of ways that held all five.
constexpr size_t kWays = 4;
struct alignas(64) Bucket {
  int64_t ts_ns[kWays] = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN};  // INT64_MIN: empty
  uint32_t dup_key[kWays] = {};
  uint32_t flow[kWays] = {};
};
static_assert(sizeof(Bucket) == 64);
struct SeqAck {
  uint32_t seq = 0;
  uint32_t ack = 0;
};

struct LoadScale {
  int64_t w = 0;
  int64_t window = INT64_MIN;  // index of the current window (ts / w)
  int64_t from = 0, to = 0;    // [window·w, (window + 1)·w): a time inside it needs no division
  uint64_t bytes = 0;          // line bytes in it
  MirrorLoad out;
};

}  // namespace

struct MirrorAggregator::Impl {
  // Up to 4096 buckets of 4: at 100 Gb/s of 64-byte frames (150 Mpps) a 50 µs horizon holds 7,500 frames, under
  // half the table; typical traffic holds a few hundred. 256 KB of buckets and 128 KB beside them at that size. The
  // table starts at 256 buckets (24 KB in all, which stays in a core's nearest caches) and doubles whenever a frame
  // would push out one still inside its horizon (grow). So below kMaxBuckets no frame is forgotten inside its
  // horizon; and a bucket of the largest table is part of one bucket at every smaller size (bucketOf), so the table
  // has grown to kMaxBuckets before that table would push one out. It finds every copy the fixed table of 4096
  // buckets found, at any rate; only which of two equally old frames a full bucket pushes out may differ (their
  // ways), and with it the copies found and the frames pushed out after that. Where the table was fixed, its 384 KB
  // cost the bundled trace's whole analysis about 2 ns a packet (bench/README.md, issue 41's thirty-sixth session);
  // at 15 M packets/s it grows to the full size within the first few thousand frames. A growth allocates (at most
  // four times in a run, 48 to 384 KB).
  static constexpr size_t kMinBuckets = 256;
  static constexpr size_t kMaxBuckets = 4096;
  MirrorConfig cfg;
  double capacity_bps;
  std::vector<Bucket> table = std::vector<Bucket>(kMinBuckets);
  std::vector<SeqAck> facts = std::vector<SeqAck>(kMinBuckets * kWays);  // way w of bucket b at b * kWays + w
  size_t mask = kMinBuckets - 1;                                         // table.size() - 1
  MirrorReport r;
  std::vector<LoadScale> scales;
  std::vector<uint32_t> run_starts;  // scratch for add() without the engine's runs

  Impl(const MirrorConfig& c, const EngineConfig& e) : cfg(c), capacity_bps(e.link_capacity_bps) {
    r.duplicate_horizon_ns = c.duplicate_horizon_ns;
    r.capacity_bps = capacity_bps;
    r.overload_threshold = c.overload_threshold;
    for (int64_t s : c.load_scales_ns) {
      LoadScale l;
      l.w = s;
      l.out.scale_ns = s;
      scales.push_back(l);
    }
  }

  void closeWindow(LoadScale& l) {
    const double load = static_cast<double>(l.bytes) * 8e9 / (capacity_bps * static_cast<double>(l.w));
    ++l.out.windows;
    if (load >= cfg.overload_threshold) ++l.out.overloaded;
    l.out.peak = std::max(l.out.peak, load);
    l.bytes = 0;
  }
  // Closes every window of `l` that ends at or before `t` (empty ones counted), keeping `t`'s own open.
  void advance(LoadScale& l, int64_t t) {
    if (t >= l.from && t < l.to && l.window != INT64_MIN) return;  // the window's own time: the usual case
    const int64_t n = t / l.w;
    if (l.window == INT64_MIN) {
      setWindow(l, n);
      return;
    }
    if (n <= l.window) return;
    closeWindow(l);
    l.out.windows += static_cast<uint64_t>(n - l.window - 1);  // the empty ones between
    setWindow(l, n);
  }
  static void setWindow(LoadScale& l, int64_t n) {
    l.window = n;
    // The times whose quotient is n (t / w truncates toward zero: for n = 0 that includes (-w, 0)).
    l.from = n > 0 ? n * l.w : n == 0 ? -l.w + 1 : (n - 1) * l.w + 1;
    l.to = n >= 0 ? (n + 1) * l.w : n * l.w + 1;
  }

  // (tests/mirror's brute force of the replacement relies on this layout: at every size, the frames of one bucket of
  // the largest table share a bucket.)
  size_t bucketOf(uint32_t dup_key) const { return (dup_key >> 2) & mask; }

  // Doubles the table. Every remembered frame keeps its way: the frames of bucket b go to b or b + the old size, by
  // one more bit of their key, so two frames of one way never meet. So nothing is forgotten, and which way is the
  // oldest of equals stays as it was.
  void grow() {
    const size_t n = table.size();
    std::vector<Bucket> bigger(2 * n);
    std::vector<SeqAck> bigger_facts(2 * n * kWays);
    for (size_t b = 0; b < n; ++b) {
      for (size_t w = 0; w < kWays; ++w) {
        if (table[b].ts_ns[w] == INT64_MIN) continue;
        const size_t to = (table[b].dup_key[w] >> 2) & (2 * n - 1);
        bigger[to].ts_ns[w] = table[b].ts_ns[w];
        bigger[to].dup_key[w] = table[b].dup_key[w];
        bigger[to].flow[w] = table[b].flow[w];
        bigger_facts[to * kWays + w] = facts[b * kWays + w];
      }
    }
    table.swap(bigger);
    facts.swap(bigger_facts);
    mask = 2 * n - 1;
  }

  // `flow` is flowFingerprint(p.key), found once per run of the flow's packets.
  void duplicate(const PacketRecord& p, uint32_t flow) {
    if (p.dup_key == 0) return;
    // A TCP segment without payload may legitimately repeat with the same key (duplicate ACKs differ only
    // in options): not judged.
    if (p.l4Kind() == L4Kind::kTcp && p.len == 0) return;
    ++r.checked;
    const size_t b = bucketOf(p.dup_key);
    Bucket& bucket = table[b];
    for (size_t i = 0; i < kWays; ++i) {
      if (bucket.dup_key[i] == p.dup_key && bucket.flow[i] == flow &&
          p.ts_ns - bucket.ts_ns[i] <= cfg.duplicate_horizon_ns && p.ts_ns >= bucket.ts_ns[i] &&
          facts[b * kWays + i].seq == p.seq && facts[b * kWays + i].ack == p.ack) {
        const int d = static_cast<int>(p.direction);
        ++r.duplicates[d];
        r.duplicate_bytes[d] += p.wire_len;
        bucket.ts_ns[i] = p.ts_ns;  // a third copy is judged against this one
        return;
      }
    }
    remember(p, flow);  // may grow the table: `bucket` is not to be used after it
  }

  // Puts a frame that is no copy in its bucket, in place of the oldest way (the first of equals). Where that one is
  // still inside its horizon, the table grows first, up to kMaxBuckets; only there is a frame pushed out inside it.
  void remember(const PacketRecord& p, uint32_t flow) {
    for (;;) {
      const size_t b = bucketOf(p.dup_key);
      Bucket& bucket = table[b];
      // Which one is oldest is a coin toss per frame, so the choice is made with masks: written as conditionals,
      // GCC 12 compiled two of the three to branches on it (a third of this aggregator's samples at the trace's
      // rate, `perf annotate`; bench/README.md).
      const int64_t* t = bucket.ts_ns;
      const auto pick = [](bool c, uint64_t x, uint64_t y) {  // c ? x : y
        const uint64_t m = -static_cast<uint64_t>(c);
        return (x & m) | (y & ~m);
      };
      const bool c01 = t[1] < t[0];
      const bool c23 = t[3] < t[2];
      const auto m01 = static_cast<int64_t>(pick(c01, t[1], t[0]));
      const auto m23 = static_cast<int64_t>(pick(c23, t[3], t[2]));
      const bool c = m23 < m01;
      const size_t victim = pick(c, 2 + static_cast<size_t>(c23), static_cast<size_t>(c01));
      const auto oldest = static_cast<int64_t>(pick(c, m23, m01));
      if (oldest != INT64_MIN && p.ts_ns - oldest <= cfg.duplicate_horizon_ns) [[unlikely]] {
        if (table.size() < kMaxBuckets) {
          grow();
          continue;
        }
        ++r.displaced;
      }
      bucket.ts_ns[victim] = p.ts_ns;
      bucket.dup_key[victim] = p.dup_key;
      bucket.flow[victim] = flow;
      facts[b * kWays + victim] = SeqAck{p.seq, p.ack};
      return;
    }
  }

  // Each scale's windows over the batch, a scale at a time; a window closes only when an arrival passes its end.
  void load(std::span<const PacketRecord> records) {
    for (LoadScale& l : scales) {
      for (const PacketRecord& p : records) {
        if (p.ts_ns >= l.to || p.ts_ns < l.from) [[unlikely]] {
          advance(l, p.ts_ns);
        }
        l.bytes += p.wire_len + kLineOverheadBytes;
      }
    }
  }

  std::shared_ptr<MirrorReport> report() const {
    auto out = std::make_shared<MirrorReport>(r);
    for (const LoadScale& l : scales) out->load.push_back(l.out);
    return out;
  }
};

MirrorAggregator::MirrorAggregator(const MirrorConfig& c, const EngineConfig& engine)
    : impl_(std::make_unique<Impl>(c, engine)) {}
MirrorAggregator::~MirrorAggregator() = default;

void MirrorAggregator::add(std::span<const PacketRecord> records) {
  findFlowRuns(records, &impl_->run_starts);
  addRuns(records, impl_->run_starts);
}

void MirrorAggregator::addRuns(std::span<const PacketRecord> records, std::span<const uint32_t> starts) {
  Impl& m = *impl_;
  // The table (up to 384 KB) is looked up at random: each record's bucket is fetched a few records ahead. (Where the
  // table grows inside the batch, a few of these fetch the old one's lines: harmless.)
  constexpr size_t kAhead = 8;
  const size_t n = records.size();
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    const uint32_t flow = flowFingerprint(records[starts[k]].key);
    for (size_t i = starts[k]; i < starts[k + 1]; ++i) {
      if (i + kAhead < n) {
        const size_t b = m.bucketOf(records[i + kAhead].dup_key);
        __builtin_prefetch(&m.table[b]);
        __builtin_prefetch(&m.facts[b * kWays], 1);  // written for every new frame
      }
      m.duplicate(records[i], flow);
    }
  }
  m.load(records);
}

void MirrorAggregator::closeInterval(const IntervalContext& c, IntervalReport* out) {
  // Every window that ends by the interval's end is complete (later records are later than it).
  for (LoadScale& l : impl_->scales) {
    if (l.window != INT64_MIN && (l.window + 1) * l.w <= c.end_ns) impl_->advance(l, c.end_ns);
  }
  out->mirror = impl_->report();
}

void MirrorAggregator::finish() {
  // The last window, partial or not, is the input's last: close it.
  for (LoadScale& l : impl_->scales) {
    if (l.window != INT64_MIN) {
      impl_->closeWindow(l);
      l.window = INT64_MIN;
      l.from = l.to = 0;  // any later time takes advance()
    }
  }
}

void MirrorAggregator::result(EngineResult* out) const { out->mirror = impl_->report(); }

size_t MirrorAggregator::tableBuckets() const { return impl_->table.size(); }

}  // namespace burstscope
