// SPEC "Overload": each live queue's producer counts every frame into 100 µs bins before its ring can drop it,
// the port's worker adds the queues' bins into the port's complete series, and an interval that lost frames
// after the bins is degraded: its totals stay exact and its figures come as bounds that hold the truth. The
// truth here is the engine run over every frame, as `analyze` would run it on a capture of them.
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "burstscope/reorder.h"
#include "src/pipeline/pipeline.h"
#include "src/pipeline/port_bins.h"

namespace burstscope {
namespace {

// Ethernet + IPv4 + UDP headers of a frame between 10.0.0.s and 10.0.1.d (the bytes a snap length keeps).
std::array<uint8_t, 42> frameHeaders(uint8_t s, uint8_t d) {
  std::array<uint8_t, 42> f{};
  f[12] = 0x08;  // IPv4
  f[14] = 0x45;
  f[16] = 0x05;  // total length 1400 (the wire length says more)
  f[17] = 0x78;
  f[22] = 64;
  f[23] = 17;  // UDP
  f[26] = 10, f[28] = 0, f[29] = s;
  f[30] = 10, f[31] = 1, f[33] = d;
  f[34] = 0x30, f[35] = 0x39, f[36] = 0x12, f[37] = 0xb5;  // ports 12345 -> 4789+... (any)
  return f;
}

struct Frame {
  int64_t ts_ns;
  uint32_t wire_len;
  uint8_t s, d;
};

// Bursty traffic: trains of back-to-back frames (a burst at line rate) between quiet gaps; one train in ten is
// long (300-700 frames: more than the tests' rings of 256 hold), the others short (up to 100).
std::vector<Frame> makeFrames(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Frame> out;
  int64_t t = 1'795'294'232'000'000'000;
  while (out.size() < n) {
    const size_t train = rng() % 10 == 0 ? 300 + rng() % 400 : 1 + rng() % 100;
    for (size_t i = 0; i < train && out.size() < n; ++i) {
      t += 800 + static_cast<int64_t>(rng() % 600);
      out.push_back({t, 64 + static_cast<uint32_t>(rng() % 1450), static_cast<uint8_t>(rng() % 8),
                     static_cast<uint8_t>(rng() % 8)});
    }
    t += 1'100'000 + static_cast<int64_t>(rng() % 4'000'000);
  }
  return out;
}

PacketRecord recordOf(const Frame& f) {
  PacketRecord r;
  Decoder d(DecoderConfig{});
  const auto h = frameHeaders(f.s, f.d);
  d.decode(h, f.wire_len, &r, LinkType::kEthernet);
  r.ts_ns = f.ts_ns;
  return r;
}

EngineConfig overloadEngine() {
  EngineConfig c;
  c.scales_ns = {100'000, 1'000'000, 5'000'000, 10'000'000};
  c.rates_bps = {10e9, 25e9};
  c.report_interval_ns = 10'000'000;
  c.baseline_ns = 20'000'000;
  c.link_capacity_bps = 10e9;
  return c;
}

// The engine over every frame, interval by interval (by start): what `analyze` of the same frames reports; and,
// when asked, its port stream's microbursts.
std::map<int64_t, IntervalReport> truth(const std::vector<Frame>& frames, const EngineConfig& c,
                                        std::vector<Microburst>* microbursts = nullptr) {
  std::map<int64_t, IntervalReport> out;
  Engine e(c);
  e.setIntervalSink([&](const IntervalReport& r) { out[r.start_ns] = r; });
  for (const Frame& f : frames) e.add(recordOf(f));
  e.finish();
  if (microbursts != nullptr) {
    const EngineResult all = e.result();
    *microbursts = all.port.microbursts->events;
    EXPECT_EQ(microbursts->size(), all.port.microbursts->count);  // every one kept
  }
  return out;
}

// The truth's microbursts with an instant in [start, end).
uint64_t microburstsIn(const std::vector<Microburst>& all, int64_t start, int64_t end) {
  return static_cast<uint64_t>(
      std::count_if(all.begin(), all.end(), [&](const Microburst& m) { return m.start_ns < end && m.end_ns > start; }));
}

// Bursty frames over two queues (by address), and the engine's figures and microbursts over every one of them.
struct Workload {
  std::vector<Frame> all;
  std::vector<std::vector<Frame>> queues{2};
  std::vector<Microburst> bursts;
  std::map<int64_t, IntervalReport> want;
};
// A degraded interval's microburst bounds, when bounded, hold the truth's count; true if they were checked.
bool microburstBoundsHold(const IntervalBounds& b, const std::vector<Microburst>& bursts, const IntervalReport& r) {
  if (!b.microbursts_bounded) return false;
  const uint64_t n = microburstsIn(bursts, r.start_ns, r.end_ns);
  EXPECT_LE(b.microbursts.first, n);
  EXPECT_GE(b.microbursts.second, n);
  return true;
}

Workload workload(const EngineConfig& c, uint64_t seed) {
  Workload w;
  w.all = makeFrames(60'000, seed);
  for (const Frame& f : w.all) w.queues[(f.s + f.d) % 2].push_back(f);
  w.want = truth(w.all, c, &w.bursts);
  return w;
}

TEST(QueueBinsTest, EveryFrameIsBinnedBeforeTheRingAndTheLostOnesAreMarked) {
  const std::vector<Frame> frames = makeFrames(20'000, 1);
  QueueProducer p(DecoderConfig{}, 64);  // a ring of 64 that nobody drains: all but 64 are lost
  std::map<int64_t, QueueBin> want;
  size_t i = 0;
  for (const Frame& f : frames) {
    const auto h = frameHeaders(f.s, f.d);
    p.add(h, f.wire_len, f.ts_ns);
    QueueBin& b = want[f.ts_ns - f.ts_ns % kQueueBinNs];
    ++b.packets;
    b.bytes += f.wire_len;
    if (i++ >= 64) {
      ++b.lost;
      b.lost_bytes += f.wire_len;
    }
    if (p.pendingCount() == QueueProducer::kMaxBatch) p.flush();
  }
  p.tick(frames.back().ts_ns);
  ASSERT_NE(p.bins(), nullptr);
  std::map<int64_t, QueueBin> got;
  std::array<QueueBin, 64> out;
  for (size_t m; (m = p.binChannel().dequeue(out)) > 0;) {
    for (size_t k = 0; k < m; ++k) {
      QueueBin& b = got[out[k].start_ns];
      b.packets += out[k].packets, b.bytes += out[k].bytes, b.lost += out[k].lost, b.lost_bytes += out[k].lost_bytes;
      EXPECT_EQ(out[k].channel_drops, 0u);
    }
  }
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [start, b] : want) {
    SCOPED_TRACE(start);
    EXPECT_EQ(got[start].packets, b.packets);
    EXPECT_EQ(got[start].bytes, b.bytes);
    EXPECT_EQ(got[start].lost, b.lost);
    EXPECT_EQ(got[start].lost_bytes, b.lost_bytes);
  }
  EXPECT_EQ(p.counters().ring_drops.load(), frames.size() - 64);
  EXPECT_EQ(p.counters().bin_drops.load(), 0u);
}

// A file's queue (lossless) waits for room instead of dropping: every record reaches the worker, in order, however
// slowly it drains. A batch of kMaxBatch records into a ring of 64 must wait at every flush, whatever the timing.
TEST(QueueProducerTest, ALosslessQueueWaitsForTheWorkerAndLosesNothing) {
  const std::vector<Frame> frames = makeFrames(20'000, 3);
  QueueProducer p(DecoderConfig{}, 64, /*lossless=*/true);
  std::vector<PacketRecord> got;
  std::thread worker([&] {
    std::array<PacketRecord, 16> out;
    // Bounded: a producer that lost records would leave it waiting for them (the test then fails on the count).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (got.size() < frames.size() && std::chrono::steady_clock::now() < give_up) {
      const size_t m = p.ring().dequeue(out);
      got.insert(got.end(), out.begin(), out.begin() + static_cast<ptrdiff_t>(m));
      if (m == 0) std::this_thread::yield();
    }
  });
  for (const Frame& f : frames) {
    p.add(frameHeaders(f.s, f.d), f.wire_len, f.ts_ns);
    if (p.pendingCount() == QueueProducer::kMaxBatch) {
      EXPECT_EQ(p.flush(), 0u);
    }
  }
  EXPECT_EQ(p.flush(), 0u);
  worker.join();
  ASSERT_EQ(got.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    ASSERT_EQ(got[i].ts_ns, frames[i].ts_ns) << i;
    ASSERT_EQ(got[i].wire_len, frames[i].wire_len) << i;
  }
  EXPECT_EQ(p.counters().ring_drops.load(), 0u);
  EXPECT_GT(p.fullWaits(), 0u);  // the wait was taken (each flush held 16 times the ring)
}

// A file's queue puts its records in time order itself (orderInTime), in its reading thread: what reaches its ring,
// read in place as the port's worker reads it (consumeSpans), is what a Reorderer's push() releases from the same
// records, byte for byte, with its counts published in the queue's counters; releaseHeld() hands over everything
// still held at the end, and tick() puts no tick record in the ring. The frames come late within the horizon (put
// back in order), later than it (clamped), and from the middle on with the clock stepped back by three seconds
// (time shifted on). A ring of 64 makes flushes wait for the worker. (consumeSpans' two spans where the ring wraps
// are ring_test's: here whether a take wraps depends on the threads' timing.)
TEST(QueueProducerTest, AnOrderedQueuesRingHoldsWhatTheReordererReleases) {
  std::vector<Frame> frames = makeFrames(20'000, 5);
  std::mt19937_64 rng(5);
  for (Frame& f : frames) {
    const uint64_t k = rng() % 100;
    if (k < 10) f.ts_ns -= static_cast<int64_t>(rng() % 50'000);
    if (k == 10) f.ts_ns -= 200'000 + static_cast<int64_t>(rng() % 300'000);
  }
  for (size_t i = frames.size() / 2; i < frames.size(); ++i) frames[i].ts_ns -= 3'000'000'000;
  constexpr int64_t kHorizon = 100'000;
  Reorderer ref(kHorizon);
  std::vector<PacketRecord> want;
  for (const Frame& f : frames) ref.push(recordOf(f), [&](const PacketRecord& r) { want.push_back(r); });
  ref.flush([&](const PacketRecord& r) { want.push_back(r); });
  ASSERT_GT(ref.reordered(), 0u);
  ASSERT_GT(ref.clamped(), 0u);
  ASSERT_EQ(ref.clockStepsBack(), 1u);

  QueueProducer p(DecoderConfig{}, 64, /*lossless=*/true);
  p.orderInTime(kHorizon);
  std::vector<PacketRecord> got;
  std::atomic<bool> done{false}, gave_up{false};
  std::thread worker([&] {
    // Bounded: a worker that stopped taking would leave the producer waiting for room; giving up stops its wait
    // (the test then fails on the count).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
      const bool last = done.load(std::memory_order_acquire);
      const size_t m = p.ring().consumeSpans(
          24, [&](std::span<const PacketRecord> s) { got.insert(got.end(), s.begin(), s.end()); });
      if (m > 0) continue;
      if (last) break;
      if (std::chrono::steady_clock::now() > give_up) {
        gave_up.store(true);
        break;
      }
      std::this_thread::yield();
    }
  });
  for (const Frame& f : frames) {
    p.add(frameHeaders(f.s, f.d), f.wire_len, f.ts_ns);
    if (p.pendingCount() == 64) {
      EXPECT_EQ(p.flush(&gave_up), 0u);
    }
  }
  EXPECT_EQ(p.releaseHeld(&gave_up), 0u);
  p.tick(frames.back().ts_ns);
  done.store(true, std::memory_order_release);
  worker.join();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(PacketRecord)), 0) << "record " << i;
  }
  const QueueCounters& c = p.counters();
  EXPECT_EQ(c.received.load(), frames.size());
  EXPECT_EQ(c.ring_drops.load(), 0u);
  const Reorderer::Counts order = c.order();
  EXPECT_EQ(order.reordered, ref.reordered());
  EXPECT_EQ(order.clamped, ref.clamped());
  EXPECT_EQ(order.max_lateness_ns, ref.maxLatenessNs());
  EXPECT_EQ(order.clock_steps_back, ref.clockStepsBack());
  EXPECT_EQ(order.clock_shift_ns, ref.clockShiftNs());
  EXPECT_GT(p.fullWaits(), 0u);
}

// A stop request ends an ordered queue's last release too: what it held and did not fit is dropped and counted.
TEST(QueueProducerTest, AStopRequestEndsAnOrderedQueuesLastReleaseAndCountsWhatDidNotFit) {
  const std::vector<Frame> frames = makeFrames(1'000, 6);
  QueueProducer p(DecoderConfig{}, 64, /*lossless=*/true);  // nobody drains it
  p.orderInTime(int64_t{1} << 50);                          // everything is held until the end
  for (const Frame& f : frames) p.add(frameHeaders(f.s, f.d), f.wire_len, f.ts_ns);
  const std::atomic<bool> stop{true};
  EXPECT_EQ(p.flush(&stop), 0u);  // held, not yet enqueued
  EXPECT_EQ(p.ring().size(), 0u);
  EXPECT_EQ(p.releaseHeld(&stop), frames.size() - 64);
  EXPECT_EQ(p.counters().ring_drops.load(), frames.size() - 64);
  EXPECT_EQ(p.counters().received.load(), frames.size());
  EXPECT_EQ(p.ring().size(), 64u);
}

// A live queue's records are the decoder's, byte for byte: every frame of the committed traces (TCP data and
// ACKs, RoCEv2, IPv6, VLANs, VXLAN and ERSPAN mirrors, malformed frames) through a lossy producer, decoded in place
// into its ring slots or (streaming, as a DPDK RX lcore does on AMD) into a scratch record streamed into them, against
// the same frame decoded alone. Every field counts: a slot holds an earlier lap's record, the scratch record the frame
// before's.
class LiveRecordsTest : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(QueueProducer, LiveRecordsTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Streamed" : "InPlace"; });
TEST_P(LiveRecordsTest, ALiveQueuesRecordsAreTheDecodersByteForByte) {
  const std::filesystem::path data = std::filesystem::path(BURSTSCOPE_SOURCE_ROOT) / "data";
  QueueProducer p(DecoderConfig{}, 256);  // small: every slot is written over many laps
  p.streamIntoSlots(GetParam());
  std::vector<PacketRecord> want;
  std::array<PacketRecord, 64> out;
  size_t got = 0, files = 0;
  auto drain = [&] {
    p.flush();
    for (size_t m; (m = p.ring().dequeue(out)) > 0;) {
      for (size_t k = 0; k < m; ++k, ++got) {
        ASSERT_LT(got, want.size());
        ASSERT_EQ(std::memcmp(&out[k], &want[got], sizeof(PacketRecord)), 0) << "record " << got;
      }
    }
  };
  for (const auto& entry : std::filesystem::recursive_directory_iterator(data)) {
    if (entry.path().extension() != ".pcap") continue;
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* f = pcap_open_offline_with_tstamp_precision(entry.path().c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
    ASSERT_NE(f, nullptr) << err;
    if (pcap_datalink(f) != DLT_EN10MB) {
      pcap_close(f);
      continue;
    }
    ++files;
    pcap_pkthdr* h;
    const u_char* bytes;
    while (pcap_next_ex(f, &h, &bytes) == 1) {
      const int64_t ts = static_cast<int64_t>(h->ts.tv_sec) * 1'000'000'000 + h->ts.tv_usec;
      const std::span<const uint8_t> frame(bytes, h->caplen);
      PacketRecord r;
      Decoder(DecoderConfig{}).decode(frame, h->len, &r, LinkType::kEthernet);
      r.ts_ns = ts;
      want.push_back(r);
      p.add(frame, h->len, ts);
      if (p.pendingCount() == 64) drain();
      if (::testing::Test::HasFailure()) break;
    }
    pcap_close(f);
    if (::testing::Test::HasFailure()) return;
  }
  drain();
  ASSERT_GE(files, 10u) << "the committed traces under data/";
  EXPECT_EQ(got, want.size());
  EXPECT_EQ(p.counters().ring_drops.load(), 0u);

  // A full ring: the first 64 records are kept whole, the rest dropped, and the bin counts every frame and the
  // dropped ones' measured bytes (taken where the frame was decoded, not read back from a slot).
  QueueProducer full(DecoderConfig{}, 64);
  full.streamIntoSlots(GetParam());
  const int64_t t0 = want.front().ts_ns - want.front().ts_ns % kQueueBinNs;
  uint64_t bytes = 0, lost_bytes = 0;
  const std::vector<Frame> frames = makeFrames(200, 9);
  std::vector<PacketRecord> kept;
  for (size_t i = 0; i < frames.size(); ++i) {
    const auto h = frameHeaders(frames[i].s, frames[i].d);
    PacketRecord r;
    Decoder(DecoderConfig{}).decode(h, frames[i].wire_len, &r, LinkType::kEthernet);
    r.ts_ns = t0 + static_cast<int64_t>(i);  // all in one bin
    if (i < 64) {
      kept.push_back(r);
    } else {
      lost_bytes += r.wire_len;
    }
    bytes += r.wire_len;
    full.add(h, frames[i].wire_len, r.ts_ns);
  }
  EXPECT_EQ(full.flush(), frames.size() - 64);
  full.tick(t0 + kQueueBinNs);
  std::array<PacketRecord, 256> all;
  const size_t m = full.ring().dequeue(all);
  ASSERT_EQ(m, 64u);  // the tick found the ring full too
  for (size_t k = 0; k < m; ++k) EXPECT_EQ(std::memcmp(&all[k], &kept[k], sizeof(PacketRecord)), 0) << k;
  std::array<QueueBin, 4> bin;
  ASSERT_EQ(full.binChannel().dequeue(bin), 1u);
  EXPECT_EQ(bin[0].packets, frames.size());
  EXPECT_EQ(bin[0].bytes, bytes);
  EXPECT_EQ(bin[0].lost, frames.size() - 64);
  EXPECT_EQ(bin[0].lost_bytes, lost_bytes);
}

// A stop request ends a lossless queue's wait: what did not fit is dropped and counted, and flush() returns.
TEST(QueueProducerTest, AStopRequestEndsALosslessWaitAndCountsWhatDidNotFit) {
  const std::vector<Frame> frames = makeFrames(100, 4);
  QueueProducer p(DecoderConfig{}, 64, /*lossless=*/true);  // nobody drains it
  for (const Frame& f : frames) p.add(frameHeaders(f.s, f.d), f.wire_len, f.ts_ns);
  const std::atomic<bool> stop{true};
  EXPECT_EQ(p.flush(&stop), frames.size() - 64);
  EXPECT_EQ(p.counters().ring_drops.load(), frames.size() - 64);
  EXPECT_EQ(p.ring().size(), 64u);
}

TEST(QueueBinsTest, AFullSideChannelDropsAndCountsAndTheSeriesSaysWhereItHasAHole) {
  // One frame per bin, over more bins than the side channel holds, nobody draining it.
  QueueProducer p(DecoderConfig{}, 1 << 16);
  const auto h = frameHeaders(1, 2);
  const int64_t t0 = 1'795'294'232'000'000'000;
  const size_t bins = QueueProducer::kBinChannel + 100;
  for (size_t i = 0; i <= bins; ++i) {
    p.add(h, 100, t0 + static_cast<int64_t>(i) * kQueueBinNs);
    if (p.pendingCount() == QueueProducer::kMaxBatch) p.flush();
  }
  p.flush();
  // The channel holds kBinChannel; the bins after it were dropped and counted (the last one is still open).
  EXPECT_EQ(p.counters().bin_drops.load(), bins - QueueProducer::kBinChannel);
  // Drained now, a next bin says how many were dropped before it: the worker's series marks the hole.
  EngineConfig c = overloadEngine();
  internal::PortBins series(c, 1);
  std::array<QueueBin, 256> out;
  for (size_t m; (m = p.binChannel().dequeue(out)) > 0;) {
    for (size_t k = 0; k < m; ++k) series.add(0, out[k]);
  }
  p.add(h, 100, t0 + static_cast<int64_t>(bins + 1) * kQueueBinNs);
  p.tick(t0 + static_cast<int64_t>(bins + 1) * kQueueBinNs);
  for (size_t m; (m = p.binChannel().dequeue(out)) > 0;) {
    for (size_t k = 0; k < m; ++k) {
      EXPECT_EQ(out[k].channel_drops, bins - QueueProducer::kBinChannel);
      series.add(0, out[k]);
    }
  }
  IntervalReport early, hole;
  early.start_ns = t0 - t0 % c.report_interval_ns;
  early.end_ns = early.start_ns + c.report_interval_ns;
  EXPECT_TRUE(series.close(early).complete);
  hole.start_ns = t0 + static_cast<int64_t>(bins) * kQueueBinNs;
  hole.start_ns -= hole.start_ns % c.report_interval_ns;
  hole.end_ns = hole.start_ns + c.report_interval_ns;
  EXPECT_FALSE(series.close(hole).complete);
}

// The live path end to end: a real QueueProducer per queue feeding tiny rings, a worker slowed down on purpose
// (it spends ~2 µs per record, so it falls behind during the bursts), and the pipeline's snapshots against the
// engine over every frame.
// A kernel's bins of every frame of the port (as the XDP program counts them: at each frame's wire length, in its
// own timestamp's bin), whatever the producers later saw of them.
class FrameKernelBins final : public KernelBinSource {
 public:
  explicit FrameKernelBins(const std::vector<Frame>& frames, uint32_t overhead = 0) {
    for (const Frame& f : frames) {
      KernelBinCount& b = bins_[f.ts_ns / kQueueBinNs];
      b.start_ns = f.ts_ns - f.ts_ns % kQueueBinNs;
      ++b.packets;
      b.bytes += f.wire_len + overhead;
    }
  }
  bool read(int64_t from, int64_t to, std::vector<KernelBinCount>* out, uint64_t*) const override {
    for (auto it = bins_.lower_bound(from); it != bins_.end() && it->first < to; ++it) out->push_back(it->second);
    ++reads;
    return true;
  }
  mutable uint64_t reads = 0;

 private:
  std::map<int64_t, KernelBinCount> bins_;
};

class ProducerBackend final : public CaptureSource {
 public:
  // `kernel`: the port's kernel bins; `lost_before`: frames that never reach their producer (an AF_XDP socket's
  // full RX ring), which only the kernel's bins count.
  ProducerBackend(std::vector<std::vector<Frame>> per_queue, size_t ring_capacity,
                  const KernelBinSource* kernel = nullptr, std::function<bool(const Frame&)> lost_before = {})
      : input_(std::move(per_queue)), lost_before_(std::move(lost_before)) {
    port_.name = "overload0";
    port_.link_bps = 10e9;
    port_.kernel_bins = kernel;
    for (size_t q = 0; q < input_.size(); ++q) {
      producers_.push_back(std::make_unique<QueueProducer>(DecoderConfig{}, ring_capacity));
      port_.rings.push_back(&producers_.back()->ring());
      port_.counters.push_back(&producers_.back()->counters());
      port_.bins.push_back(producers_.back()->bins());
    }
    ports_.push_back(port_);
  }
  std::string name() const override { return "producers"; }
  const std::vector<CapturePort>& ports() const override { return ports_; }
  absl::Status start() override {
    for (size_t q = 0; q < input_.size(); ++q) threads_.emplace_back([this, q] { produce(q); });
    return absl::OkStatus();
  }
  void stop() override {
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  DeviceStats deviceStats(size_t) const override { return {}; }
  TimestampInfo timestampInfo() const override { return {"test", "the frames' own timestamps", 0, 0}; }

 private:
  // Like an RX lcore at a modest rate: bursts of up to 32 frames, a flush after each, a tick at the end. A gap of over
  // 1 ms in the frames' time is a real 3 ms pause, so the worker catches up between trains and loses only in the large
  // ones (a train comes as fast as the producer adds frames).
  void produce(size_t q) {
    QueueProducer& p = *producers_[q];
    const std::vector<Frame>& in = input_[q];
    for (size_t i = 0; i < in.size(); ++i) {
      if (i > 0 && in[i].ts_ns - in[i - 1].ts_ns > 1'000'000) {
        p.flush();
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
      }
      if (i % 32 == 31) p.flush();
      if (lost_before_ && lost_before_(in[i])) continue;
      const auto h = frameHeaders(in[i].s, in[i].d);
      p.add(h, in[i].wire_len, in[i].ts_ns);
    }
    p.tick(in.empty() ? 0 : in.back().ts_ns + 2'000'000);
  }

  std::vector<std::vector<Frame>> input_;
  std::function<bool(const Frame&)> lost_before_;
  std::vector<std::unique_ptr<QueueProducer>> producers_;
  CapturePort port_;
  std::vector<CapturePort> ports_;
  std::vector<std::thread> threads_;
};

// The pipeline over `backend` with its worker slowed on purpose (~2 µs per record, so it falls behind during the
// bursts), every snapshot into `snaps`.
absl::StatusOr<RunResult> runSlowed(CaptureSource& backend, const EngineConfig& c, std::vector<PortSnapshot>* snaps) {
  PipelineConfig pc;
  pc.engine = c;
  pc.idle_exit_s = 0.5;
  pc.record_sink = [](size_t, std::span<const PacketRecord> records) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(2000 * records.size());
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  std::atomic<bool> stop{false};
  return runCapture(backend, pc, stop, [snaps](size_t, const PortSnapshot& s) { snaps->push_back(s); });
}

TEST(OverloadTest, DegradedIntervalsAreExactlyTheLossyOnesAndTheirBoundsHoldTheTruth) {
  const EngineConfig c = overloadEngine();
  const Workload w0 = workload(c, 7);
  const std::map<int64_t, IntervalReport>& want = w0.want;

  ProducerBackend backend(w0.queues, 256);
  std::vector<PortSnapshot> snaps;
  auto r = runSlowed(backend, c, &snaps);
  ASSERT_TRUE(r.ok()) << r.status();
  const PortResult& p = r->ports[0];
  ASSERT_GT(p.ledger.ring_drops, 0u) << "the slowed worker was expected to make the rings overflow";
  ASSERT_TRUE(p.ledger.balanced());

  uint64_t lost = 0, degraded = 0, exact = 0, checked_bounds = 0, microburst_bounds = 0, sure_microbursts = 0;
  uint64_t tight_microbursts = 0;
  for (const PortSnapshot& s : snaps) {
    const IntervalReport& got = s.interval;
    SCOPED_TRACE(absl::StrCat("interval at ", got.start_ns));
    ASSERT_TRUE(s.bounds.has_value());
    const IntervalBounds& b = *s.bounds;
    EXPECT_TRUE(b.complete);
    lost += b.lost;
    auto it = want.find(got.start_ns);
    if (it == want.end()) {  // an interval the full engine skipped as empty: nothing came in it
      EXPECT_EQ(b.packets, 0u);
      continue;
    }
    const IntervalReport& w = it->second;
    // The series is complete: every frame of the interval, lost or not.
    EXPECT_EQ(b.packets, w.port.packets);
    EXPECT_EQ(b.bytes, w.port.bytes);
    // Frames of the interval lost after the bins: exactly what the analysis is missing.
    EXPECT_EQ(b.lost, w.port.packets - got.port.packets);
    if (b.lost > 0) {
      EXPECT_TRUE(b.degraded());
    }
    if (!b.degraded()) {
      ++exact;
      EXPECT_TRUE(b.envelope_bytes.empty());
      EXPECT_EQ(got.port.envelope_bytes, w.port.envelope_bytes);  // as exact as without the bins
      EXPECT_EQ(got.port.backlog_bytes, w.port.backlog_bytes);
      continue;
    }
    ++degraded;
    // A loss within τ before or in the interval bounds its microbursts; the bounds hold the truth's count.
    if (b.lost > 0) {
      EXPECT_TRUE(b.microbursts_bounded);
    }
    if (microburstBoundsHold(b, w0.bursts, got)) {
      ++microburst_bounds;
      sure_microbursts += b.microbursts.first;
      tight_microbursts += b.microbursts.first == b.microbursts.second;
    }
    ASSERT_EQ(b.envelope_bytes.size(), c.scales_ns.size());
    for (size_t i = 0; i < c.scales_ns.size(); ++i) {
      SCOPED_TRACE(absl::StrCat("scale ", c.scales_ns[i]));
      if (!w.port.exact[i]) continue;  // the truth itself is a base-bin figure there
      const auto [lo, hi] = b.envelope_bytes[i];
      if (!b.envelope_bounded[i]) {  // no loss within its windows: the analysed figure, exact
        EXPECT_EQ(lo, w.port.envelope_bytes[i]);
        EXPECT_EQ(hi, w.port.envelope_bytes[i]);
        continue;
      }
      EXPECT_LE(lo, w.port.envelope_bytes[i]);
      EXPECT_GE(hi, w.port.envelope_bytes[i]);
      // Within one bin: a 10 Gbit/s port carries at most 125,000 bytes in 100 µs (a little more here: the
      // frames come back to back at 800-1400 ns, up to 1513 bytes each).
      EXPECT_LE(hi - lo, 200'000u);
      ++checked_bounds;
    }
    ASSERT_EQ(b.backlog_bytes.size(), c.rates_bps.size());
    for (size_t j = 0; j < c.rates_bps.size(); ++j) {
      SCOPED_TRACE(absl::StrCat("rate ", c.rates_bps[j]));
      if (!b.backlog_bounded[j]) {
        EXPECT_NEAR(b.backlog_bytes[j].first, w.port.backlog_bytes[j], 1e-6);
        continue;
      }
      EXPECT_LE(b.backlog_bytes[j].first, w.port.backlog_bytes[j] + 1e-6);
      EXPECT_GE(b.backlog_bytes[j].second, w.port.backlog_bytes[j] - 1e-6);
    }
  }
  std::printf("# %zu intervals: %lu exact, %lu degraded; %lu bounds checked; %lu of %lu frames lost\n", snaps.size(),
              static_cast<unsigned long>(exact), static_cast<unsigned long>(degraded),
              static_cast<unsigned long>(checked_bounds), static_cast<unsigned long>(p.ledger.ring_drops),
              static_cast<unsigned long>(p.ledger.received));
  std::printf("# microbursts bounded in %lu intervals (%lu exactly), at least %lu of them in all\n",
              static_cast<unsigned long>(microburst_bounds), static_cast<unsigned long>(tight_microbursts),
              static_cast<unsigned long>(sure_microbursts));
  EXPECT_GT(microburst_bounds, 0u);
  EXPECT_GT(sure_microbursts, 0u);       // the lower bound finds bursts, not just 0
  EXPECT_EQ(lost, p.ledger.ring_drops);  // every drop is in exactly one interval's series
  EXPECT_GT(degraded, 0u);
  EXPECT_GT(exact, 0u);  // only the intervals a loss reaches are flagged
  EXPECT_GT(checked_bounds, 0u);
  EXPECT_EQ(p.degraded_intervals, degraded);
  EXPECT_EQ(p.bins_late, 0u);
  EXPECT_EQ(p.bin_channel_drops, 0u);
}

// Without loss nothing changes: every interval is exact, none degraded, and the series' totals are the engine's.
TEST(OverloadTest, WithoutLossNoIntervalIsDegradedAndTheSeriesEqualsTheAnalysis) {
  const EngineConfig c = overloadEngine();
  const std::vector<Frame> all = makeFrames(20'000, 3);
  const std::map<int64_t, IntervalReport> want = truth(all, c);
  ProducerBackend backend({all}, size_t{1} << 16);
  PipelineConfig pc;
  pc.engine = c;
  pc.idle_exit_s = 0.5;
  std::vector<PortSnapshot> snaps;
  std::atomic<bool> stop{false};
  auto r = runCapture(backend, pc, stop, [&](size_t, const PortSnapshot& s) { snaps.push_back(s); });
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->ports[0].ledger.ring_drops, 0u);
  size_t matched = 0;
  for (const PortSnapshot& s : snaps) {
    ASSERT_TRUE(s.bounds.has_value());
    EXPECT_FALSE(s.bounds->degraded());
    auto it = want.find(s.interval.start_ns);
    if (it == want.end()) continue;
    ++matched;
    EXPECT_EQ(s.bounds->bytes, it->second.port.bytes);
    EXPECT_EQ(s.interval.port.envelope_bytes, it->second.port.envelope_bytes);
  }
  EXPECT_EQ(matched, want.size());
  EXPECT_EQ(r->ports[0].degraded_intervals, 0u);
}

// A live capture's control thread yields to its port workers when asked (PipelineConfig::yield_control_thread, as
// `run` asks; pipeline.cc kControlNice): while the run lasts it runs at a nice value 10 above the one it had, and the
// port's worker keeps the one it was started with. Without this, the control thread's analysis at an interval's end
// held up a worker that shares its CPU (under DPDK, the main lcore's) long enough to overrun its ring. Afterwards the
// control thread is back where it was if it may raise its priority again, and stays lowered otherwise. Not asked,
// nothing changes. Each run is made from a thread of its own (a thread left lowered ends with it), and the first
// interval's hand-over, which comes in the run's loop, also stops the run: nothing waits on the clock.
TEST(OverloadTest, TheControlThreadYieldsToThePortWorkerWhileALiveCaptureRuns) {
  const auto niceNow = [] {
    errno = 0;
    const int n = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
    EXPECT_EQ(errno, 0);
    return n;
  };
  // Whether a thread may raise its priority again (CAP_SYS_NICE, or RLIMIT_NICE), tried on a thread of its own.
  bool may_raise = false;
  std::thread([&] {
    const int n = niceNow();
    const auto self = static_cast<id_t>(gettid());
    if (n < 19 && setpriority(PRIO_PROCESS, self, n + 1) == 0) may_raise = setpriority(PRIO_PROCESS, self, n) == 0;
  }).join();
  const std::vector<Frame> all = makeFrames(5'000, 5);
  for (const bool yield : {false, true}) {
    SCOPED_TRACE(yield ? "asked to yield" : "not asked");
    ProducerBackend backend({all}, size_t{1} << 16);
    PipelineConfig pc;
    pc.engine = overloadEngine();
    pc.yield_control_thread = yield;
    std::mutex mu;
    std::vector<int> worker_nice, control_nice;
    pc.record_sink = [&](size_t, std::span<const PacketRecord>) {
      const int n = niceNow();
      std::lock_guard<std::mutex> lock(mu);
      worker_nice.push_back(n);
    };
    std::atomic<bool> stop{false};
    int before = 0, after = 0;
    absl::StatusOr<RunResult> r = absl::UnknownError("not run");
    std::thread([&] {
      before = niceNow();
      if (before >= 19) return;  // nothing lower to yield with: skipped below
      r = runCapture(backend, pc, stop, [&](size_t, const PortSnapshot&) {
        const int n = niceNow();
        std::lock_guard<std::mutex> lock(mu);
        control_nice.push_back(n);
        stop.store(true);
      });
      after = niceNow();
    }).join();
    if (before >= 19) GTEST_SKIP() << "the test runs at nice 19 already: nothing lower to yield with";
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->ports[0].ledger.analysed, all.size());  // stopping lets the producers finish and the worker drain
    const int during = yield ? std::min(before + 10, 19) : before;
    ASSERT_FALSE(worker_nice.empty());
    for (int n : worker_nice) EXPECT_EQ(n, before);
    ASSERT_FALSE(control_nice.empty());
    EXPECT_EQ(control_nice.front(), during);  // the hand-over that stopped the run, in its loop
    for (int n : control_nice) EXPECT_TRUE(n == during || n == before) << n;  // later ones: the final hand-over
    EXPECT_EQ(after, yield && !may_raise ? during : before);
  }
}

// The run's last frames lost with its last watermark: a burst at the end fills the ring, which then drops the
// rest of the burst and the producer's final tick as well (as on CI, where a loaded machine's ring was full at the
// end of OverloadTest.DegradedIntervals...). The worker's last analysed record is in interval A; the frames the
// ring dropped run on into B. They belong to B, as in the truth, not to A's totals. Deterministic: the worker is
// held in its record sink (bounded) from the first train until the producer has added the whole burst.
class HeldWorkerBackend final : public CaptureSource {
 public:
  HeldWorkerBackend(std::vector<Frame> first, std::vector<Frame> burst, std::atomic<int>* stage)
      : first_(std::move(first)), burst_(std::move(burst)), stage_(stage), producer_(DecoderConfig{}, 256) {
    port_.name = "held0";
    port_.link_bps = 10e9;
    port_.rings.push_back(&producer_.ring());
    port_.counters.push_back(&producer_.counters());
    port_.bins.push_back(producer_.bins());
    ports_.push_back(port_);
  }
  std::string name() const override { return "held"; }
  const std::vector<CapturePort>& ports() const override { return ports_; }
  absl::Status start() override {
    thread_ = std::thread([this] {
      for (const Frame& f : first_) producer_.add(frameHeaders(f.s, f.d), f.wire_len, f.ts_ns);
      producer_.tick(first_.back().ts_ns + 2'000'000);  // releases the first train: the worker is then held
      waitFor(1);
      for (size_t i = 0; i < burst_.size(); ++i) {
        producer_.add(frameHeaders(burst_[i].s, burst_[i].d), burst_[i].wire_len, burst_[i].ts_ns);
        if (i % 32 == 31) producer_.flush();
      }
      producer_.tick(burst_.back().ts_ns + 2'000'000);  // the ring is full: the final watermark is dropped
      stage_->store(2);
    });
    return absl::OkStatus();
  }
  void stop() override {
    if (thread_.joinable()) thread_.join();
  }
  DeviceStats deviceStats(size_t) const override { return {}; }
  TimestampInfo timestampInfo() const override { return {"test", "the frames' own timestamps", 0, 0}; }
  // Waits (at most 20 s) until the stage is at least `s`.
  void waitFor(int s) const {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (stage_->load() < s && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  std::vector<Frame> first_, burst_;
  std::atomic<int>* stage_;
  QueueProducer producer_;
  CapturePort port_;
  std::vector<CapturePort> ports_;
  std::thread thread_;
};

// With one worker per port, and with the analysis split over two and three (the parts take the end's advance too).
class FinalWatermarkTest : public ::testing::TestWithParam<size_t> {};
INSTANTIATE_TEST_SUITE_P(OverloadTest, FinalWatermarkTest, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return absl::StrCat(info.param, "Workers"); });
TEST_P(FinalWatermarkTest, FramesLostWithTheFinalWatermarkStayInTheirOwnInterval) {
  const EngineConfig c = overloadEngine();
  const int64_t a = 1'795'294'232'000'000'000;  // interval A's start; B starts 10 ms later
  std::vector<Frame> first, burst;
  for (int64_t i = 0; i < 50; ++i) first.push_back({a + 2'000'000 + i * 1000, 1000, 1, 2});
  for (int64_t i = 0; i < 600; ++i) burst.push_back({a + 9'700'000 + i * 1000, 1200, 3, 4});  // 9.7 -> 10.3 ms
  std::vector<Frame> all = first;
  all.insert(all.end(), burst.begin(), burst.end());
  const std::map<int64_t, IntervalReport> want = truth(all, c);
  ASSERT_EQ(want.size(), 2u);

  std::atomic<int> stage{0};
  HeldWorkerBackend backend(first, burst, &stage);
  PipelineConfig pc;
  pc.engine = c;
  pc.workers_per_port = GetParam();
  pc.idle_exit_s = 0.5;
  pc.record_sink = [&](size_t, std::span<const PacketRecord>) {
    if (stage.load() != 0) return;
    stage.store(1);
    backend.waitFor(2);
  };
  std::vector<PortSnapshot> snaps;
  std::atomic<bool> stop{false};
  auto r = runCapture(backend, pc, stop, [&](size_t, const PortSnapshot& s) { snaps.push_back(s); });
  ASSERT_TRUE(r.ok()) << r.status();
  const PortResult& p = r->ports[0];
  ASSERT_EQ(stage.load(), 2);
  ASSERT_EQ(p.ledger.ring_drops, burst.size() - 256);  // the ring held 256 of the burst, all of them in A
  uint64_t lost = 0;
  std::vector<int64_t> starts;
  for (const PortSnapshot& s : snaps) {
    SCOPED_TRACE(absl::StrCat("interval at ", s.interval.start_ns));
    ASSERT_TRUE(s.bounds.has_value());
    const IntervalBounds& b = *s.bounds;
    const auto it = want.find(s.interval.start_ns);
    ASSERT_NE(it, want.end());
    starts.push_back(s.interval.start_ns);
    EXPECT_EQ(b.packets, it->second.port.packets);
    EXPECT_EQ(b.bytes, it->second.port.bytes);
    EXPECT_EQ(b.lost, it->second.port.packets - s.interval.port.packets);
    EXPECT_TRUE(b.degraded());
    lost += b.lost;
  }
  EXPECT_EQ(starts, (std::vector<int64_t>{a, a + 10'000'000}));
  EXPECT_EQ(lost, p.ledger.ring_drops);
  EXPECT_EQ(p.series_packets, all.size());
}

// The kernel's bins (AF_XDP: the XDP program's) complete the series with the frames lost before the producers:
// a frame in every nine of each long train never reaches its queue (as when an AF_XDP socket's RX ring is full),
// the rings drop more. The series still holds every frame at its exact bytes (unwrapped frames: the kernel's bytes
// are the measured ones), each interval's losses are both kinds, and the bounds hold the truth.
TEST(OverloadTest, TheKernelsBinsCountTheFramesLostBeforeTheProducers) {
  const EngineConfig c = overloadEngine();
  const Workload w0 = workload(c, 11);
  const std::vector<Frame>& all = w0.all;
  const std::map<int64_t, IntervalReport>& want = w0.want;
  FrameKernelBins kernel(all);
  auto lost_before = [](const Frame& f) { return (f.ts_ns / 1000) % 9 == 4; };
  const auto never = static_cast<uint64_t>(std::count_if(all.begin(), all.end(), lost_before));
  ProducerBackend backend(w0.queues, 256, &kernel, lost_before);
  std::vector<PortSnapshot> snaps;
  auto r = runSlowed(backend, c, &snaps);
  ASSERT_TRUE(r.ok()) << r.status();
  const PortResult& p = r->ports[0];
  ASSERT_GT(never, 0u);
  EXPECT_GT(kernel.reads, 0u);
  uint64_t lost = 0, kernel_lost = 0, bounded = 0, microbursts_bounded = 0;
  for (const PortSnapshot& s : snaps) {
    SCOPED_TRACE(absl::StrCat("interval at ", s.interval.start_ns));
    ASSERT_TRUE(s.bounds.has_value());
    const IntervalBounds& b = *s.bounds;
    lost += b.lost;
    kernel_lost += b.kernel_lost;
    EXPECT_EQ(b.bytes_unsure, 0u);  // unwrapped: exact bytes
    auto it = want.find(s.interval.start_ns);
    if (it == want.end()) {
      EXPECT_EQ(b.packets, 0u);
      continue;
    }
    const IntervalReport& w = it->second;
    EXPECT_EQ(b.packets, w.port.packets);
    EXPECT_EQ(b.bytes, w.port.bytes);
    EXPECT_EQ(b.lost, w.port.packets - s.interval.port.packets);
    EXPECT_EQ(b.degraded(), b.lost > 0 || !b.envelope_bounded.empty());
    if (!b.degraded()) continue;
    for (size_t i = 0; i < c.scales_ns.size(); ++i) {
      if (!w.port.exact[i] || !b.envelope_bounded[i]) continue;
      EXPECT_LE(b.envelope_bytes[i].first, w.port.envelope_bytes[i]);
      EXPECT_GE(b.envelope_bytes[i].second, w.port.envelope_bytes[i]);
      EXPECT_LE(b.envelope_bytes[i].second - b.envelope_bytes[i].first, 200'000u);
      ++bounded;
    }
    microbursts_bounded += microburstBoundsHold(b, w0.bursts, s.interval);
  }
  EXPECT_EQ(kernel_lost, never);  // every frame lost before the producers, once
  EXPECT_EQ(lost, never + p.ledger.ring_drops);
  EXPECT_EQ(p.series_packets, all.size());
  EXPECT_EQ(p.series_kernel_lost, never);
  EXPECT_GT(bounded, 0u);
  EXPECT_GT(microbursts_bounded, 0u);
}

// Wrapped frames (an ERSPAN or VXLAN mirror): the kernel counts a lost frame's captured (outer) bytes and the
// series cannot know its measured (inner) ones, so the interval's bytes and figures are bounds between "the lost
// frames held nothing" and "all of their captured bytes": they hold the truth, and say the bytes are unsure.
TEST(PortBinsTest, WrappedFramesLostBeforeTheProducersAreBoundedByTheirCapturedBytes) {
  EngineConfig c = overloadEngine();
  const std::vector<Frame> all = makeFrames(4'000, 5);
  constexpr uint32_t kWrap = 50;  // the mirror's outer headers
  FrameKernelBins kernel(all, kWrap);
  internal::PortBins series(c, 1, &kernel);
  const std::map<int64_t, IntervalReport> want = truth(all, c);
  std::map<int64_t, QueueBin> parts;  // what the producer saw: every frame but one in five
  uint64_t never = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i % 5 == 2) {
      ++never;
      continue;
    }
    QueueBin& b = parts[all[i].ts_ns / kQueueBinNs];
    b.start_ns = all[i].ts_ns - all[i].ts_ns % kQueueBinNs;
    ++b.packets;
    b.bytes += all[i].wire_len;
    b.raw_bytes += all[i].wire_len + kWrap;
  }
  for (const auto& [i, b] : parts) series.add(0, b);
  uint64_t kernel_lost = 0, checked = 0;
  for (const auto& [start, w] : want) {
    SCOPED_TRACE(absl::StrCat("interval at ", start));
    IntervalReport r;  // the analysis saw nothing it could vouch for: every figure from the series
    r.start_ns = w.start_ns;
    r.end_ns = w.end_ns;
    r.baseline_ns = w.baseline_ns;
    r.port.envelope_bytes.assign(c.scales_ns.size(), 0);
    const IntervalBounds b = series.close(r);
    kernel_lost += b.kernel_lost;
    EXPECT_EQ(b.packets, w.port.packets);
    EXPECT_LE(b.bytes, w.port.bytes);
    EXPECT_GE(b.bytes + b.bytes_unsure, w.port.bytes);
    if (b.kernel_lost == 0) continue;
    EXPECT_GT(b.bytes_unsure, 0u);
    ASSERT_TRUE(b.degraded());
    for (size_t s = 0; s < c.scales_ns.size(); ++s) {
      if (!w.port.exact[s] || !b.envelope_bounded[s]) continue;
      EXPECT_LE(b.envelope_bytes[s].first, w.port.envelope_bytes[s]);
      EXPECT_GE(b.envelope_bytes[s].second, w.port.envelope_bytes[s]);
      ++checked;
    }
  }
  EXPECT_EQ(kernel_lost, never);
  EXPECT_GT(checked, 0u);
}

// The microburst bounds' arithmetic on a series laid out by hand (docs/reliability.md): at 10 Gbit/s, τ = 100 µs
// and θ = 0.5, a microburst needs 62,500 bytes within 100 µs. A bin holding that is surely in one; a lone busy bin
// makes at most one (its frames only arrive, then only leave); two bins each short of it may hold one or, with
// frames leaving in between, one per arrival.
TEST(PortBinsTest, MicroburstsAreBoundedFromTheSeriesWhenALossLiesWithinTheirScale) {
  const EngineConfig c = overloadEngine();
  internal::PortBins series(c, 1);
  const int64_t t0 = 1'795'294'232'000'000'000;  // an interval's start
  auto bin = [&](int64_t i, uint32_t packets, uint64_t bytes, uint32_t lost) {
    QueueBin b;
    b.start_ns = t0 + i * kQueueBinNs;
    b.packets = packets;
    b.bytes = b.raw_bytes = bytes;
    b.lost = lost;
    b.lost_bytes = lost * (bytes / packets);
    series.add(0, b);
  };
  bin(10, 70, 100'000, 5);  // surely a microburst, and the loss
  bin(20, 50, 70'000, 0);   // surely another: bins 12..19 are surely outside any
  bin(30, 40, 40'000, 0);   // neither surely in nor outside: 80,000 bytes within two bins
  bin(31, 40, 40'000, 0);
  bin(150, 1, 1'000, 0);  // the next interval: no loss within τ of it
  IntervalReport r;
  r.start_ns = t0;
  r.end_ns = t0 + c.report_interval_ns;
  r.baseline_ns = c.baseline_ns;
  r.port.envelope_bytes.assign(c.scales_ns.size(), 0);
  const IntervalBounds b = series.close(r);
  ASSERT_TRUE(b.degraded());
  ASSERT_TRUE(b.microbursts_bounded);
  // At least the two sure ones; at most one each in the runs at bins 10-11 and 20-21, and in bin 31 (bin 30's
  // windows hold 40,000 bytes at most: surely outside) one per arrival of its 40 frames (a departure of bin 30's
  // frames could come before each).
  EXPECT_EQ(b.microbursts.first, 2u);
  EXPECT_EQ(b.microbursts.second, 1u + 1u + 40u);

  r.start_ns = r.end_ns;
  r.end_ns += c.report_interval_ns;
  const IntervalBounds next = series.close(r);
  EXPECT_TRUE(next.degraded());  // the 10 ms scale's windows reach the loss
  EXPECT_FALSE(next.microbursts_bounded);
}

}  // namespace
}  // namespace burstscope
