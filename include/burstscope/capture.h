// The one seam between capture and everything after it (docs/architecture.md). A capture source has ports;
// a port has queues; each queue's producer thread stamps, decodes and enqueues records into the queue's
// lock-free ring through a QueueProducer, and a live one sends tick records carrying its watermark while idle. What a
// device says about a port comes as data: an ordered list of named stages where frames were lost before RX,
// so that nothing after the seam knows a DPDK or an XDP word. Backends: DPDK and AF_XDP (live, lossy: a full
// ring drops and counts) and pcap files (one lossless queue: the producer waits for room).
#pragma once

#include <time.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "burstscope/decode.h"
#include "burstscope/packet.h"
#include "burstscope/reorder.h"
#include "burstscope/ring.h"

namespace burstscope {

// One 100 µs bin of a live queue's frames, counted by its producer before the ring can drop them (SPEC
// "Overload"): the port's complete series, whatever the analysis loses. A bin can come in several parts (a tick
// hands over the open bin; frames of the same bin after it come in a later part): the worker adds them up.
struct QueueBin {
  int64_t start_ns = 0;     // a multiple of kQueueBinNs
  uint32_t packets = 0;     // frames of the bin (their timestamps in [start_ns, start_ns + kQueueBinNs))
  uint32_t lost = 0;        // of those, dropped after this count (record ring full)
  uint64_t bytes = 0;       // their wire bytes (of the measured frame: the inner one of a mirror encapsulation)
  uint64_t lost_bytes = 0;  // the dropped ones' wire bytes
  uint64_t raw_bytes = 0;   // their wire bytes as captured (the outer frame's: what a kernel's own bins count)
  // Bins the side channel dropped before this one, since the start (a jump says the series has a hole).
  uint64_t channel_drops = 0;
};
inline constexpr int64_t kQueueBinNs = 100'000;

// A port's 100 µs bins kept below the capture, by the kernel (AF_XDP: the XDP program's, SPEC "Overload"):
// every frame the port's queues would take, counted before anything in the kernel can lose it, at its wire
// length as captured (the outer frame's). With them the port's series holds the frames lost before the
// producers too (an AF_XDP socket's full RX ring, a queue without a socket).
struct KernelBinCount {
  int64_t start_ns = 0;  // a multiple of kQueueBinNs, CLOCK_REALTIME: the same reckoning as the frames' timestamps
  uint64_t packets = 0, bytes = 0;
};
class KernelBinSource {
 public:
  virtual ~KernelBinSource() = default;
  // Appends the bins numbered [from, to) (start_ns / kQueueBinNs) that hold frames and adds to `*lost` how many
  // of them the source no longer holds. False when it cannot say now (the capture is not running, or its
  // frames are not timestamped as its bins are): the series then has the producers' bins only.
  virtual bool read(int64_t from, int64_t to, std::vector<KernelBinCount>* out, uint64_t* lost) const = 0;
};

// Written only by the queue's producer thread (relaxed stores), read by anyone.
struct alignas(kCacheLine) QueueCounters {
  std::atomic<uint64_t> received{0};    // frames taken from the queue (ticks are not frames)
  std::atomic<uint64_t> ring_drops{0};  // of those, dropped because the record ring was full
  std::atomic<uint64_t> bin_drops{0};   // 100 µs bins the full side channel dropped (a live queue's series)
  // A queue whose producer puts its records in time order (a file's, QueueProducer::orderInTime): its Reorderer's
  // counts as of the last flush (publishOrder, order()), exact once the producer is done.
  std::atomic<uint64_t> reordered{0}, clamped{0}, clock_steps_back{0};
  std::atomic<int64_t> max_lateness_ns{0}, clock_shift_ns{0};
  // The queue's decoder counts, copied by the producer now and then (every 64 batches, at each tick, at
  // stop), so that the exporter can read them while capture runs without touching the decoder.
  alignas(kCacheLine) std::array<std::atomic<uint64_t>, kDecodeErrorCount> decode_errors{};
  std::atomic<uint64_t> non_ip{0}, encapsulated{0}, mirror_seq_gaps{0}, mirror_seq_reorders{0};

