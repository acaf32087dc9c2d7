// The packet-path half of training awareness: one flow lookup per packet and a running 100 µs bin per flow.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "burstscope/training.h"

namespace burstscope {
namespace {

int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The times of the bin of `ts` (floorDiv(ts, bin_ns)) as [*from, *to), cut to int64_t's range at its ends (every
// time in the cut span still lies in that bin).
void binSpan(int64_t ts, int64_t bin_ns, int64_t* from, int64_t* to) {
  int64_t rem = ts % bin_ns;
  if (rem < 0) rem += bin_ns;
  if (__builtin_sub_overflow(ts, rem, from)) *from = std::numeric_limits<int64_t>::min();
  if (__builtin_add_overflow(ts, bin_ns - rem, to)) *to = std::numeric_limits<int64_t>::max();
}

// One bin holds at most 100 µs of one flow; past 4 GB (a clock stuck on one instant) it saturates.
uint32_t binBytes(uint64_t b) { return static_cast<uint32_t>(std::min<uint64_t>(b, UINT32_MAX)); }

class TrainingAggregator final : public Aggregator {
 public:
  TrainingAggregator(const TrainingConfig& c, bool intervals) : cfg_(c), intervals_(intervals) {
    index_.reserve(std::min<size_t>(cfg_.max_flows, 1024));
  }

  void add(std::span<const PacketRecord> records) override {
    findFlowRuns(records, &run_starts_);
    addRuns(records, run_starts_);
  }
  // A flow is looked up once per run of its packets (findFlowRuns).
  void addRuns(std::span<const PacketRecord> records, std::span<const uint32_t> starts) override {
    addRunsHinted(records, starts, {});
  }
  // With the engine's flow table, a run's flow comes from its entry's hint (the flow's index while the epoch is
  // current): with many jobs interleaved, most runs would miss the recent flows and probe index_ again.
  bool wantsFlowHints() const override { return true; }
  void addRunsHinted(std::span<const PacketRecord> records, std::span<const uint32_t> starts,
                     std::span<FlowHint* const> hints) override {
    for (size_t k = 0; k + 1 < starts.size(); ++k) {
      const std::span<const PacketRecord> run = records.subspan(starts[k], starts[k + 1] - starts[k]);
      if (run.front().key.family == 0) continue;
      Flow* f = find(run.front().key, hints.empty() ? nullptr : hints[k]);
      if (f == nullptr) {
        untracked_packets_ += run.size();
        for (const PacketRecord& r : run) untracked_bytes_ += r.wire_len;
        continue;
      }
      // The flow's current bin in registers; a division only where a packet leaves its time span.
      int64_t from = f->cur_from, to = f->cur_to;
      uint64_t cur_bytes = f->cur_bytes, cur_payload = f->cur_payload, bytes = 0;
      for (const PacketRecord& r : run) {
        if (r.ts_ns < from || r.ts_ns >= to) [[unlikely]] {
          const int64_t bin = floorDiv(r.ts_ns, cfg_.bin_ns);
          if (bin != f->cur_bin) {
            if (cur_bytes > 0) f->push(cur_bytes, cur_payload);
            f->cur_bin = bin;
            cur_bytes = 0;
            cur_payload = 0;
          }
          binSpan(r.ts_ns, cfg_.bin_ns, &from, &to);
        }
        cur_bytes += r.wire_len;
        cur_payload += payloadOf(r, f);
        bytes += r.wire_len;
      }
      f->cur_from = from;
      f->cur_to = to;
      f->cur_bytes = cur_bytes;
      f->cur_payload = cur_payload;
      f->bytes += bytes;
      f->packets += run.size();
      f->last_ns = run.back().ts_ns;
      first_ns_ = std::min(first_ns_, run.front().ts_ns);
      last_ns_ = std::max(last_ns_, run.back().ts_ns);
    }
  }

  void closeInterval(const IntervalContext& c, IntervalReport* out) override {
    out->training = take(c.start_ns, c.end_ns);
    // Flows quiet for a whole window give their slot back (the analyzer keeps their history).
    if (index_.size() * 4 >= cfg_.max_flows * 3) evictIdle(c.end_ns - cfg_.window_ns);
  }

