// The capture-file source: each file read by a FileReader (file_reader.h: libpcap for classic pcap, our
// own for pcapng), the files merged by time into one stream of Frames, duplicates left out on request.
#include <pcap/pcap.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "burstscope/status.h"
#include "src/capture/pcap/file_reader.h"
#include "src/capture/pcap/pcap_reader.h"

namespace burstscope {

void FileReader::noteLinkType(LinkType t) {
  const std::string name = linkTypeName(t);
  if (std::find(stats_.link_types.begin(), stats_.link_types.end(), name) == stats_.link_types.end()) {
    stats_.link_types.push_back(name);
  }
}

void FileReader::warn(const std::string& text) { warnings_.push_back(absl::StrCat(stats_.path, ": ", text)); }

int64_t FileReader::badTimestamp(int64_t carried, const std::string& what) {
  if (bad_timestamps_++ == 0) warn(absl::StrCat(what, "; given the previous record's time, and counted"));
  return carried;
}

// A sub-second field of a second or more (a writer's bug: tv_usec >= 1e6 in a microsecond file) is carried
// into the seconds; both that and an out-of-range time are counted as bad timestamps.
int64_t FileReader::classicTimestamp(int64_t sec, int64_t sub_ns) {
  constexpr int64_t kMaxSeconds = int64_t{1} << 33;  // the year 2242: beyond it, a corrupt record
  // Both bounds keep the sum below in int64: 2^33 s is 8.6e18 ns, and the sub-second field is at most a
  // 32-bit count of microseconds, in ns 4.3e12.
  const bool seconds_ok = sec >= 0 && sec < kMaxSeconds && sub_ns >= 0 && sub_ns < 10'000'000'000'000;
  int64_t ts = seconds_ok ? sec * 1'000'000'000 + sub_ns : 0;
  if (seconds_ok && sub_ns >= 1'000'000'000) {
    if (bad_timestamps_++ == 0) {
      warn(absl::StrCat("a record's timestamp (", sec, " s + ", sub_ns,
                        " ns) has a sub-second field of a second or more; carried, and counted"));
    }
  } else if (!seconds_ok) {
    ts = badTimestamp(last_ts_, absl::StrCat("a record's timestamp (", sec, " s + ", sub_ns, " ns) is out of range"));
  }
  last_ts_ = ts;
  return ts;
}

namespace {

struct PcapCloser {
  void operator()(pcap_t* p) const { pcap_close(p); }
};
using PcapHandle = std::unique_ptr<pcap_t, PcapCloser>;

// Classic pcap through libpcap (both byte orders, µs and ns, the modified formats), at ns precision.
class LibpcapReader final : public FileReader {
 public:
  static absl::StatusOr<std::unique_ptr<FileReader>> open(std::unique_ptr<InputStream> stream) {
    auto r = std::unique_ptr<LibpcapReader>(new LibpcapReader(std::move(stream)));
    const std::string& path = r->stats_.path;
    FILE* f = r->stream_->toFile();
    if (f == nullptr) return errnoStatus(errno, absl::StrCat("cannot read ", path));
    char err[PCAP_ERRBUF_SIZE] = {};
    r->pcap_.reset(pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, err));
    if (!r->pcap_) {
      std::fclose(f);  // libpcap closes the stream only when it took it
      const std::string why = r->stream_->error().empty() ? err : r->stream_->error();
      return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", why));
    }
    const int dlt = pcap_datalink(r->pcap_.get());
    r->link_ = linkTypeFromPcap(static_cast<uint32_t>(dlt));
    if (r->link_ == LinkType::kUnsupported) {
      const char* name = pcap_datalink_val_to_name(dlt);
      return absl::InvalidArgumentError(
          absl::StrCat("cannot analyse ", path, ": link type ", name ? name : "unknown", " (", dlt,
                       ") is not supported; Ethernet, Linux cooked v1/v2, raw IP and BSD loopback are"));
    }
    r->noteLinkType(r->link_);
    return r;
  }

