#include "src/pipeline/pipeline.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "burstscope/reorder.h"
#include "burstscope/status.h"
#include "src/pipeline/analysis_pace.h"
#include "src/pipeline/port_bins.h"
#include "src/pipeline/step_evidence.h"

namespace burstscope {
namespace {

constexpr size_t kBatch = 256;
// Pair bins (and congesting bursts) the control thread keeps per port for the job steps' evidence: an entry is
// about 160 bytes with its host names, so at most ~85 MB.
constexpr size_t kStepEvidenceEntries = size_t{1} << 19;

// While a live capture runs, the control thread (this file's runCapture: the mailbox, each interval's training
// analysis, the summary lines) runs at a nice value kControlNice above its own, so that it yields to the port
// workers wherever they share a CPU. They do by default under DPDK: the EAL pins the main thread to the main lcore's
// CPU and every thread it starts inherits that set. A port's training analysis takes tens of milliseconds of CPU at
// an interval's end, and a worker that waited that long for its CPU at full rate overran a ring that holds a few
// milliseconds of traffic: on the DPDK trace loop (14 M packets/s on two cores) 2-3% of the frames were dropped
// while the worker was idle a third of the time, and 0-0.14% once the control thread yielded (bench/README.md).
// Threads keep their own nice value on Linux, and each inherits its creator's when created: the workers (and their
// parts' threads, which they start) were started before the lowering and keep theirs. Lowering needs no privilege;
// raising it back needs CAP_SYS_NICE (or RLIMIT_NICE), which `run` gives up after set-up, so there the control
// thread stays lowered for the rest of the process (the end of the run: its last analysis and output).
constexpr int kControlNice = 10;

class LowerControlThreadPriority {
 public:
  LowerControlThreadPriority() {
    const auto self = static_cast<id_t>(gettid());
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, self);
    if (errno != 0) return;
    before_ = now;
    lowered_ = setpriority(PRIO_PROCESS, self, std::min(now + kControlNice, 19)) == 0;
  }
  LowerControlThreadPriority(const LowerControlThreadPriority&) = delete;
  LowerControlThreadPriority& operator=(const LowerControlThreadPriority&) = delete;
  ~LowerControlThreadPriority() { restore(); }
  // Best effort: see kControlNice.
  void restore() {
    if (lowered_) setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), before_);
    lowered_ = false;
  }

 private:
  int before_ = 0;
  bool lowered_ = false;
};

// The calling thread's CPU time (AnalysisPace).
int64_t threadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

uint64_t sumReceived(const CapturePort& p) {
  uint64_t n = 0;
  for (const QueueCounters* c : p.counters) n += c->received.load(std::memory_order_acquire);
  return n;
}

uint64_t sumRingDrops(const CapturePort& p) {
  uint64_t n = 0;
  for (const QueueCounters* c : p.counters) n += c->ring_drops.load(std::memory_order_acquire);
  return n;
}

// A ledger of what the worker has measured so far: drops are read before received (the producer counts a
// frame as received before it can be dropped or taken), so analysed + drops never exceeds received.
Ledger ledgerNow(const CapturePort& p, uint64_t analysed) {
  const uint64_t drops = sumRingDrops(p);
  return Ledger{sumReceived(p), analysed, drops};
}

// Interval reports on their way from the workers to the control thread. A worker holds the lock only to
// append; the control thread takes the whole list at once, and can wait for one.
class Mailbox {
 public:
  void push(size_t port, PortSnapshot s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.emplace_back(port, std::move(s));
    }
    cv_.notify_one();
  }
  std::deque<std::pair<size_t, PortSnapshot>> take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (items_.empty()) return {};
    return std::exchange(items_, {});
  }
  // Until an item is in or `limit` passes.
  void wait(std::chrono::nanoseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, limit, [this] { return !items_.empty(); });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<size_t, PortSnapshot>> items_;
};

// The parts of an interval report (or of the final result) that another engine of the port filled
// (docs/workers.md): the pair and flow tables when they ran there, and the added aggregators' reports.
template <typename Report>  // IntervalReport or EngineResult
void takeParts(Report* into, Report&& part, bool tables) {
  if (tables) {
    into->pairs = std::move(part.pairs);
    into->flows = std::move(part.flows);
  }
  if (part.training) into->training = std::move(part.training);
  if (part.evidence) into->evidence = std::move(part.evidence);
  if (part.mirror) into->mirror = std::move(part.mirror);
}

