// The pcap/pcapng file backend. libpcap does the file formats (both pcap byte orders, µs and ns, pcapng
// blocks); this file only converts its records into Frames.
#include <pcap/pcap.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "burstscope/status.h"
#include "src/capture/pcap/pcap_reader.h"

namespace burstscope {
namespace {

struct PcapCloser {
  void operator()(pcap_t* p) const { pcap_close(p); }
};
using PcapHandle = std::unique_ptr<pcap_t, PcapCloser>;

constexpr size_t kReadBuffer = size_t{1} << 20;

absl::StatusOr<PcapHandle> openOne(const std::string& path) {
  // We open the stream ourselves to give it a 1 MiB buffer before libpcap reads from it: with stdio's
  // default 4 KiB, reading a file costs a read(2) every few dozen records.
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return errnoStatus(errno, absl::StrCat("cannot read ", path));
  std::setvbuf(f, nullptr, _IOFBF, kReadBuffer);
  char err[PCAP_ERRBUF_SIZE] = {};
  PcapHandle p(pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, err));
  if (!p) {
    std::fclose(f);  // libpcap closes the stream only when it took it
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", err));
  }
  const int link = pcap_datalink(p.get());
  if (link != DLT_EN10MB) {
    const char* name = pcap_datalink_val_to_name(link);
    return absl::InvalidArgumentError(absl::StrCat("cannot analyse ", path, ": link type ", name ? name : "unknown",
                                                   " (", link, ") is not supported; only Ethernet (EN10MB) is"));
  }
  return p;
}

class PcapFileSource final : public PacketSource {
 public:
  explicit PcapFileSource(std::vector<std::string> paths) : paths_(std::move(paths)) {}

  absl::Status run(FrameSink& sink, const std::atomic<bool>& stop) override {
    for (const std::string& path : paths_) {
      BS_ASSIGN_OR_RETURN(PcapHandle p, openOne(path));
      pcap_pkthdr* h;
      const u_char* data;
      int rc;
      while ((rc = pcap_next_ex(p.get(), &h, &data)) == 1) {
        // With nanosecond precision libpcap puts nanoseconds in tv_usec.
        int64_t ts = timestampNs(h->ts, path);
        if (ts < 0) ts = last_ts_;  // out of range: counted, and given the previous record's time
        last_ts_ = ts;
        sink.onFrame(Frame{ts, h->len, {data, h->caplen}});
        if (stop.load(std::memory_order_relaxed)) return absl::OkStatus();
      }
      if (rc == PCAP_ERROR) {
        // libpcap reports a record cut off by the end of the file (or a corrupt header) this way.
        ++stats_.truncated_records;
        stats_.warning = absl::StrCat(path, ": ", pcap_geterr(p.get()), " (reading stopped there)");
      }
    }
    return absl::OkStatus();
  }

  SourceStats stats() const override { return stats_; }

 private:
  // A record's time in ns since the epoch, or -1 when it cannot be one. A sub-second field of a second or
  // more (a writer's bug: tv_usec >= 1e6 in a microsecond file) is carried into the seconds. Both are
  // counted as bad timestamps; the first one is described in the warning.
  int64_t timestampNs(const timeval& tv, const std::string& path) {
    constexpr int64_t kMaxSeconds = int64_t{1} << 33;  // the year 2242: beyond it, a corrupt record
    // Both bounds keep the sum below in int64: 2^33 s is 8.6e18 ns, and libpcap's sub-second field is at
    // most a 32-bit count of microseconds, in ns 4.3e12.
    const bool seconds_ok =
        tv.tv_sec >= 0 && tv.tv_sec < kMaxSeconds && tv.tv_usec >= 0 && tv.tv_usec < 10'000'000'000'000;
    if (seconds_ok && tv.tv_usec < 1'000'000'000) return int64_t{tv.tv_sec} * 1'000'000'000 + tv.tv_usec;
    if (stats_.bad_timestamps++ == 0 && stats_.warning.empty()) {
      stats_.warning = absl::StrCat(path, ": a record's timestamp (", tv.tv_sec, " s + ", tv.tv_usec, " ns) ",
                                    seconds_ok ? "has a sub-second field of a second or more; carried"
                                               : "is out of range; given the previous record's time",
                                    ", and counted");
    }
    return seconds_ok ? int64_t{tv.tv_sec} * 1'000'000'000 + tv.tv_usec : -1;
  }

  int64_t last_ts_ = 0;
  std::vector<std::string> paths_;
  SourceStats stats_;
};

// Capture files as a capture source: a reader thread feeds one lossless queue through the same producer
// the live backends use; the files' own timestamps are the queue's watermark.
class PcapCapture final : public CaptureSource, private FrameSink {
 public:
  PcapCapture(std::unique_ptr<PacketSource> reader, const DecoderConfig& decoder, size_t ring_capacity)
      : reader_(std::move(reader)), producer_(decoder, ring_capacity, /*lossless=*/true) {
    port_.name = "pcap";
    port_.rings.push_back(&producer_.ring());
    port_.counters.push_back(&producer_.counters());
    port_.ordered_lossless = true;
    ports_.push_back(port_);
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
      producer_.flush(&abort_);  // a stop ends the reading; what was read still reaches the worker
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
  absl::Status status() const override { return status_; }
  DeviceStats deviceStats(size_t) const override { return {}; }
  SourceStats sourceStats() const override { return reader_->stats(); }
  TimestampInfo timestampInfo() const override { return {"pcap_file", "the capture file's recorded timestamps", 0, 0}; }

 private:
  void onFrame(const Frame& f) override {
    producer_.add(f.data, f.wire_len, f.ts_ns);
    last_ts_ = std::max(last_ts_, f.ts_ns);
    if (producer_.pending().size() == kBatch) producer_.flush(&abort_);
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
                                                               const DecoderConfig& decoder, size_t ring_capacity) {
  BS_ASSIGN_OR_RETURN(std::unique_ptr<PacketSource> reader, openPcapFiles(std::move(paths)));
  return std::make_unique<PcapCapture>(std::move(reader), decoder, ring_capacity);
}

absl::StatusOr<std::unique_ptr<PacketSource>> openPcapFiles(std::vector<std::string> paths) {
  if (paths.empty()) return absl::InvalidArgumentError("no capture file given");
  for (const std::string& path : paths) {
    BS_ASSIGN_OR_RETURN(PcapHandle p, openOne(path));  // fail early, before any work is done
  }
  return std::make_unique<PcapFileSource>(std::move(paths));
}

}  // namespace burstscope
