#include "src/live/live_view.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "burstscope/training.h"

namespace burstscope {
namespace {

using json = nlohmann::json;

// A single-producer ring that never blocks its producer: a slot is overwritten once the ring has gone round,
// and the consumer (one thread) notices by the slot's stamp (a sequence lock) and counts it. Fields are
// atomics so that a torn read is detected, never undefined. The field stores are release and the field loads
// acquire (no stand-alone fences, which ThreadSanitizer does not model): a reader that sees a new field value
// also sees the stamp's reset before it, so its second stamp load differs from the first. On x86 these are
// plain moves.
template <size_t kFields>
class OverwriteRing {
 public:
  explicit OverwriteRing(size_t capacity_pow2) : slots_(capacity_pow2), mask_(capacity_pow2 - 1) {}

  // Producer only.
  void push(const std::array<int64_t, kFields>& v) {
    Slot& s = slots_[head_ & mask_];
    s.stamp.store(0, std::memory_order_relaxed);
    for (size_t i = 0; i < kFields; ++i) s.field[i].store(v[i], std::memory_order_release);
    s.stamp.store(head_ + 1, std::memory_order_release);
    ++head_;
    published_.store(head_, std::memory_order_release);
  }

  // Consumer only: appends what arrived since the last drain; returns the entries lost to overwriting.
  uint64_t drain(std::vector<std::array<int64_t, kFields>>* out) {
    const uint64_t head = published_.load(std::memory_order_acquire);
    uint64_t lost = 0;
    if (head - tail_ > slots_.size()) {
      lost += head - slots_.size() - tail_;
      tail_ = head - slots_.size();
    }
    for (; tail_ < head; ++tail_) {
      const Slot& s = slots_[tail_ & mask_];
      std::array<int64_t, kFields> v{};
      const uint64_t before = s.stamp.load(std::memory_order_acquire);
      for (size_t i = 0; i < kFields; ++i) v[i] = s.field[i].load(std::memory_order_acquire);
      const uint64_t after = s.stamp.load(std::memory_order_relaxed);
      if (before != tail_ + 1 || after != before) {
        ++lost;
        continue;
      }
      out->push_back(v);
    }
    return lost;
  }

 private:
  struct Slot {
    std::atomic<uint64_t> stamp{0};
    std::array<std::atomic<int64_t>, kFields> field{};
  };
  std::vector<Slot> slots_;
  size_t mask_;
  uint64_t head_ = 0;  // producer's
  alignas(64) std::atomic<uint64_t> published_{0};
  alignas(64) uint64_t tail_ = 0;  // consumer's
};

// 2^16 bins: 6.5 s of traffic in every 100 µs bin, far more than the publisher's tick.
constexpr size_t kBinRing = size_t{1} << 16;
constexpr size_t kBurstRing = size_t{1} << 10;

}  // namespace

struct LiveView::Port : EngineObserver {
  LivePortInfo info;
  OverwriteRing<3> bins{kBinRing};      // start_ns, bytes, packets
  OverwriteRing<4> bursts{kBurstRing};  // start_ns, end_ns, bytes, peak bit/s
  // Publisher's (under mu_): the window's history, the newest event's part, the latest figures.
  std::deque<std::array<int64_t, 3>> history_bins;
  std::deque<std::array<int64_t, 4>> history_bursts;
  std::vector<std::array<int64_t, 3>> new_bins;
  std::vector<std::array<int64_t, 4>> new_bursts;
  json figures = json::object();
  // Each training job's own 100 µs bins (bin index, bytes), from the analysis at each interval's close: the
  // window's history, those not yet in an event, and those of the newest event. Jobs the analysis no longer
  // reports are dropped.
  std::map<std::string, std::deque<std::array<int64_t, 2>>> job_history;
  std::map<std::string, std::vector<std::array<int64_t, 2>>> job_pending, job_new;

