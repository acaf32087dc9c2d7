// The parts of the capture seam every backend shares: the queue producer and the counters it publishes.
#include <thread>

#include "burstscope/capture.h"

namespace burstscope {

void QueueCounters::publishDecode(const DecodeStats& s) {
  for (int i = 0; i < kDecodeErrorCount; ++i) decode_errors[i].store(s.errors[i], std::memory_order_relaxed);
  non_ip.store(s.non_ip, std::memory_order_relaxed);
  encapsulated.store(s.encapsulated, std::memory_order_relaxed);
  mirror_seq_gaps.store(s.mirror_seq_gaps, std::memory_order_relaxed);
  mirror_seq_reorders.store(s.mirror_seq_reorders, std::memory_order_relaxed);
}

DecodeStats QueueCounters::decode() const {
  DecodeStats s;
  for (int i = 0; i < kDecodeErrorCount; ++i) s.errors[i] = decode_errors[i].load(std::memory_order_relaxed);
  s.non_ip = non_ip.load(std::memory_order_relaxed);
  s.encapsulated = encapsulated.load(std::memory_order_relaxed);
  s.mirror_seq_gaps = mirror_seq_gaps.load(std::memory_order_relaxed);
  s.mirror_seq_reorders = mirror_seq_reorders.load(std::memory_order_relaxed);
  return s;
}

void QueueCounters::publishOrder(const Reorderer::Counts& c) {
  reordered.store(c.reordered, std::memory_order_relaxed);
  clamped.store(c.clamped, std::memory_order_relaxed);
  max_lateness_ns.store(c.max_lateness_ns, std::memory_order_relaxed);
  clock_steps_back.store(c.clock_steps_back, std::memory_order_relaxed);
  clock_shift_ns.store(c.clock_shift_ns, std::memory_order_relaxed);
}

Reorderer::Counts QueueCounters::order() const {
  return {reordered.load(std::memory_order_relaxed), clamped.load(std::memory_order_relaxed),
          max_lateness_ns.load(std::memory_order_relaxed), clock_steps_back.load(std::memory_order_relaxed),
          clock_shift_ns.load(std::memory_order_relaxed)};
}

uint64_t DeviceStats::dropStagesTotal() const {
  uint64_t n = 0;
  for (const auto& [stage, v] : drop_stages) n += v;
  return n;
}

DecodeStats CaptureSource::decodeStats(size_t port) const {
  DecodeStats s;
  for (const QueueCounters* q : ports()[port].counters) s.merge(q->decode());
  return s;
}

absl::Status CaptureSource::setFrameTap(size_t /*port*/, size_t /*queue*/, FrameTap* /*tap*/) {
  return absl::UnimplementedError(name() + " capture: the flight recorder is not available with it");
}

QueueProducer::QueueProducer(const DecoderConfig& decoder, size_t ring_capacity, bool lossless)
    : decoder_(decoder), ring_(ring_capacity), lossless_(lossless), bins_(lossless ? 2 : kBinChannel) {
  // A live queue's RX thread must not take the rings' page faults in its first burst (about 1,300 for 64 Ki
  // records); a file's reading thread takes them as it fills the ring, and a short file never touches all of it.
  if (!lossless_) {
    ring_.prefault();
    bins_.prefault();
  }
}

void QueueProducer::pushBin() {
  if (bin_.packets == 0) return;
  bin_.channel_drops = bin_drops_;
  if (bins_.enqueue({&bin_, 1}) == 0) {
    ++bin_drops_;
    counters_.bin_drops.store(bin_drops_, std::memory_order_relaxed);
  }
  bin_.packets = bin_.lost = 0;
  bin_.bytes = bin_.lost_bytes = bin_.raw_bytes = 0;
}

void QueueProducer::rollBin(int64_t ts_ns) {
  pushBin();
  bin_.start_ns = ts_ns - ts_ns % kQueueBinNs;  // capture timestamps are positive
  bin_end_ = bin_.start_ns + kQueueBinNs;
}

size_t QueueProducer::flush(const std::atomic<bool>* stop) {
  const size_t added = n_ + dropped_;
  if (added == 0) return 0;
  // Counted as received before any of them can be taken from the ring, and a drop only after the received
  // count that holds it: a reader taking drops, then received (both acquire) after the worker's analysed count
  // always finds analysed + drops <= received.
  received_ += added;
  counters_.received.store(received_, std::memory_order_release);
  size_t dropped = dropped_;
  if (order_) {
    for (size_t i = 0; i < n_; ++i) order_->pushHeld(pending_[i]);
    order_->takeReleased([&](std::span<const PacketRecord> s) { dropped += s.size() - enqueueWaiting(s, stop); });
    counters_.publishOrder(order_->counts());
  } else if (lossless_) {
    dropped += n_ - enqueueWaiting({pending_.data(), n_}, stop);
  } else {
#if defined(__x86_64__)
    if (stream_) _mm_sfence();  // the records' streaming stores are seen before the publish that hands them over
#endif
    ring_.publish(n_);
    room_ -= n_;
  }
  ring_drops_ += dropped;
  n_ = 0;
  dropped_ = 0;
  counters_.ring_drops.store(ring_drops_, std::memory_order_release);
  if ((++batches_ & 63) == 0) counters_.publishDecode(decoder_.stats());
  return dropped;
}

size_t QueueProducer::enqueueWaiting(std::span<const PacketRecord> records, const std::atomic<bool>* stop) {
  size_t done = ring_.enqueue(records);
  // A file loses nothing by waiting for the worker; a stop request ends the wait (and the run). The wait is a
  // nap, not a spin: reading is cheaper than analysing, so the ring is full for most of a file's run, and a
  // reader that yielded in a loop burnt a core in system calls meanwhile (the core that --workers 2's second
  // worker, or anything else on the machine, would have had). The ring holds milliseconds of the worker's work
  // (64 Ki records at 60-600 ns each), so a nap of kNap with its wake-up latency never lets it run dry.
  constexpr auto kNap = std::chrono::microseconds(100);
  while (done < records.size() && !(stop && stop->load(std::memory_order_relaxed))) {
    std::this_thread::sleep_for(kNap);
    ++full_waits_;
    done += ring_.enqueue(records.subspan(done));
  }
  return done;
}

bool QueueProducer::orderInTime(int64_t horizon_ns) {
  if (!lossless_ || received_ + n_ > 0) return false;  // held records and their counts would be lost
  order_.emplace(horizon_ns);
  return true;
}

size_t QueueProducer::releaseHeld(const std::atomic<bool>* stop) {
  const size_t dropped = flush(stop);
  if (!order_) return dropped;
  order_->releaseHeld();
  size_t lost = 0;
  order_->takeReleased([&](std::span<const PacketRecord> s) { lost += s.size() - enqueueWaiting(s, stop); });
  counters_.publishOrder(order_->counts());
  ring_drops_ += lost;
  counters_.ring_drops.store(ring_drops_, std::memory_order_release);
  return dropped + lost;
}

void QueueProducer::tick(int64_t watermark_ns) {
  // The open bin's frames so far go to the worker before the watermark that lets it close their interval (later
  // frames of the same bin follow in another part); the ring's release of the tick publishes the bin with it.
  if (!lossless_) pushBin();
  flush();  // a watermark must never overtake the records it promises are older
  counters_.publishDecode(decoder_.stats());
  if (watermark_ns == INT64_MIN || order_) return;  // an ordered queue's worker takes no watermark
  PacketRecord t;
  t.ts_ns = watermark_ns;
  t.flags = kRecordTick;
  ring_.enqueue({&t, 1});
  room_ = 0;  // the tick took a slot: read the free slots again at the next add
}

}  // namespace burstscope