  void publishDecode(const DecodeStats& s);
  DecodeStats decode() const;
  void publishOrder(const Reorderer::Counts& c);
  Reorderer::Counts order() const;
};

// The state of a live port's link, as the backend watches it (docs/live-capture.md "Capture faults"): every
// change is logged once on stderr with its time, counted here, and exported (burstscope_capture_link_*).
struct LinkState {
  bool present = true;      // the device exists (AF_XDP: an interface of the configured name)
  bool up = true;           // administratively up with carrier (DPDK: link status up)
  int64_t since_ns = 0;     // CLOCK_REALTIME of the last change of `up` (capture start if none)
  uint64_t downs = 0;       // times the link went down (or the device went away) since capture began
  uint64_t reattached = 0;  // times capture re-attached to the device (AF_XDP: a re-created interface; DPDK: a reset)
  // Per RX queue: stalled now (its RX thread or lcore makes no progress while it has work: QueueStallWatch in
  // src/capture/common/link_watch.h), and stalls so far.
  std::vector<bool> queue_stalled;
  uint64_t stalls = 0;
  bool operator==(const LinkState&) const = default;
};

// What the device says about a port. A counter the device does not report is nullopt, never 0.
struct DeviceStats {
  // Frames that reached the port since capture began, where the backend can count them (AF_XDP: the XDP
  // program's verdicts plus the NIC's drops before it); when known, seen = received by RX + the drop
  // stages + filtered.
  std::optional<uint64_t> seen;
  // Where frames were lost before RX, in path order: ("nic_missed", n), ("xsk_rx_ring_full", n), ...
  std::vector<std::pair<std::string, uint64_t>> drop_stages;
  uint64_t filtered = 0;                                // left out on purpose by a configured filter
  std::optional<uint64_t> received, bytes;              // the device's own RX count (must equal RX's)
  std::vector<std::optional<uint64_t>> queue_received;  // per RX queue
  std::vector<std::pair<std::string, uint64_t>> extra;  // the driver's own counters, for the record
  std::optional<LinkState> link;                        // live ports: the link as watched (files: none)
  uint64_t dropStagesTotal() const;
};

// One input file of a capture read from files, as it was read.
struct InputFileStats {
  std::string path;                     // as given; "-" is standard input
  std::string format;                   // "pcap" or "pcapng"
  std::string compression;              // "none", "gzip" or "zstd" (found from the content)
  std::vector<std::string> link_types;  // linkTypeName() of its interfaces, in order of first use
  uint64_t packets = 0;                 // records read, duplicates included
  int64_t first_ns = 0, last_ns = 0;    // its earliest and latest record time (0, 0: no record)
};

// What a file source counted beside the frames it delivered.
struct SourceStats {
  uint64_t truncated_records = 0;   // e.g. a file cut off mid-record: that record is lost, and counted here
  uint64_t bad_timestamps = 0;      // sub-second field of a second or more (carried), out of range or absent
  uint64_t duplicates_removed = 0;  // records left out as copies of one seen within the dedup window
  int64_t dedup_window_ns = 0;      // 0: duplicates are not looked for
  std::vector<InputFileStats> files;
  bool overlap = true;                // every file's time range meets another's (one file: true)
  std::vector<std::string> warnings;  // the source's own words about non-fatal read problems
};

// How a source timestamps packets, in words for the docs, the summary and the info metric.
struct TimestampInfo {
  std::string source;              // "nic", "tsc", "kernel", "pcap_file"
  std::string description;         // e.g. "TSC 2.45 GHz per RX burst, re-synchronised to CLOCK_REALTIME every 1 s"
  double error_bound_ns = 0;       // stated bound on |recorded - true arrival| beyond the source's own sync
  int64_t max_resync_step_ns = 0;  // largest correction seen at a re-synchronisation (tsc, nic, kernel)
};

// A copy of each frame's first bytes on the capture path, for the flight recorder (src/recorder). Called by the
// queue's producer thread only, before the frame is decoded; it must never block.
class FrameTap {
 public:
  virtual ~FrameTap() = default;
  virtual void onFrame(std::span<const uint8_t> data, uint32_t wire_len, int64_t ts_ns, LinkType link) = 0;
};

struct CapturePort {
  std::string name;
  double link_bps = 0;                         // capacity of the mirrored link; 0: the configured default
  std::vector<SpscRing<PacketRecord>*> rings;  // one per queue
  std::vector<const QueueCounters*> counters;  // one per queue
  // One per queue: its 100 µs bins, counted before its ring (QueueBin); none (nullptr) for a lossless queue.
  std::vector<SpscRing<QueueBin>*> bins;
  // One queue that loses nothing and whose producer puts its records in time order itself, with clock-step handling
  // (a capture file: QueueProducer::orderInTime, in the reading thread): the worker reads them where the ring holds
  // them, and its reordering counts are the queue's (QueueCounters).
  bool ordered_lossless = false;
  // The kernel's own bins of the port, read by its worker at each interval close (nullptr: none).
  const KernelBinSource* kernel_bins = nullptr;
};

class CaptureSource {
 public:
  virtual ~CaptureSource() = default;
  virtual std::string name() const = 0;  // "dpdk", "af_xdp", "pcap"
  virtual const std::vector<CapturePort>& ports() const = 0;
  virtual absl::Status start() = 0;
  // Stops the producers and returns once every one has pushed its last records (and, a live queue, a final tick).
  virtual void stop() = 0;
  // True once a finite source (a file) has delivered everything; live sources never finish.
  virtual bool finished() const { return false; }
  // Whether finished() can ever turn true (the control thread then looks at it often, to end a file's run at
  // once).
  virtual bool finite() const { return false; }
  // An error met after start (a file that could not be read after all); checked after stop().
  virtual absl::Status status() const { return absl::OkStatus(); }
  // Any thread, any time (never on a packet path: a device read can be slow).
  virtual DeviceStats deviceStats(size_t port) const = 0;
  // The link as the backend watches it (DeviceStats::link), cheaply (a copy under a lock): the control thread
  // looks at it between interval closes, so that a fault is exported while no interval closes (a stalled RX
  // queue holds the port's intervals back). None for a source without a watched link.
  virtual std::optional<LinkState> linkState(size_t /*port*/) const { return std::nullopt; }
  // As last published by the producers: a little behind while running, exact after stop(). The port's
  // queue counters summed, unless a source knows better.
  virtual DecodeStats decodeStats(size_t port) const;
  virtual SourceStats sourceStats() const { return {}; }
  virtual TimestampInfo timestampInfo() const = 0;
  // Lines worth telling the operator at start (e.g. the XDP mode taken, a stale program replaced).
  virtual std::vector<std::string> notes() const { return {}; }
  // Before start(), for a source whose ports are ordered_lossless: the horizon within which its producers put
  // records back in time order (PipelineConfig::reorder_horizon_ns; until set, 0). An error once started.
  virtual absl::Status setReorderHorizon(int64_t /*horizon_ns*/) { return absl::OkStatus(); }
  // Before start(): every frame of the queue also goes to `tap` (the flight recorder).
  virtual absl::Status setFrameTap(size_t port, size_t queue, FrameTap* tap);
};

// Copies a decoded record into its ring slot with streaming (non-temporal) stores: whole cache lines written
// without reading them first. The slot's lines were last read by the worker's core a lap of the ring ago: on AMD
// EPYC, decoded into in place (without fetching the slot ahead), every store waited for its line to be fetched, the
// stores queued up and the RX thread stalled (perf: most of the decoder's samples; bench/README.md: the DPDK trace
// loop went from 8.7 to 14.1 M packets/s). Elsewhere the RX lcores decode in place, each slot fetched ahead, which
// was faster on Intel (dpdk_backend.cc streamsRecords()). The record is read back from `r`, never from the slot,
// which would wait for the streaming stores to reach memory.
// The stores are ordered before the ring's publish by the sfence in QueueProducer::flush(). The sanitizers do not
// see streaming stores, so their builds (GCC's and clang's) copy plainly and check the slots' writes as before.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define BURSTSCOPE_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define BURSTSCOPE_SANITIZED 1
#endif
inline void streamRecord(PacketRecord* slot, const PacketRecord& r) {
  static_assert(sizeof(PacketRecord) % 8 == 0 && alignof(PacketRecord) == 8);
#if defined(__x86_64__) && !defined(BURSTSCOPE_SANITIZED)
  auto* dst = reinterpret_cast<long long*>(slot);
  const auto* src = reinterpret_cast<const unsigned char*>(&r);
  for (size_t w = 0; w < sizeof(PacketRecord) / 8; ++w) {
    long long word;
    std::memcpy(&word, src + 8 * w, 8);  // the record's words as bytes (its fields are other types)
    _mm_stream_si64(dst + w, word);
  }
#else
  *slot = r;
#endif
}

// One queue's producer side, the same for every backend: decode each frame into the pending batch with its
// timestamp, hand the batch to the ring (lossy: drop and count what does not fit; lossless: wait), count,
// publish the decoder's counts every 64 batches, and send ticks with the queue's watermark while idle.
// Used by one thread only.
class QueueProducer {
 public:
  QueueProducer(const DecoderConfig& decoder, size_t ring_capacity, bool lossless = false);