  void onBaseBin(int64_t start_ns, uint64_t bytes, uint64_t packets) override {
    bins.push({start_ns, static_cast<int64_t>(bytes), static_cast<int64_t>(packets)});
  }
  void onMicroburst(const Microburst& m) override {
    bursts.push({m.start_ns, m.end_ns, static_cast<int64_t>(m.bytes), static_cast<int64_t>(m.peak_bps)});
  }
};

LiveView::LiveView(const LiveViewConfig& config, std::vector<LivePortInfo> ports, std::string page_html)
    : config_(config), page_(std::move(page_html)) {
  for (LivePortInfo& info : ports) {
    auto p = std::make_unique<Port>();
    p->info = std::move(info);
    ports_.push_back(std::move(p));
  }
}

LiveView::~LiveView() {
  {
    const std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (publisher_.joinable()) publisher_.join();
}

EngineObserver* LiveView::tap(size_t port) { return ports_.at(port).get(); }

void LiveView::onInterval(size_t port, const PortSnapshot& s) {
  const IntervalStream& st = s.interval.port;
  Port& p = *ports_.at(port);
  json scales = json::array();
  for (size_t i = 0; i < p.info.scales_ns.size() && i < st.envelope_bytes.size(); ++i) {
    json sc = {{"tau_ns", p.info.scales_ns[i]}, {"envelope_bytes", st.envelope_bytes[i]}};
    sc["ptm"] = i < st.ptm.size() && st.ptm[i] ? json(*st.ptm[i]) : json(nullptr);
    scales.push_back(std::move(sc));
  }
  json f = {{"interval_end_ns", std::to_string(s.interval.end_ns)},
            {"bytes", st.bytes},
            {"packets", st.packets},
            {"mean_bps", st.mean_bps},
            {"baseline_bps", st.baseline_bps},
            {"microbursts", st.microbursts},
            {"microbursts_total", s.interval.microbursts_total},
            {"scales", std::move(scales)}};
  // SPEC "Overload": whether this interval's figures are bounds, and the bounds (live queues only).
  if (s.bounds) {
    const IntervalBounds& b = *s.bounds;
    json bj = {{"degraded", b.degraded()}, {"lost_packets", b.lost}, {"complete", b.complete}};
    if (b.degraded()) {
      json e = json::array();
      for (size_t i = 0; i < p.info.scales_ns.size() && i < b.envelope_bytes.size(); ++i) {
        const bool known = b.complete || !b.envelope_bounded[i];
        e.push_back(
            {{"tau_ns", p.info.scales_ns[i]},
             {"bounded", static_cast<bool>(b.envelope_bounded[i])},
             {"envelope_bytes", {b.envelope_bytes[i].first, known ? json(b.envelope_bytes[i].second) : json()}}});
      }
      bj["scales"] = std::move(e);
      if (b.microbursts_bounded) {
        bj["microbursts"] = {b.microbursts.first, b.complete ? json(b.microbursts.second) : json()};
      }
    }
    f["bounds"] = std::move(bj);
  }
  // The jobs the training analysis read (once it runs and has found any), each with its steps inside the view's
  // window as [start s, end s, bytes] (the page's step markers) and its own bins of the intervals analysed (kept
  // for the window, and sent once). An interval without an analysis (several handed over at once, or analyses
  // spaced out by training.analysis-budget) keeps the jobs last shown.
  const int64_t from_ns = s.interval.end_ns - config_.window_ns;
  const std::lock_guard<std::mutex> lock(mu_);
  if (!s.training) {
    if (p.figures.contains("jobs")) f["jobs"] = p.figures["jobs"];
  } else {
    json jobs = json::array();
    std::map<std::string, std::deque<std::array<int64_t, 2>>> kept;
    for (const JobReport& jr : s.training->jobs) {
      json steps = json::array();
      for (const StepSpan& st : jr.steps) {
        if (st.end_ns <= from_ns) continue;  // nothing of it inside the window
        steps.push_back({static_cast<double>(st.start_ns) * 1e-9, static_cast<double>(st.end_ns) * 1e-9, st.bytes});
      }
      jobs.push_back({{"name", jr.name},
                      {"hosts", jr.hosts.size()},
                      {"period_s", jr.period.period_s ? json(*jr.period.period_s) : json(nullptr)},
                      {"period_why", jr.period.why},
                      {"step_bytes", jr.step_bytes_mean},
                      {"topology", jr.topology.kind},
                      {"pipelines", jr.topology.pipelines},
                      {"groups", jr.topology.groups},
                      {"phases", jr.phases.count},
                      {"idle_share", jr.phases.idle_share},
                      {"steps", std::move(steps)}});
      std::deque<std::array<int64_t, 2>>& h = kept[jr.name];
      if (auto it = p.job_history.find(jr.name); it != p.job_history.end()) h = std::move(it->second);
      std::vector<std::array<int64_t, 2>>& pending = p.job_pending[jr.name];
      for (const auto& [index, bytes] : jr.interval_bins) {
        h.push_back({index, static_cast<int64_t>(bytes)});
        pending.push_back({index, static_cast<int64_t>(bytes)});
      }
      while (!h.empty() && h.front()[0] < from_ns / p.info.base_bin_ns) h.pop_front();
    }
    f["jobs"] = std::move(jobs);
    p.job_history = std::move(kept);
  }
  p.figures = std::move(f);
}

void LiveView::start() {
  publisher_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!stop_cv_.wait_for(lock, std::chrono::nanoseconds(config_.update_ns), [this] { return stop_; })) {
      lock.unlock();
      publishOnce();
      lock.lock();
    }
  });
}