// A thread running one part of a port's aggregates in an engine of its own (docs/workers.md). The port's worker
// hands it every engine call it makes, in order (record runs, advances, finish), with the microbursts its port
// stream found at each step, so that this engine takes the same steps and its aggregators see what they would
// have seen in one engine.
class PartWorker {
 public:
  struct Op {
    size_t count = 0;             // add the next `count` records, then
    int64_t advance = INT64_MIN;  // advance to this (INT64_MIN: no advance)
  };
  // The engine calls of one hand-over, shared by every part (one copy of the records whatever their number).
  struct Batch {
    std::vector<PacketRecord> records;
    std::vector<Op> ops;
    bool finish = false;
  };
  struct Message {
    std::shared_ptr<const Batch> batch;
    std::vector<std::pair<uint64_t, Microburst>> bursts;  // (step, microburst): for the evidence's part
  };

  explicit PartWorker(const EngineConfig& ec) : engine_(ec) {}
  Engine& engine() { return engine_; }

  // Blocks while kDepth messages wait: a part that falls behind slows the port's worker, whose rings then
  // drop and count, as they would if one worker did all the work.
  void send(Message m) {
    std::unique_lock<std::mutex> lock(mu_);
    room_.wait(lock, [this] { return queue_.size() < kDepth; });
    queue_.push_back(std::move(m));
    ready_.notify_one();
  }

  // The thread body: until a message says finish.
  void run() {
    for (;;) {
      Message m;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [this] { return !queue_.empty(); });
        m = std::move(queue_.front());
        queue_.pop_front();
        room_.notify_one();
      }
      for (const auto& [step, burst] : m.bursts) engine_.forwardMicroburst(step, burst);
      const Batch& b = *m.batch;
      size_t at = 0;
      for (const Op& op : b.ops) {
        if (op.count > 0) engine_.add(std::span<const PacketRecord>(b.records).subspan(at, op.count));
        at += op.count;
        if (op.advance != INT64_MIN) engine_.advance(op.advance);
      }
      if (b.finish) {
        engine_.finish();
        return;
      }
    }
  }

 private:
  static constexpr size_t kDepth = 64;
  Engine engine_;
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<Message> queue_;
};