  // Decodes one frame into the next pending record. At most kMaxBatch pending records; flush() before. A live
  // (lossy) queue decodes straight into the ring's next free slot (or, streaming, into a scratch record streamed
  // into it), published at flush(); when the ring has no free slot the frame is decoded into the scratch record
  // (its decode counted) and dropped at flush(). A lossless queue (a file) stages its records and waits for room
  // at flush().
  void add(std::span<const uint8_t> data, uint32_t wire_len, int64_t ts_ns, LinkType link = LinkType::kEthernet) {
    if (tap_ != nullptr) [[unlikely]]
      tap_->onFrame(data, wire_len, ts_ns, link);
    if (n_ + dropped_ == 0) first_ts_ = ts_ns;
    last_ts_ = ts_ns;
    PacketRecord* r;
    // The measured bytes, read from the record where it was decoded: never back from a slot streamed into (the
    // load would wait for the streaming store to reach memory).
    uint32_t measured;
    if (lossless_) {
      r = &pending_[n_++];
      decoder_.decode(data, wire_len, r, link);
      r->ts_ns = ts_ns;
      measured = r->wire_len;
    } else if (stream_) {
      // Decoded in scratch_ (in L1), then streamed into the slot (streamRecord).
      decoder_.decode(data, wire_len, &scratch_, link);
      scratch_.ts_ns = ts_ns;
      measured = scratch_.wire_len;
      if (n_ == room_) room_ = ring_.reserve(n_ + 1);
      if (n_ < room_) {
        r = &ring_.reserved(n_++);
        streamRecord(r, scratch_);
      } else {
        r = &scratch_;
        ++dropped_;
      }
    } else {
      if (n_ == room_) room_ = ring_.reserve(n_ + 1);
      // The slot kSlotsAhead records on is fetched now (both lines a record may span), so that the decoder's stores
      // into it do not wait for lines the worker's core read a lap ago (bench/README.md, issue 41's twenty-eighth
      // session: with a ring far larger than the last-level cache, 2-4% of the RX lcore's rate). Without -mprfchw GCC
      // emits prefetcht0 (no intent to write), which every x86-64 runs; `prefetchw` measured the same.
      if (n_ + kSlotsAhead < room_) {
        const char* ahead = reinterpret_cast<const char*>(&ring_.reserved(n_ + kSlotsAhead));
        __builtin_prefetch(ahead, 1);
        __builtin_prefetch(ahead + sizeof(PacketRecord) - 1, 1);
      }
      if (n_ < room_) {
        r = &ring_.reserved(n_++);
      } else {
        r = &scratch_;
        ++dropped_;
      }
      decoder_.decode(data, wire_len, r, link);
      r->ts_ns = ts_ns;
      measured = r->wire_len;
    }
    if (!lossless_) {
      // The 100 µs bin, before anything can be lost after it (SPEC "Overload"): the measured frame's bytes.
      if (ts_ns >= bin_end_ || ts_ns < bin_.start_ns) [[unlikely]]
        rollBin(ts_ns);
      ++bin_.packets;
      bin_.bytes += measured;
      bin_.raw_bytes += wire_len;
      if (r == &scratch_) [[unlikely]] {
        ++bin_.lost;
        bin_.lost_bytes += measured;
      }
    }
  }
  // Frames added since the last flush, and the first and last of their timestamps.
  size_t pendingCount() const { return n_ + dropped_; }
  size_t pendingDrops() const { return dropped_; }  // of those, the ones that found the ring full
  int64_t pendingFirstTs() const { return first_ts_; }
  int64_t pendingLastTs() const { return last_ts_; }
  // Enqueues the pending records; returns how many were dropped (lossless: only those a stop request left out). A
  // queue ordered in time (orderInTime) enqueues what its Reorderer released, and holds the rest.
  size_t flush(const std::atomic<bool>* stop = nullptr);
  // A lossless queue, before the first add(): its records are put back in time order here, within `horizon_ns`
  // (Reorderer::pushHeld: ties in arrival order, a late record clamped, a clock's step back shifted on), before they
  // go into the ring, so that its worker reads them where the ring holds them. A file's reading thread does this
  // (it has time to spare: the worker is the wall of `analyze`; bench/README.md, issue 41). Such a queue pushes no
  // tick records: its records' order is final, and its worker needs no watermark. False (nothing changed) for a
  // live queue, or once a frame was added.
  bool orderInTime(int64_t horizon_ns);
  // An ordered queue at its input's end: flushes what is pending, then enqueues everything its Reorderer still holds.
  // Returns how many records were dropped (only those a stop request left out).
  size_t releaseHeld(const std::atomic<bool>* stop = nullptr);
  // Flushes what is pending, publishes the decoder's counts and pushes a tick record: nothing older than
  // `watermark_ns` will come from this queue. A tick that finds the ring full is dropped (the next one
  // supersedes it).
  void tick(int64_t watermark_ns);