  bool next(FileRecord* r) override {
    pcap_pkthdr* h;
    const u_char* data;
    const int rc = pcap_next_ex(pcap_.get(), &h, &data);
    if (rc == 1) {
      r->ts_ns = classicTimestamp(h->ts.tv_sec, h->ts.tv_usec);  // nanoseconds in tv_usec at this precision
      r->wire_len = h->len;
      r->data = {data, h->caplen};
      r->link = link_;
      return true;
    }
    if (rc == PCAP_ERROR) {
      // libpcap reports a record cut off by the end of the file (or a corrupt header) this way; a broken
      // compressed stream shows as such a cut, and its own words say more.
      ++truncated_records_;
      warn(absl::StrCat(stream_->error().empty() ? pcap_geterr(pcap_.get()) : stream_->error(),
                        " (reading stopped there)"));
    } else if (!stream_->error().empty()) {
      warn(stream_->error());
    }
    if (!stream_->notice().empty()) warn(stream_->notice());
    return false;
  }

 private:
  explicit LibpcapReader(std::unique_ptr<InputStream> s) : stream_(std::move(s)) {
    stats_.path = stream_->path();
    stats_.format = "pcap";
    stats_.compression = stream_->compression();
  }

  std::unique_ptr<InputStream> stream_;  // outlives pcap_ (declared first, destroyed last)
  PcapHandle pcap_;
  LinkType link_ = LinkType::kEthernet;
};

// The key of a record for duplicate suppression: what stays the same when one packet is captured at both
// ends of a link, and differs between packets. IPv4: version and header length, total length, IP ID,
// flags and fragment offset, protocol, addresses (not TTL or DSCP/ECN, which hops rewrite, nor the
// checksum); IPv6: payload length, next header, flow label, addresses; then the first 16 bytes of a TCP
// header without its checksum (ports, sequence and acknowledgement numbers, flags, window) or the UDP
// ports and length (a sender's checksum offload leaves its own capture with a different checksum), and up
// to 16 payload bytes after it. False for a frame that is not IP, or is cut off before its addresses.
bool duplicateKey(const FileRecord& r, uint64_t* key) {
  const std::span<const uint8_t> d = r.data;
  const LinkHeader lh = parseLinkHeader(d, r.link);
  if (lh.error != DecodeError::kNone) return false;
  size_t off = lh.length;
  uint16_t type = lh.ethertype;
  for (int tags = 0; (type == 0x8100 || type == 0x88A8 || type == 0x9100) && tags < Decoder::kMaxVlanTags; ++tags) {
    if (off + 4 > d.size()) return false;
    type = static_cast<uint16_t>(d[off + 2] << 8 | d[off + 3]);
    off += 4;
  }
  return duplicateKeyFromIp(d.subspan(std::min(off, d.size())), type, key);
}

// Remembers each key's first time for `window` ns: a record whose key was seen less than that long before,
// in another file, is a duplicate. Bounded: at most kMaxKeys remembered (the oldest go first beyond that).
class Deduplicator {
 public:
  explicit Deduplicator(int64_t window_ns) : window_(window_ns) {}

  // `file`: which input the record came from. Only a copy from another file is a duplicate: within one
  // capture, equal keys are distinct packets (duplicate ACKs that differ only in TCP options, say).
  bool duplicate(const FileRecord& r, size_t file) {
    uint64_t key;
    if (!duplicateKey(r, &key)) return false;
    while (!order_.empty() && (order_.front().first < r.ts_ns - window_ || order_.size() >= kMaxKeys)) {
      auto it = seen_.find(order_.front().second);
      if (it != seen_.end() && it->second.ts == order_.front().first) seen_.erase(it);
      order_.pop_front();
    }
    auto [it, inserted] = seen_.try_emplace(key, Seen{r.ts_ns, file});
    if (!inserted) {
      const int64_t apart = r.ts_ns > it->second.ts ? r.ts_ns - it->second.ts : it->second.ts - r.ts_ns;
      if (apart < window_ && it->second.file != file) return true;
      it->second = Seen{r.ts_ns, file};
    }
    order_.emplace_back(r.ts_ns, key);
    return false;
  }