// One port's worker: merges its queues, runs the engine (or its first part, with the others on part workers),
// and hands each closed interval to the mailbox.
class PortWorker {
 public:
  PortWorker(size_t index, const CapturePort& port, const EngineConfig& ec, const TrainingConfig& tc,
             const EvidenceConfig& evc, const MirrorConfig& mc, int64_t horizon, size_t workers, Mailbox& mailbox,
             std::function<void(size_t, std::span<const PacketRecord>)> sink)
      : index_(index),
        port_(port),
        engine_config_(ec),
        engine_(partConfig(ec, workers, 0)),
        reorder_(horizon),
        horizon_ns_(horizon),
        watermark_(port.rings.size(), INT64_MIN),
        sink_(std::move(sink)),
        mailbox_(mailbox) {
    for (size_t w = 1; w < workers; ++w) parts_.push_back(std::make_unique<PartWorker>(partConfig(ec, workers, w)));
    pending_parts_.resize(parts_.size());
    // The complete 100 µs series of a live port's queues (SPEC "Overload"), for its report intervals.
    const bool binned = port.bins.size() == port.rings.size() &&
                        std::any_of(port.bins.begin(), port.bins.end(), [](const auto* b) { return b != nullptr; });
    if (binned && engine_config_.report_interval_ns > 0) {
      bins_ = std::make_unique<internal::PortBins>(engine_config_, port.rings.size(), port.kernel_bins);
    }
    // Which engine runs what (docs/workers.md): evidence beside the tables (it names their heaviest pairs and
    // flows), training on the last part, and the mirror checks, which depend on nothing else, where they even
    // the load out (measured per part: bench/workers_bench): with the streams when two workers share the
    // work, beside the training with three.
    Engine& training_engine = parts_.empty() ? engine_ : parts_.back()->engine();
    Engine& evidence_engine = parts_.empty() ? engine_ : parts_.front()->engine();
    Engine& mirror_engine = parts_.size() == 2 ? parts_.back()->engine() : engine_;
    if (tc.enabled) training_engine.addAggregator(makeTrainingAggregator(tc, ec.report_interval_ns > 0));
    if (evc.enabled) {
      auto evidence = std::make_unique<EvidenceAggregator>(evc, ec, ec.report_interval_ns > 0);
      evidence_engine.subscribe(evidence.get());  // it annotates the port stream's microbursts
      evidence_engine.addAggregator(std::move(evidence));
      if (!parts_.empty()) {
        forwarder_.worker = this;
        engine_.subscribe(&forwarder_);  // the port stream is here: its microbursts go to the evidence's part
      }
    }
    if (mc.enabled) mirror_engine.addAggregator(std::make_unique<MirrorAggregator>(mc, ec));
    engine_.setIntervalSink([this](const IntervalReport& r) {
      // What the engine has measured up to this close (the port stream counts every record), not what the
      // batch being added holds: the snapshot's ledger agrees with its intervals.
      measured_ += r.port.packets;
      PortSnapshot s;
      s.interval = r;
      s.intervals = ++intervals_;
      s.ledger = ledgerNow(port_, measured_);
      const Reorderer::Counts order = reorderCounts();
      s.reordered = order.reordered;
      s.clamped = order.clamped;
      if (bins_) {
        s.bounds = bins_->close(r);
        series_packets_ += s.bounds->packets;
        series_bytes_ += s.bounds->bytes;
        series_bytes_unsure_ += s.bounds->bytes_unsure;
        series_kernel_lost_ += s.bounds->kernel_lost;
        if (s.bounds->degraded()) {
          ++degraded_intervals_;
          if (degraded_.size() < PortResult::kMaxDegradedKept) degraded_.emplace_back(r.start_ns, r.end_ns, *s.bounds);
        }
      }
      joinMain(std::move(s));
    });
    for (size_t w = 0; w < parts_.size(); ++w) {
      parts_[w]->engine().setIntervalSink([this, w](const IntervalReport& r) { joinPart(w, r); });
    }
    // The rings ring this worker awake when they publish (the source starts after its workers are made).
    for (SpscRing<PacketRecord>* r : port_.rings) r->setDoorbell(&doorbell_);
  }
  ~PortWorker() {
    for (SpscRing<PacketRecord>* r : port_.rings) r->setDoorbell(nullptr);
  }
  PortWorker(const PortWorker&) = delete;
  PortWorker& operator=(const PortWorker&) = delete;

  // The engine configuration of part `w` of `workers`: the first runs the streams (and, alone, everything), the
  // second the tables.
  static EngineConfig partConfig(const EngineConfig& ec, size_t workers, size_t w) {
    EngineConfig c = ec;
    if (workers == 1) return c;
    c.streams = w == 0;
    c.pairs_and_flows = ec.pairs_and_flows && w == 1;
    return c;
  }