namespace {
// Bins as [bin index, bytes, packets]: an index (start / base bin) stays exact in a JavaScript number, a
// nanosecond time does not. Microbursts as [start s, end s, bytes, peak bit/s], times relative to nothing
// but in seconds with 0.1 µs kept.
template <typename Container>
json binsJson(const Container& bins, int64_t base_bin_ns) {
  json a = json::array();
  for (const auto& b : bins) a.push_back({b[0] / base_bin_ns, b[1], b[2]});
  return a;
}
template <typename Container>
json burstsJson(const Container& bursts) {
  json a = json::array();
  for (const auto& m : bursts) {
    a.push_back({static_cast<double>(m[0]) * 1e-9, static_cast<double>(m[1]) * 1e-9, m[2], m[3]});
  }
  return a;
}
}  // namespace

std::string LiveView::portJson(const Port& p, bool history) const {
  json j = {{"port", p.info.name},
            {"bins", history ? binsJson(p.history_bins, p.info.base_bin_ns) : binsJson(p.new_bins, p.info.base_bin_ns)},
            {"bursts", history ? burstsJson(p.history_bursts) : burstsJson(p.new_bursts)},
            {"figures", p.figures}};
  json jobs = json::object();
  auto add = [&](const std::string& name, const auto& bins) {
    json a = json::array();
    for (const auto& b : bins) a.push_back({b[0], b[1]});
    jobs[name] = std::move(a);
  };
  if (history) {
    for (const auto& [name, bins] : p.job_history) add(name, bins);
  } else {
    for (const auto& [name, bins] : p.job_new) add(name, bins);
  }
  j["job_bins"] = std::move(jobs);
  if (history) {
    j["link_bps"] = p.info.link_bps;
    j["base_bin_ns"] = p.info.base_bin_ns;
    j["microburst_tau_ns"] = p.info.microburst_tau_ns;
    j["microburst_threshold"] = p.info.microburst_threshold;
  }
  return j.dump();
}

void LiveView::publishOnce() {
  std::vector<std::array<int64_t, 3>> bins;
  std::vector<std::array<int64_t, 4>> bursts;
  const std::lock_guard<std::mutex> lock(mu_);
  const uint64_t seq = latest_.load(std::memory_order_relaxed) + 1;
  std::string data = "{\"seq\":" + std::to_string(seq) + ",\"ports\":[";
  for (size_t i = 0; i < ports_.size(); ++i) {
    Port& p = *ports_[i];
    bins.clear();
    bursts.clear();
    overwritten_ += p.bins.drain(&bins);
    p.bursts.drain(&bursts);
    bins_ += bins.size();
    p.new_bins = bins;
    p.new_bursts = bursts;
    p.job_new = std::move(p.job_pending);
    p.job_pending.clear();
    p.history_bins.insert(p.history_bins.end(), bins.begin(), bins.end());
    p.history_bursts.insert(p.history_bursts.end(), bursts.begin(), bursts.end());
    if (!p.history_bins.empty()) {
      const int64_t from = p.history_bins.back()[0] - config_.window_ns;
      while (!p.history_bins.empty() && p.history_bins.front()[0] < from) p.history_bins.pop_front();
      while (!p.history_bursts.empty() && p.history_bursts.front()[1] < from) p.history_bursts.pop_front();
    }
    if (i > 0) data += ",";
    data += portJson(p, false);
  }
  data += "]}";
  events_.emplace_back(seq, "id: " + std::to_string(seq) + "\nevent: bins\ndata: " + data + "\n\n");
  while (events_.size() > config_.kept_events) events_.pop_front();
  latest_.store(seq, std::memory_order_release);
}

std::string LiveView::eventsAfter(uint64_t* next) const {
  const std::lock_guard<std::mutex> lock(mu_);
  const uint64_t latest = latest_.load(std::memory_order_relaxed);
  if (*next > latest) return "";
  if (*next == 0 || events_.empty() || *next < events_.front().first) {
    // A snapshot: the window of every port as of the latest event.
    snapshots_.fetch_add(1, std::memory_order_relaxed);
    std::string data = "{\"seq\":" + std::to_string(latest) + ",\"window_ns\":" + std::to_string(config_.window_ns) +
                       ",\"update_ns\":" + std::to_string(config_.update_ns) + ",\"ports\":[";
    for (size_t i = 0; i < ports_.size(); ++i) {
      if (i > 0) data += ",";
      data += portJson(*ports_[i], true);
    }
    data += "]}";
    *next = latest + 1;
    return "retry: 1000\nid: " + std::to_string(latest) + "\nevent: snapshot\ndata: " + data + "\n\n";
  }
  std::string out;
  for (const auto& [seq, text] : events_) {
    if (seq >= *next) out += text;
  }
  *next = latest + 1;
  return out;
}

LiveViewStats LiveView::stats() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return LiveViewStats{latest_.load(std::memory_order_relaxed), bins_, overwritten_,
                       snapshots_.load(std::memory_order_relaxed), viewers_.load(std::memory_order_relaxed)};
}

}  // namespace burstscope