  void finish() override {
    // With report intervals the engine closes the last (partial) interval after this; without, the whole
    // file is one delta.
    if (!intervals_ && first_ns_ <= last_ns_) {
      const int64_t start = floorDiv(first_ns_, cfg_.bin_ns) * cfg_.bin_ns;
      const int64_t end = (floorDiv(last_ns_, cfg_.bin_ns) + 1) * cfg_.bin_ns;
      pending_ = take(start, end);
    }
  }

  void result(EngineResult* out) const override { out->training = pending_; }
  uint64_t runsByHint() const { return by_hint_; }
  uint64_t refusedByHint() const { return refused_by_hint_; }

 private:
  struct Flow {
    FlowKey key;
    uint64_t packets = 0, bytes = 0;  // since the last hand-over
    int64_t cur_bin = std::numeric_limits<int64_t>::min();
    int64_t cur_from = 0, cur_to = 0;  // the times [from, to) lie in cur_bin (empty at first)
    uint64_t cur_bytes = 0;
    uint64_t cur_payload = 0;
    int64_t last_ns = 0;
    uint32_t next_seq = 0;  // TCP: the end of the sequence space seen so far
    bool seq_known = false;
    bool listed = false;  // in active_
    std::vector<std::pair<int64_t, uint32_t>> bins;
    std::vector<uint32_t> payload;  // beside bins
    void push(uint64_t bin_bytes, uint64_t bin_payload) {
      bins.emplace_back(cur_bin, binBytes(bin_bytes));
      payload.push_back(binBytes(bin_payload));
    }
  };

  // A packet's transport payload (SPEC "Model size": no headers, no retransmissions). TCP: the sequence space
  // it newly covers beyond the highest end seen on its flow, so a retransmitted segment adds nothing and a late
  // segment filling a hole was counted by the one that jumped past it; a jump of more than 1 GiB (a reused
  // 5-tuple, a flow first seen mid-way) starts the count afresh. RoCEv2: the IB payload. Else none.
  static uint32_t payloadOf(const PacketRecord& r, Flow* f) {
    if (r.l4Kind() == L4Kind::kRoce) return r.len;
    if (r.l4Kind() != L4Kind::kTcp || r.len == 0) return 0;
    const uint32_t end = r.seq + r.len;
    if (!f->seq_known) {
      f->seq_known = true;
      f->next_seq = end;
      return r.len;
    }
    const int32_t ahead = static_cast<int32_t>(end - f->next_seq);  // serial arithmetic
    if (ahead <= 0) return 0;
    f->next_seq = end;
    return ahead <= (int32_t{1} << 30) ? static_cast<uint32_t>(ahead) : r.len;
  }

  // The flow of `key`, made if new (nullptr when max_flows are kept), and listed for the next hand-over. A hinted
  // flow (`hint`, the engine's flow table's for the key) costs nothing more; a recent one (direct-mapped by
  // FlowKey::recentSlot) a key comparison instead of absl's hash and probe. A found flow is put in the hint, and so
  // is a refusal: the flows kept stay max_flows until idle ones are freed, which changes the epoch, so a refusal
  // of this epoch holds. (Where more flows are live than max_flows, every run of the rest probed the index again:
  // bench/workers_bench's BM_Untracked.)
  Flow* find(const FlowKey& key, FlowHint* hint) {
    uint32_t i;
    if (hint != nullptr && hint->epoch == epoch_) {
      i = static_cast<uint32_t>(hint->value);
      if (i == kNone) {
        ++refused_by_hint_;
        return nullptr;
      }
      ++by_hint_;
    } else {
      i = lookUp(key);
      if (hint != nullptr) *hint = FlowHint{i, epoch_};
      if (i == kNone) return nullptr;
    }
    Flow* f = &flows_[i];
    if (!f->listed) {
      f->listed = true;
      active_.push_back(i);
    }
    return f;
  }
  // The index of the flow of `key`, made if new (kNone when max_flows are kept).
  uint32_t lookUp(const FlowKey& key) {
    Recent& recent = recent_[key.recentSlot(kRecentBits)];
    uint32_t i = recent.index;
    if (i == kNone || !(flows_[i].key == key)) {
      auto it = index_.find(key);
      if (it != index_.end()) {
        i = it->second;
      } else {
        if (index_.size() >= cfg_.max_flows) return kNone;
        if (!free_.empty()) {
          i = free_.back();
          free_.pop_back();
          flows_[i] = Flow{};
        } else {
          i = static_cast<uint32_t>(flows_.size());
          flows_.emplace_back();
        }
        flows_[i].key = key;
        index_.emplace(key, i);
      }
      recent.index = i;
    }
    return i;
  }