  // The thread body: poll until `draining` was set before a poll that found every ring empty.
  void run(const std::atomic<bool>& draining) {
    std::vector<std::thread> threads;
    for (size_t w = 0; w < parts_.size(); ++w) {
      threads.emplace_back([p = parts_[w].get()] { p->run(); });
      pthread_setname_np(threads.back().native_handle(), absl::StrCat("bs-port-", index_, "-", w + 1).c_str());
    }
    // Idle: 64 empty polls, then asleep until a ring publishes or the drain begins (the doorbell: wake()) or
    // 100 ms pass, so that a quiet port costs little CPU (its producers' ticks wake it) and a producer that
    // hands over every few hundred microseconds (AF_XDP at low rates) wakes the worker once per hand-over. But a
    // producer that publishes every few microseconds would pay a wake-up call per burst (at 20 M records/s that halved
    // the RX lcore's rate): when the last doorbell sleep was cut short within 100 us, the worker first naps 100 us on a
    // timer, as it did before the doorbell, and the producer finds nobody to wake. The rings hold far more than 1 ms of
    // records.
    unsigned empty = 0;
    bool nap_first = false, napped = false;
    for (;;) {
      const bool last = draining.load(std::memory_order_acquire);
      if (poll() > 0) {
        empty = 0;
        napped = false;
        if (batch_.records.size() >= 4 * kBatch || intervals_ != intervals_sent_) sendParts();
        continue;
      }
      sendParts();
      if (last) break;
      if (++empty < 64) continue;
      constexpr std::chrono::microseconds kNap{100};
      if (nap_first && !napped) {
        std::this_thread::sleep_for(kNap);
        napped = true;
        continue;
      }
      const auto asleep = std::chrono::steady_clock::now();
      doorbell_.sleep([this, &draining] { return anyPublished() || draining.load(std::memory_order_seq_cst); },
                      std::chrono::milliseconds(100));
      nap_first = std::chrono::steady_clock::now() - asleep < kNap;
    }
    reorder_.flush([this](const PacketRecord& r) { feed(r); });
    analyse();
    if (bins_ && bins_->newestNs() != INT64_MIN) {
      // The series may reach past the last watermark that came: a ring full at the end drops the last frames and
      // the final tick with them. The intervals reach its bins, so that those frames are in their own intervals
      // (degraded, and the last one partial) rather than in the last analysed one; with no record analysed at all,
      // the first interval opens at the series' first bin. Both advances change nothing when nothing was lost.
      advance(bins_->oldestNs());
      advance(bins_->newestNs());
    }
    engine_.finish();
    batch_.finish = true;
    sendParts();
    for (std::thread& t : threads) t.join();
  }

  Engine& engine() { return engine_; }  // before run(): for PipelineConfig::extend_engine
  // Any thread, after storing run()'s `draining` (sequentially consistent): ends a doorbell sleep.
  void wake() { doorbell_.ring(); }

  PortResult result() const {
    PortResult r;
    r.name = port_.name;
    r.engine_config = engine_config_;
    r.engine = engine_.result();
    for (size_t w = 0; w < parts_.size(); ++w) takeParts<EngineResult>(&r.engine, parts_[w]->engine().result(), w == 0);
    r.ledger = ledgerNow(port_, analysed_);
    const Reorderer::Counts order = reorderCounts();  // a file's exact: its reading thread is done
    r.reordered = order.reordered;
    r.clamped = order.clamped;
    r.max_lateness_ns = order.max_lateness_ns;
    r.clock_steps_back = order.clock_steps_back;
    r.clock_shift_ns = order.clock_shift_ns;
    r.intervals = intervals_;
    for (const QueueCounters* c : port_.counters) {
      r.queue_received.push_back(c->received.load());
      r.queue_ring_drops.push_back(c->ring_drops.load());
      r.bin_channel_drops += c->bin_drops.load();
    }
    r.degraded_intervals = degraded_intervals_;
    r.series_packets = series_packets_;
    r.series_bytes = series_bytes_;
    r.series_bytes_unsure = series_bytes_unsure_;
    r.series_kernel_lost = series_kernel_lost_;
    r.degraded = degraded_;
    if (bins_) r.bins_late = bins_->late();
    return r;
  }

 private:
  // Collects the port stream's microbursts, with the step at which it found each, for the evidence's part.
  struct BurstForwarder final : EngineObserver {
    PortWorker* worker = nullptr;
    void onMicroburst(const Microburst& m) override { worker->bursts_.emplace_back(worker->engine_.steps(), m); }
  };

  // The port's reordering counts: a file's queue's, which puts its records in order itself (QueueProducer::orderInTime,
  // as of its last flush), else this worker's reorderer's.
  Reorderer::Counts reorderCounts() const {
    return port_.ordered_lossless ? port_.counters.front()->order() : reorder_.counts();
  }

  // Whether a ring holds records not yet taken, as the doorbell's sleeper must look (Doorbell).
  bool anyPublished() const {
    return std::any_of(port_.rings.begin(), port_.rings.end(), [](const auto* r) { return r->publishedSeqCst(); });
  }