 private:
  static constexpr size_t kMaxKeys = size_t{1} << 22;
  int64_t window_;
  struct Seen {
    int64_t ts;
    size_t file;
  };
  absl::flat_hash_map<uint64_t, Seen> seen_;
  std::deque<std::pair<int64_t, uint64_t>> order_;
};

std::string utcTime(int64_t ns) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%E9S", absl::FromUnixNanos(ns), absl::UTCTimeZone());
}

// The files merged by time: the file whose next record is earliest goes next (ties: the file given
// first), so each file's own order is kept and the merged stream is in time order wherever the files are.
// A file is read on while its records come no later than the next file's head, without touching the heap.
class MergedFileSource final : public PacketSource {
 public:
  MergedFileSource(std::vector<std::unique_ptr<FileReader>> readers, FileReadOptions options)
      : readers_(std::move(readers)), options_(options) {
    if (options_.dedup_window_ns > 0) dedup_.emplace(options_.dedup_window_ns);
  }

  absl::Status run(FrameSink& sink, const std::atomic<bool>& stop) override {
    const size_t k = readers_.size();
    heads_.resize(k);
    return k <= kScanFiles ? mergeByScan(sink, stop) : mergeByHeap(sink, stop);
  }

  SourceStats stats() const override { return stats_; }

 private:
  // Up to this many files, the earliest head is found by a scan of their times (a few compares in one
  // cache line, cheaper than a heap's sifting); beyond it, by a heap.
  static constexpr size_t kScanFiles = 16;
  static constexpr int64_t kDone = INT64_MAX;  // no record left (a record's time is below 2^63: 2^33 s)

  absl::Status mergeByScan(FrameSink& sink, const std::atomic<bool>& stop) {
    const size_t k = readers_.size();
    std::vector<int64_t> ts(k);
    for (size_t i = 0; i < k; ++i) ts[i] = readers_[i]->next(&heads_[i]) ? heads_[i].ts_ns : kDone;
    for (;;) {
      // The earliest head and the next earliest (ties: the file given first).
      size_t best = 0, second = k;
      for (size_t i = 1; i < k; ++i) {
        if (ts[i] < ts[best]) {
          second = best;
          best = i;
        } else if (second == k || ts[i] < ts[second]) {
          second = i;
        }
      }
      if (ts[best] == kDone) return finish();
      const int64_t limit = second == k ? kDone : ts[second];
      // Read on in this file while its records come before the other files' heads.
      do {
        deliver(best, sink);
        if (stop.load(std::memory_order_relaxed)) return finish();
        ts[best] = readers_[best]->next(&heads_[best]) ? heads_[best].ts_ns : kDone;
      } while (ts[best] < limit || (ts[best] == limit && ts[best] != kDone && best < second));
    }
  }