  std::shared_ptr<const TrainingDelta> take(int64_t start, int64_t end) {
    auto d = std::make_shared<TrainingDelta>();
    d->start_ns = start;
    d->end_ns = end;
    d->bin_ns = cfg_.bin_ns;
    d->untracked_packets = std::exchange(untracked_packets_, 0);
    d->untracked_bytes = std::exchange(untracked_bytes_, 0);
    d->flows.reserve(active_.size());
    for (uint32_t i : active_) {
      Flow& f = flows_[i];
      if (f.cur_bytes > 0) {
        f.push(f.cur_bytes, f.cur_payload);
        f.cur_bytes = 0;
        f.cur_payload = 0;
      }
      TrainingFlowBins fb;
      fb.key = f.key;
      fb.packets = std::exchange(f.packets, 0);
      fb.bytes = std::exchange(f.bytes, 0);
      fb.bins = std::move(f.bins);
      fb.payload = std::move(f.payload);
      f.bins = {};
      f.payload = {};
      f.listed = false;
      d->flows.push_back(std::move(fb));
    }
    active_.clear();
    return d;
  }

  void evictIdle(int64_t before_ns) {
    const size_t freed = free_.size();
    for (auto it = index_.begin(); it != index_.end();) {
      const Flow& f = flows_[it->second];
      if (!f.listed && f.last_ns < before_ns) {
        free_.push_back(it->second);
        index_.erase(it++);
      } else {
        ++it;
      }
    }
    if (free_.size() != freed) {
      std::fill(recent_.begin(), recent_.end(), Recent{});  // freed slots are reused by other keys
      ++epoch_;                                             // and so are the hints' indices
    }
  }

  const TrainingConfig cfg_;
  const bool intervals_;
  absl::flat_hash_map<FlowKey, uint32_t> index_;
  std::vector<Flow> flows_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> active_;  // flows with traffic since the last hand-over
  // Recent flows by FlowKey::recentSlot: indices into flows_, which stay valid when it grows; a hit is checked
  // against the slot's own key, and the cache is emptied when slots are freed.
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Recent {
    uint32_t index = kNone;
  };
  static constexpr int kRecentBits = 8;
  std::vector<Recent> recent_ = std::vector<Recent>(size_t{1} << kRecentBits);
  std::vector<uint32_t> run_starts_;  // scratch for add() without the engine's runs
  // The epoch of the hints written (FlowHint): it changes when flows are freed, so that a hint never names a slot
  // that another flow has taken since, nor keeps a refusal made before there was room.
  uint64_t epoch_ = 1;
  uint64_t by_hint_ = 0;          // runs whose flow came from its hint, so far (trainingRunsByHint)
  uint64_t refused_by_hint_ = 0;  // runs of flows beyond max_flows known so from their hint (trainingRefusedByHint)

  uint64_t untracked_packets_ = 0, untracked_bytes_ = 0;
  int64_t first_ns_ = std::numeric_limits<int64_t>::max();
  int64_t last_ns_ = std::numeric_limits<int64_t>::min();
  std::shared_ptr<const TrainingDelta> pending_;
};

}  // namespace

uint64_t trainingRunsByHint(const Aggregator& a) {
  const auto* t = dynamic_cast<const TrainingAggregator*>(&a);
  return t != nullptr ? t->runsByHint() : 0;
}

uint64_t trainingRefusedByHint(const Aggregator& a) {
  const auto* t = dynamic_cast<const TrainingAggregator*>(&a);
  return t != nullptr ? t->refusedByHint() : 0;
}

std::unique_ptr<Aggregator> makeTrainingAggregator(const TrainingConfig& c, bool report_intervals) {
  return std::make_unique<TrainingAggregator>(c, report_intervals);
}

}  // namespace burstscope