  // Takes what the rings hold; returns the number of records (ticks included) taken. A file's records (one queue,
  // put in order by its reading thread) are read by the engine where the ring holds them; a live port's queues'
  // are copied from their slots into the reorderer and read from the batch their merge released them into.
  size_t poll() {
    size_t taken = 0;
    for (size_t q = 0; q < port_.rings.size(); ++q) {
      if (port_.ordered_lossless) {
        taken += port_.rings[q]->consumeSpans(kBatch, [this](std::span<const PacketRecord> s) { analyse(s); });
      } else {
        int64_t& watermark = watermark_[q];
        taken += port_.rings[q]->consume(kBatch, [this, &watermark, q](const PacketRecord& r) {
          watermark = std::max(watermark, r.ts_ns);
          if (!(r.flags & kRecordTick)) reorder_.hold(q, r);
        });
      }
      // The queue's bins after its records: every bin its producer closed before them is visible now.
      if (bins_ && port_.bins[q] != nullptr) {
        for (size_t m; (m = port_.bins[q]->dequeue(bin_batch_)) > 0;) {
          for (size_t i = 0; i < m; ++i) bins_->add(q, bin_batch_[i]);
        }
      }
    }
    if (!port_.ordered_lossless) {
      const int64_t low = *std::min_element(watermark_.begin(), watermark_.end());
      if (low != INT64_MIN) {
        const int64_t bound = low - horizon_ns_;
        reorder_.releaseUpTo(bound, [this](const PacketRecord& r) { feed(r); });
        analyse();
        advance(bound);
      }
    }
    return taken;
  }

  // The engine and its parts move on to `t`, closing every interval that ends by then.
  void advance(int64_t t) {
    engine_.advance(t);
    // An advance to where the parts already are changes nothing in any engine: an idle port's polls hand the
    // parts nothing.
    if (!parts_.empty() && t > advanced_) {
      if (batch_.ops.empty() || batch_.ops.back().advance != INT64_MIN) batch_.ops.push_back({});
      batch_.ops.back().advance = t;
      advanced_ = t;
    }
  }

  // Records released in order by the queues' merge (and by the last flush) are collected and given to the engine as one
  // batch per poll.
  void feed(const PacketRecord& r) { released_.push_back(r); }
  void analyse() {
    analyse(released_);
    released_.clear();
  }
  void analyse(std::span<const PacketRecord> records) {
    if (records.empty()) return;
    analysed_ += records.size();
    if (sink_) sink_(index_, records);
    engine_.add(records);
    if (!parts_.empty()) {
      batch_.records.insert(batch_.records.end(), records.begin(), records.end());
      batch_.ops.push_back({records.size(), INT64_MIN});
    }
  }

  // Hands the engine calls made since the last hand-over to every part (the microbursts to the evidence's).
  void sendParts() {
    intervals_sent_ = intervals_;
    if (parts_.empty() || (batch_.ops.empty() && bursts_.empty() && !batch_.finish)) return;
    auto batch = std::make_shared<const PartWorker::Batch>(std::exchange(batch_, {}));
    parts_.front()->send({batch, std::exchange(bursts_, {})});
    for (size_t w = 1; w < parts_.size(); ++w) parts_[w]->send({batch, {}});
  }

  // Joins an interval's parts — the first engine's snapshot and every part's report, each in order of closing —
  // and hands the interval to the mailbox once all are in.
  void joinMain(PortSnapshot s) {
    std::lock_guard<std::mutex> lock(join_mu_);
    pending_main_.push_back(std::move(s));
    handJoined();
  }
  void joinPart(size_t w, const IntervalReport& r) {
    std::lock_guard<std::mutex> lock(join_mu_);
    pending_parts_[w].push_back(r);
    handJoined();
  }
  void handJoined() {
    for (;;) {
      if (pending_main_.empty()) return;
      for (const auto& q : pending_parts_) {
        if (q.empty()) return;
      }
      PortSnapshot s = std::move(pending_main_.front());
      pending_main_.pop_front();
      for (size_t i = 0; i < pending_parts_.size(); ++i) {
        takeParts<IntervalReport>(&s.interval, std::move(pending_parts_[i].front()), i == 0);
        pending_parts_[i].pop_front();
      }
      mailbox_.push(index_, std::move(s));
    }
  }