  absl::Status mergeByHeap(FrameSink& sink, const std::atomic<bool>& stop) {
    const size_t k = readers_.size();
    std::vector<size_t> heap;
    for (size_t i = 0; i < k; ++i) {
      if (readers_[i]->next(&heads_[i])) heap.push_back(i);
    }
    auto later = [this](size_t a, size_t b) {  // std::*_heap keep the greatest first: "greatest" = earliest
      return heads_[a].ts_ns != heads_[b].ts_ns ? heads_[a].ts_ns > heads_[b].ts_ns : a > b;
    };
    std::make_heap(heap.begin(), heap.end(), later);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      const size_t i = heap.back();
      heap.pop_back();
      bool more;
      do {
        deliver(i, sink);
        if (stop.load(std::memory_order_relaxed)) return finish();
        more = readers_[i]->next(&heads_[i]);
      } while (more && (heap.empty() || !later(i, heap.front())));
      if (more) {
        heap.push_back(i);
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
    return finish();
  }

  void deliver(size_t i, FrameSink& sink) {
    const FileRecord& r = heads_[i];
    InputFileStats& f = readers_[i]->stats();
    if (f.packets++ == 0) f.first_ns = f.last_ns = r.ts_ns;
    f.first_ns = std::min(f.first_ns, r.ts_ns);
    f.last_ns = std::max(f.last_ns, r.ts_ns);
    if (dedup_ && dedup_->duplicate(r, i)) {
      ++stats_.duplicates_removed;
      return;
    }
    sink.onFrame(Frame{r.ts_ns, r.wire_len, r.data, r.link});
  }

  absl::Status finish() {
    stats_.dedup_window_ns = options_.dedup_window_ns;
    stats_.files.clear();
    stats_.warnings.clear();
    stats_.truncated_records = stats_.bad_timestamps = 0;
    for (const auto& r : readers_) {
      stats_.files.push_back(r->stats());
      stats_.truncated_records += r->truncatedRecords();
      stats_.bad_timestamps += r->badTimestamps();
      stats_.warnings.insert(stats_.warnings.end(), r->warnings().begin(), r->warnings().end());
    }
    // Files of one capture overlap in time. A file that meets no other was probably taken at another time
    // (or is a consecutive piece of a rotated capture, which merges the same): one warning names them.
    stats_.overlap = true;
    std::vector<std::string> alone;
    for (size_t i = 0; i < stats_.files.size(); ++i) {
      const InputFileStats& a = stats_.files[i];
      if (stats_.files.size() < 2 || a.packets == 0) continue;
      bool meets = false;
      for (size_t j = 0; j < stats_.files.size() && !meets; ++j) {
        const InputFileStats& b = stats_.files[j];
        meets = j != i && b.packets > 0 && a.first_ns <= b.last_ns && b.first_ns <= a.last_ns;
      }
      if (!meets) {
        stats_.overlap = false;
        if (alone.size() < 3) {
          alone.push_back(absl::StrCat(a.path, " (", utcTime(a.first_ns), " to ", utcTime(a.last_ns), " UTC)"));
        } else if (alone.size() == 3) {
          alone.push_back("...");
        }
      }
    }
    if (!alone.empty()) {
      stats_.warnings.push_back(absl::StrCat(
          absl::StrJoin(alone, ", "),
          alone.size() == 1 ? " and the other files do not" : ": these files and the others do not",
          " overlap in time: merged by time as one capture (as the pieces of a rotated capture are); if they "
          "were taken at different times, analyse them separately"));
    }
    return absl::OkStatus();
  }

  std::vector<std::unique_ptr<FileReader>> readers_;
  std::vector<FileRecord> heads_;
  FileReadOptions options_;
  std::optional<Deduplicator> dedup_;
  SourceStats stats_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<FileReader>> openFileReader(const std::string& path, ClassicReader classic) {
  BS_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> stream, InputStream::open(path));
  const std::span<const uint8_t> m = stream->peek(4);
  if (!stream->error().empty() && m.size() < 4) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", stream->error()));
  }
  if (m.size() == 4 && m[0] == 0x0A && m[1] == 0x0D && m[2] == 0x0D && m[3] == 0x0A) {
    return openPcapngReader(std::move(stream));
  }
  if (classic == ClassicReader::kOwnWherePlain && isPlainClassicPcap(stream->peek(24))) {
    return openClassicPcapReader(std::move(stream));
  }
  return LibpcapReader::open(std::move(stream));  // classic pcap, or libpcap's clear "unknown file format"
}

