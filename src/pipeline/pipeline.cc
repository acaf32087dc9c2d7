#include "src/pipeline/pipeline.h"

#include <array>
#include <thread>

#include "burstscope/ring.h"
#include "burstscope/status.h"

namespace burstscope {
namespace {

constexpr size_t kBatch = 64;

// Runs on the capture thread: decodes each frame into a record and hands records to the ring in batches.
class CaptureStage final : public FrameSink {
 public:
  CaptureStage(const PipelineConfig& cfg, SpscRing<PacketRecord>& ring)
      : decoder_(cfg.decoder), ring_(ring), lossless_(cfg.lossless) {}

  void onFrame(const Frame& f) override {
    PacketRecord& r = batch_[n_++];
    decoder_.decode(f.data, f.wire_len, &r);
    r.ts_ns = f.ts_ns;
    ++received_;
    if (n_ == kBatch) flush();
  }

  void flush() {
    size_t done = ring_.enqueue({batch_.data(), n_});
    while (lossless_ && done < n_) {
      std::this_thread::yield();
      done += ring_.enqueue({batch_.data() + done, n_ - done});
    }
    drops_ += n_ - done;
    n_ = 0;
  }

  const DecodeStats& decodeStats() const { return decoder_.stats(); }
  uint64_t received() const { return received_; }
  uint64_t drops() const { return drops_; }

 private:
  Decoder decoder_;
  SpscRing<PacketRecord>& ring_;
  bool lossless_;
  std::array<PacketRecord, kBatch> batch_;
  size_t n_ = 0;
  uint64_t received_ = 0;
  uint64_t drops_ = 0;
};

}  // namespace

absl::StatusOr<PipelineResult> runPipeline(PacketSource& source, const PipelineConfig& config,
                                           const std::atomic<bool>& stop) {
  BS_RETURN_IF_ERROR(validateConfig(config.engine));
  SpscRing<PacketRecord> ring(config.ring_capacity);
  CaptureStage capture(config, ring);
  std::atomic<bool> capture_done{false};
  absl::Status source_status;

  std::thread capture_thread([&] {
    source_status = source.run(capture, stop);
    capture.flush();
    capture_done.store(true, std::memory_order_release);
  });

  Engine engine(config.engine);
  Reorderer reorder(config.reorder_horizon_ns);
  uint64_t analysed = 0;
  auto feed = [&](const PacketRecord& r) {
    engine.add(r);
    ++analysed;
  };
  std::array<PacketRecord, kBatch> batch;
  for (;;) {
    // Read the flag before draining, so that nothing enqueued before it was set can be missed.
    const bool done = capture_done.load(std::memory_order_acquire);
    size_t n = ring.dequeue(batch);
    for (size_t i = 0; i < n; ++i) reorder.push(batch[i], feed);
    if (n == 0) {
      if (done) break;
      std::this_thread::yield();
    }
  }
  capture_thread.join();
  BS_RETURN_IF_ERROR(source_status);
  reorder.flush(feed);
  engine.finish();

  PipelineResult r;
  r.engine = engine.result();
  r.decode = capture.decodeStats();
  r.source = source.stats();
  r.ledger = Ledger{capture.received(), analysed, capture.drops()};
  r.reordered = reorder.reordered();
  r.clamped = reorder.clamped();
  r.max_lateness_ns = reorder.maxLatenessNs();
  r.clock_steps_back = reorder.clockStepsBack();
  r.clock_shift_ns = reorder.clockShiftNs();
  return r;
}

}  // namespace burstscope