  size_t index_;
  const CapturePort& port_;
  Doorbell doorbell_;
  EngineConfig engine_config_;
  Engine engine_;
  std::vector<std::unique_ptr<PartWorker>> parts_;
  BurstForwarder forwarder_;
  PartWorker::Batch batch_;                              // the engine calls since the last hand-over to the parts
  std::vector<std::pair<uint64_t, Microburst>> bursts_;  // and the port stream's microbursts since then
  Reorderer reorder_;
  int64_t horizon_ns_;
  std::vector<int64_t> watermark_;
  std::vector<PacketRecord> released_;
  std::function<void(size_t, std::span<const PacketRecord>)> sink_;
  Mailbox& mailbox_;
  std::mutex join_mu_;
  std::deque<PortSnapshot> pending_main_;
  std::vector<std::deque<IntervalReport>> pending_parts_;
  uint64_t analysed_ = 0;
  std::unique_ptr<internal::PortBins> bins_;  // live ports with report intervals only
  std::array<QueueBin, 256> bin_batch_;
  uint64_t degraded_intervals_ = 0;
  uint64_t series_packets_ = 0, series_bytes_ = 0, series_bytes_unsure_ = 0, series_kernel_lost_ = 0;
  std::vector<std::tuple<int64_t, int64_t, IntervalBounds>> degraded_;
  uint64_t measured_ = 0;  // records in the intervals closed so far
  uint64_t intervals_ = 0;
  uint64_t intervals_sent_ = 0;
  int64_t advanced_ = INT64_MIN;  // the last advance handed to the parts
};

}  // namespace

EngineConfig portEngineConfig(const EngineConfig& base, double link_bps) {
  if (link_bps <= 0) return base;  // no link of its own (a capture file): the configuration as given
  EngineConfig c = base;
  c.link_capacity_bps = link_bps;
  if (std::find(c.rates_bps.begin(), c.rates_bps.end(), c.link_capacity_bps) == c.rates_bps.end()) {
    c.rates_bps.push_back(c.link_capacity_bps);
  }
  return c;
}

bool ledgerBalanced(const PortResult& p) {
  const Ledger& l = p.ledger;
  const DeviceStats& d = p.device;
  return l.balanced() && (!d.received || *d.received == l.received) &&
         (!d.seen || *d.seen == l.received + d.dropStagesTotal() + d.filtered);
}