  static constexpr size_t kMaxBatch = 1024;
  static constexpr size_t kSlotsAhead = 6;  // a live in-place queue's slot prefetch distance, in records
  // Bins the side channel holds: 0.8 s of a busy queue's bins (the worker drains it at every poll).
  static constexpr size_t kBinChannel = 8192;
  SpscRing<PacketRecord>& ring() { return ring_; }
  // The 100 µs bins' side channel (a live queue's only; a lossless one counts none).
  SpscRing<QueueBin>* bins() { return lossless_ ? nullptr : &bins_; }
  SpscRing<QueueBin>& binChannel() { return bins_; }  // the same, for a live queue (a lossless one's stays empty)
  const QueueCounters& counters() const { return counters_; }
  const DecodeStats& decodeStats() const { return decoder_.stats(); }
  uint64_t received() const { return received_; }
  // Lossless: the naps flush() took waiting for room in the ring (the worker behind the reader).
  uint64_t fullWaits() const { return full_waits_; }
  void setFrameTap(FrameTap* tap) { tap_ = tap; }
  // Before the first add(), a live queue only: its records go into the ring's slots by streaming stores
  // (streamRecord). Set by the DPDK RX lcores on AMD CPUs (dpdk_backend.cc says why only there). AF_XDP's RX threads
  // decode in place: on a veth at about 1 M packets/s streaming did not make them cheaper (bench/README.md).
  void streamIntoSlots(bool on) {
#if defined(__x86_64__)
    if (stream_) _mm_sfence();  // records streamed before a switch off are fenced all the same
#endif
    stream_ = on && !lossless_;
  }