namespace {

// Capture files as a capture source: a reader thread feeds one lossless queue through the same producer
// the live backends use, and puts its records in time order there (QueueProducer::orderInTime).
class PcapCapture final : public CaptureSource, private FrameSink {
 public:
  PcapCapture(std::unique_ptr<PacketSource> reader, const DecoderConfig& decoder, size_t ring_capacity)
      : reader_(std::move(reader)), producer_(decoder, ring_capacity, /*lossless=*/true) {
    port_.name = "pcap";
    port_.rings.push_back(&producer_.ring());
    port_.counters.push_back(&producer_.counters());
    port_.bins.push_back(producer_.bins());
    port_.ordered_lossless = true;
    ports_.push_back(port_);
    producer_.orderInTime(0);  // the pipeline's horizon comes by setReorderHorizon()
  }
  ~PcapCapture() override {
    abort_.store(true);  // no worker may be left to take the records: stop waiting for room
    stop();
  }

  std::string name() const override { return "pcap"; }
  const std::vector<CapturePort>& ports() const override { return ports_; }
  absl::Status start() override {
    thread_ = std::thread([this] {
      status_ = reader_->run(*this, stop_);
      producer_.releaseHeld(&abort_);  // a stop ends the reading; what was read still reaches the worker
      producer_.tick(last_ts_);
      finished_.store(true, std::memory_order_release);
    });
    return absl::OkStatus();
  }
  void stop() override {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
  }
  bool finished() const override { return finished_.load(std::memory_order_acquire); }
  bool finite() const override { return true; }
  absl::Status status() const override { return status_; }
  DeviceStats deviceStats(size_t) const override { return {}; }
  SourceStats sourceStats() const override { return reader_->stats(); }
  absl::Status setReorderHorizon(int64_t horizon_ns) override {
    if (thread_.joinable() || !producer_.orderInTime(horizon_ns)) {
      return absl::FailedPreconditionError("the reorder horizon is set before the capture starts");
    }
    return absl::OkStatus();
  }
  TimestampInfo timestampInfo() const override { return {"pcap_file", "the capture file's recorded timestamps", 0, 0}; }
  absl::Status setFrameTap(size_t port, size_t queue, FrameTap* tap) override {
    if (port != 0 || queue != 0) return absl::OutOfRangeError("no such capture queue for the flight recorder");
    producer_.setFrameTap(tap);
    return absl::OkStatus();
  }

 private:
  void onFrame(const Frame& f) override {
    producer_.add(f.data, f.wire_len, f.ts_ns, f.link);
    last_ts_ = std::max(last_ts_, f.ts_ns);
    if (producer_.pendingCount() == kBatch) producer_.flush(&abort_);
  }

  static constexpr size_t kBatch = 64;
  std::unique_ptr<PacketSource> reader_;
  QueueProducer producer_;
  CapturePort port_;
  std::vector<CapturePort> ports_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, abort_{false}, finished_{false};
  absl::Status status_;
  int64_t last_ts_ = INT64_MIN;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CaptureSource>> openPcapCapture(std::vector<std::string> paths,
                                                               const DecoderConfig& decoder, size_t ring_capacity,
                                                               FileReadOptions options) {
  BS_ASSIGN_OR_RETURN(std::unique_ptr<PacketSource> reader, openPcapFiles(std::move(paths), options));
  return std::make_unique<PcapCapture>(std::move(reader), decoder, ring_capacity);
}

absl::StatusOr<std::unique_ptr<PacketSource>> openPcapFiles(std::vector<std::string> paths, FileReadOptions options) {
  if (paths.empty()) return absl::InvalidArgumentError("no capture file given");
  if (std::count(paths.begin(), paths.end(), "-") > 1) {
    return absl::InvalidArgumentError("standard input (-) is given more than once");
  }
  if (options.dedup_window_ns < 0) return absl::InvalidArgumentError("the duplicate window must not be negative");
  // Every file is opened, and its header read, before any work is done: an unreadable one fails first.
  std::vector<std::unique_ptr<FileReader>> readers;
  for (const std::string& path : paths) {
    BS_ASSIGN_OR_RETURN(std::unique_ptr<FileReader> r, openFileReader(path));
    readers.push_back(std::move(r));
  }
  return std::make_unique<MergedFileSource>(std::move(readers), options);
}

}  // namespace burstscope