absl::StatusOr<RunResult> runCapture(CaptureSource& source, const PipelineConfig& config, const std::atomic<bool>& stop,
                                     const IntervalCallback& on_interval) {
  const std::vector<CapturePort>& ports = source.ports();
  Mailbox mailbox;
  std::vector<std::unique_ptr<PortWorker>> workers;
  std::vector<std::unique_ptr<TrainingAnalyzer>> analyzers;  // per port, on this (the control) thread
  std::vector<std::shared_ptr<const TrainingReport>> last_training(ports.size());
  std::vector<StepEvidenceWindow> step_evidence;  // per port, with training and evidence: evidence per job step
  TrainingConfig tc = config.training;
  if (config.engine.report_interval_ns == 0) tc.window_ns = 0;  // a file: the whole input is the window
  if (tc.enabled) BS_RETURN_IF_ERROR(validateTrainingConfig(tc));
  if (config.evidence.enabled) BS_RETURN_IF_ERROR(validateEvidenceConfig(config.evidence, config.engine.base_bin_ns));
  if (config.mirror.enabled) BS_RETURN_IF_ERROR(validateMirrorConfig(config.mirror));
  if (config.workers_per_port < 1 || config.workers_per_port > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("workers per port: ", config.workers_per_port, " is not 1, 2 or 3 (docs/workers.md)"));
  }
  for (size_t i = 0; i < ports.size(); ++i) {
    const EngineConfig ec = portEngineConfig(config.engine, ports[i].link_bps);
    if (absl::Status s = validateConfig(ec); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("port ", ports[i].name, ": ", s.message()));
    }
    workers.push_back(std::make_unique<PortWorker>(i, ports[i], ec, tc, config.evidence, config.mirror,
                                                   config.reorder_horizon_ns, config.workers_per_port, mailbox,
                                                   config.record_sink));
    if (config.extend_engine) config.extend_engine(i, workers.back()->engine());
    if (tc.enabled) {
      analyzers.push_back(std::make_unique<TrainingAnalyzer>(tc, ec.link_capacity_bps, ec.scales_ns, ec.rates_bps));
      if (config.evidence.enabled) step_evidence.emplace_back(ec.base_bin_ns, tc.window_ns, kStepEvidenceEntries);
    }
  }
  // The analysis of a port's training window, with each job step's congestion evidence.
  auto analysis = [&](size_t port) {
    TrainingReport t = analyzers[port]->analyze();
    if (!step_evidence.empty()) step_evidence[port].annotate(&t);
    return std::make_shared<const TrainingReport>(std::move(t));
  };
  auto analyse = [&](size_t port, std::shared_ptr<const TrainingDelta> delta) {
    if (analyzers.empty() || !delta) return;
    analyzers[port]->ingest(std::move(delta));
    last_training[port] = analysis(port);
  };
  // Each port's analyses within the training budget (analysis_pace.h); the last hand-over analyses whatever waits.
  using Clock = std::chrono::steady_clock;
  std::vector<internal::AnalysisPace> pace(ports.size(), internal::AnalysisPace(tc.analysis_budget));
  auto deliver = [&](bool last) {  // whether anything came
    auto items = mailbox.take();
    if (items.empty() && !last) return false;
    // Every interval's bins go in, but each port is analysed at most once per hand-over, with its last interval: a
    // control thread that fell behind (many intervals waiting, a burst of empty ones after a silence)
    // catches up instead of analysing each. Only that snapshot carries the report (its interval figures
    // cover all the intervals since the last one), so that counters built from it count nothing twice; so a
    // port is analysed only in a hand-over that holds one of its snapshots, which then carries the report.
    std::vector<size_t> last_of(ports.size(), SIZE_MAX);
    for (size_t i = 0; i < items.size(); ++i) {
      const auto& [port, s] = items[i];
      if (!analyzers.empty() && s.interval.training) analyzers[port]->ingest(s.interval.training);
      if (!step_evidence.empty() && s.interval.evidence) step_evidence[port].add(*s.interval.evidence);
      last_of[port] = i;
      pace[port].arrived();
    }
    for (size_t port = 0; port < ports.size() && !analyzers.empty(); ++port) {
      // The last hand-over analyses a port with intervals waiting even without a snapshot of its own to carry
      // the report (the workers' finish closes every port's last interval, so it has one): the run's result.
      if (!pace[port].due(Clock::now(), last) || (!last && last_of[port] == SIZE_MAX)) continue;
      const int64_t cpu_began = threadCpuNs();
      last_training[port] = analysis(port);
      pace[port].done(Clock::now(), std::chrono::nanoseconds(threadCpuNs() - cpu_began));
      if (last_of[port] != SIZE_MAX) items[last_of[port]].second.training = last_training[port];
    }
    for (auto& [port, s] : items) {
      if (!on_interval) continue;
      s.device = source.deviceStats(port);
      s.decode = source.decodeStats(port);
      s.timestamps = source.timestampInfo();
      on_interval(port, s);
    }
    return !items.empty();
  };

  BS_RETURN_IF_ERROR(source.setReorderHorizon(config.reorder_horizon_ns));
  BS_RETURN_IF_ERROR(source.start());
  std::atomic<bool> draining{false};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < workers.size(); ++i) {
    threads.emplace_back([w = workers[i].get(), &draining] { w->run(draining); });
    pthread_setname_np(threads.back().native_handle(), absl::StrCat("bs-port-", i).c_str());
  }
  // After the workers started (they keep the nice value they were created with); a file's reader waits for its
  // workers instead of dropping, so only a live capture needs it. Asked for by the caller, whose thread it is: a
  // thread that cannot raise its priority again stays lowered, and a second run from it would start its workers
  // lowered too.
  std::optional<LowerControlThreadPriority> yielding;
  if (config.yield_control_thread && !source.finite()) yielding.emplace();

  RunResult result;
  result.backend = source.name();
  const Clock::time_point started = Clock::now();
  Clock::time_point last_packet = started;
  uint64_t last_seen = 0;
  // A report wakes the control thread at once. Besides, it looks every kMaxNap (a signal, idleness: each seen up to
  // that late, as the last packet's time is taken when it looks; a duration is not overslept);
  // reading a file, every 2 ms while records come (so that the end of the file is seen at once), backing off
  // to kMaxNap when nothing changes. A live sensor's control thread wakes tens of times a second, not hundreds.
  constexpr std::chrono::milliseconds kBusyNap{2}, kMaxNap{64};
  std::chrono::nanoseconds nap = kBusyNap;
  std::vector<std::optional<LinkState>> links(ports.size());  // as last handed to link_sink
  for (;;) {
    bool changed = deliver(false);
    const Clock::time_point now = Clock::now();
    for (size_t port = 0; config.link_sink && port < ports.size(); ++port) {
      std::optional<LinkState> l = source.linkState(port);
      if (l && l != links[port]) config.link_sink(port, *l);
      links[port] = std::move(l);
    }
    uint64_t seen = 0;
    for (const CapturePort& p : ports) seen += sumReceived(p);
    if (seen != last_seen) {
      last_seen = seen;
      last_packet = now;
      changed = true;
    }
    if (stop.load(std::memory_order_relaxed)) {
      result.stop_reason = "signal";
      break;
    }
    if (source.finished()) {
      result.stop_reason = "end of input";
      break;
    }
    if (config.duration_s > 0 && now - started >= std::chrono::duration<double>(config.duration_s)) {
      result.stop_reason = "duration";
      break;
    }
    if (config.idle_exit_s > 0 && seen > 0 && now - last_packet >= std::chrono::duration<double>(config.idle_exit_s)) {
      result.stop_reason = "idle";
      break;
    }
    nap = !source.finite() ? std::chrono::nanoseconds(kMaxNap)
          : changed        ? std::chrono::nanoseconds(kBusyNap)
                           : std::min<std::chrono::nanoseconds>(2 * nap, kMaxNap);
    // Not past a duration or idle limit by more than a busy nap.
    if (config.duration_s > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(config.duration_s) - (now - started));
      nap = std::clamp<std::chrono::nanoseconds>(left, kBusyNap, nap);
    }
    if (config.idle_exit_s > 0 && seen > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(config.idle_exit_s) - (now - last_packet));
      nap = std::clamp<std::chrono::nanoseconds>(left, kBusyNap, nap);
    }
    mailbox.wait(nap);
  }

  // Stop the producers (each pushes its last records and, live, a final tick), then let the workers drain.
  source.stop();
  draining.store(true, std::memory_order_seq_cst);  // as the workers' doorbell sleep looks at it
  for (auto& w : workers) w->wake();
  for (std::thread& t : threads) t.join();
  if (yielding) yielding->restore();  // nothing left to yield to
  deliver(true);
  BS_RETURN_IF_ERROR(source.status());
  result.timestamps = source.timestampInfo();
  result.source = source.sourceStats();
  // The workers' results first, then the workers go (their engines' windows, tables and evidence) before the last
  // training analysis, which allocates its series of the whole run: it reuses their memory rather than fault in more
  // (`analyze`'s peak: the 30x file's 39.2 -> 32.5 MiB, the 1 M-flow capture's 102.3 -> 96.5 MiB; bench/README.md).
  for (const auto& w : workers) result.ports.push_back(w->result());
  workers.clear();
  for (size_t i = 0; i < result.ports.size(); ++i) {
    PortResult& pr = result.ports[i];
    // A file's whole input (with intervals, they took it all), and its evidence (intervals hand theirs over).
    if (!step_evidence.empty() && pr.engine.evidence && config.engine.report_interval_ns == 0) {
      step_evidence[i].add(*pr.engine.evidence);
    }
    analyse(i, pr.engine.training);
    pr.training = last_training[i];
    pr.decode = source.decodeStats(i);
    pr.device = source.deviceStats(i);
  }
  return result;
}

}  // namespace burstscope