 private:
  Decoder decoder_;
  FrameTap* tap_ = nullptr;
  SpscRing<PacketRecord> ring_;
  QueueCounters counters_;
  bool lossless_;
  bool stream_ = false;                          // streamIntoSlots()
  std::array<PacketRecord, kMaxBatch> pending_;  // lossless: staged records
  std::optional<Reorderer> order_;               // orderInTime(): where a lossless queue's records are put in order
  // Lossless: enqueues `records`, waiting for room; a stop request ends the wait. Returns how many went in.
  size_t enqueueWaiting(std::span<const PacketRecord> records, const std::atomic<bool>* stop);
  PacketRecord scratch_;  // lossy: where a frame that finds the ring full is decoded (streaming: every frame)
  size_t n_ = 0;          // records written (staged, or in reserved ring slots)
  size_t dropped_ = 0;    // lossy: frames that found the ring full since the last flush
  size_t room_ = 0;       // lossy: free ring slots from the producer's index, as last read
  int64_t first_ts_ = 0, last_ts_ = 0;
  uint64_t received_ = 0, ring_drops_ = 0, batches_ = 0, full_waits_ = 0;
  // Hands the open bin (if it holds frames) to the side channel, or drops and counts it when that is full.
  void pushBin();
  // A frame outside the open bin (later, or earlier: a queue's clock stepping back): hand the open bin over and
  // open the frame's own (a part for a bin whose interval already closed is counted late by the worker).
  void rollBin(int64_t ts_ns);
  SpscRing<QueueBin> bins_;
  QueueBin bin_;
  int64_t bin_end_ = INT64_MIN;  // the open bin's end; INT64_MIN: none open yet
  uint64_t bin_drops_ = 0;
};

// A backend's setFrameTap over its queues (each with `port_index` and a QueueProducer `producer`, in port and
// queue order): the queue-th queue of `port`.
template <typename Queues>
absl::Status setQueueFrameTap(Queues& queues, size_t port, size_t queue, FrameTap* tap) {
  size_t k = 0;
  for (auto& q : queues) {
    if (q->port_index != port) continue;
    if (k++ == queue) {
      q->producer->setFrameTap(tap);
      return absl::OkStatus();
    }
  }
  return absl::OutOfRangeError("no such capture queue for the flight recorder");
}

// A clock read in nanoseconds (CLOCK_REALTIME: since the epoch).
inline int64_t clockNs(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Raises `max` to `v` if it is larger (several producer threads note their clock steps in one figure).
inline void storeMax(std::atomic<int64_t>& max, int64_t v) {
  int64_t prev = max.load(std::memory_order_relaxed);
  while (v > prev && !max.compare_exchange_weak(prev, v, std::memory_order_relaxed)) {
  }
}

struct FileReadOptions {
  // Drop a record whose duplicate key (docs/analyze.md: addresses, IP ID, transport header, length) was
  // seen less than this long before: the same packet captured at both ends of a link. 0: off.
  int64_t dedup_window_ns = 0;
};

// Capture files as one capture, merged by time (a k-way merge on timestamps; each file's own order kept),
// at nanosecond precision, by a thread of their own into one lossless queue. Classic pcap (through
// libpcap) and pcapng (several interfaces, link types and timestamp resolutions), plain or compressed with
// gzip or zstd (found from the content), "-" for standard input; link types Ethernet, Linux cooked v1/v2,
// raw IP, BSD loopback. Errors name the file.
absl::StatusOr<std::unique_ptr<CaptureSource>> openPcapCapture(std::vector<std::string> paths,
                                                               const DecoderConfig& decoder,
                                                               size_t ring_capacity = size_t{1} << 16,
                                                               FileReadOptions options = {});

}  // namespace burstscope
