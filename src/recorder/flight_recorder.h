// The flight recorder (docs/flight-recorder.md): the last seconds of every captured frame's first bytes, kept in
// memory, and a pcapng file of the window around a trigger — a microburst above a size, a backlog above the
// switch buffer, or a request (HTTP POST /flight-recorder/trigger, SIGUSR2).
//
// Each capture queue's producer thread copies a frame's first `snap_length` bytes, wire length, timestamp and
// link type into the queue's own ring (a FrameTap on its QueueProducer): one writer per ring, fixed slots,
// the oldest overwritten, never a wait. A slot carries a sequence stamp, so that the writer thread, copying a
// window out while capture goes on, tells a slot it read whole from one overwritten under it (left out and
// counted). Triggers come from the port's engine (an EngineObserver on the worker) or from any thread; they
// only queue a request. One writer thread waits for the window's end to pass, copies the window out of the
// port's rings, merges it by time, writes the file (named by time, port and trigger, the trigger in the
// file's comment) and removes the oldest files beyond the disk bounds. Files are rate-limited per port.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "burstscope/capture.h"
#include "burstscope/training.h"
#include "burstscope/window.h"

namespace burstscope {

struct FlightRecorderConfig {
  bool enabled = false;
  std::string directory = "/var/lib/burstscope/flight-recorder";
  uint64_t memory_bytes = uint64_t{256} << 20;  // all rings together (every queue of every port)
  uint32_t snap_length = 128;                   // bytes kept of each frame (headers through TCP/UDP and BTH)
  int64_t before_ns = 1'000'000'000;            // the file starts this long before the trigger's start
  int64_t after_ns = 200'000'000;               // and ends this long after its end
  int64_t min_interval_ns = 10'000'000'000;     // per port: a trigger sooner than this after the last file is skipped
  size_t max_files = 50;                        // the oldest files go beyond either bound
  uint64_t max_disk_bytes = uint64_t{1} << 30;
  uint64_t microburst_bytes = 0;  // trigger: a microburst carrying at least this many bytes (0: off)
  uint64_t backlog_bytes = 0;     // trigger: the port's backlog at its link speed above this (0: off)
  uint64_t fanin_sources = 0;     // trigger: this many sources bursting toward one host in a 100 µs bin (0: off)
};

// What a trigger is, for the file name, its comment and the metrics' `trigger` label.
enum class FlightTrigger : uint8_t { kMicroburst, kBacklog, kOnDemand, kFanIn };
inline constexpr int kFlightTriggerCount = 4;
const char* flightTriggerName(FlightTrigger t);  // "microburst", "backlog", "on_demand", "fan_in"

// The outcome of a trigger, for the `result` label.
enum class FlightResult : uint8_t { kWritten, kRateLimited, kInWindow, kFailed };
inline constexpr int kFlightResultCount = 4;
const char* flightResultName(FlightResult r);  // "written", "rate_limited", "in_window", "failed"

struct FlightPortStats {
  std::string name;
  uint64_t triggers[kFlightTriggerCount][kFlightResultCount] = {};
  uint64_t frames_written = 0;  // frames in this port's files
  uint64_t frames_torn = 0;     // frames overwritten while a window was copied out (left out of the file)
  int64_t held_ns = 0;          // the span of time the port's rings hold now (oldest to newest frame)
};

struct FlightRecorderStats {
  std::vector<FlightPortStats> ports;
  uint64_t bytes_written = 0;  // pcapng bytes written
  uint64_t files_deleted = 0;  // by the disk bounds
  uint64_t disk_bytes = 0;     // the recorder's files in the directory now
  uint64_t disk_files = 0;
  uint64_t memory_bytes = 0;  // the rings' memory
  std::string last_file;      // path of the newest file written
  std::string last_error;     // why the last write failed (empty: none did)
  uint64_t written() const {  // files written, every port and trigger
    uint64_t n = 0;
    for (const FlightPortStats& p : ports) {
      for (const auto& t : p.triggers) n += t[static_cast<int>(FlightResult::kWritten)];
    }
    return n;
  }
};

struct FlightPortInfo {
  std::string name;
  double link_bps = 0;            // for the backlog trigger
  int64_t base_bin_ns = 100'000;  // the engine's base bin (the backlog is taken at each bin's end)
  size_t queues = 1;
};

class FlightRecorder {
 public:
  // Checks the config (every bad key named), creates the directory if missing and sizes the rings.
  static absl::StatusOr<std::unique_ptr<FlightRecorder>> create(const FlightRecorderConfig& config,
                                                                std::vector<FlightPortInfo> ports);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Before capture starts: the tap for the queue's producer (CaptureSource::setFrameTap), the observer for
  // the port's engine (Engine::subscribe).
  FrameTap* tap(size_t port, size_t queue);
  EngineObserver* observer(size_t port);
  // Starts the writer thread; the destructor (or stop()) ends it after the files it owes are written.
  void start();
  void stop();

  // On demand, any thread: a file per port around the newest frame each holds (its before and after).
  // Returns the files that will be written, or why none will (rate limit).
  std::vector<std::string> triggerNow();
  // On the control thread at each report interval's close [start, end), with the training analysis when one
  // ran (it may cover several intervals). When the destination with the most sources bursting toward it in
  // one 100 µs bin reaches triggers.fanin-sources, a file of every interval since the last analysis (widened
  // by before and after): the memory must hold them plus `before` (at the defaults, 1 s + 1 s).
  void onInterval(size_t port, int64_t start_ns, int64_t end_ns, const TrainingReport* training);
  // Async-signal-safe: asks the writer thread for triggerNow() (SIGUSR2).
  void requestFromSignal() { signalled_.store(true, std::memory_order_relaxed); }

  FlightRecorderStats stats() const;
  const FlightRecorderConfig& config() const { return config_; }
  // Waits (bounded) until no trigger is pending and every file owed is written. True if so.
  bool waitIdle(int64_t timeout_ns) const;

  struct Ring;
  struct Port;

 private:
  FlightRecorder(const FlightRecorderConfig& config, std::vector<FlightPortInfo> ports);
  struct Request {
    size_t port;
    FlightTrigger trigger;
    int64_t start_ns, end_ns;  // the event; the file holds [start - before, end + after]
    std::string detail;
    std::string path;
  };
  // From the worker's observer or triggerNow: queue a request unless rate-limited or in a pending window.
  std::string request(size_t port, FlightTrigger trigger, int64_t start_ns, int64_t end_ns, std::string detail);
  void writerLoop();
  void write(const Request& r);
  // The writer's (or start()'s, before it): scans and removes without mu_, then counts under it.
  void enforceDiskBounds(const std::string& keep);

  FlightRecorderConfig config_;
  std::vector<std::unique_ptr<Port>> ports_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<Request> pending_;  // under mu_
  bool writing_ = false;         // under mu_
  bool stopping_ = false;        // under mu_
  std::atomic<bool> signalled_{false};
  std::thread writer_;
  // Under mu_:
  uint64_t bytes_written_ = 0, files_deleted_ = 0, disk_bytes_ = 0, disk_files_ = 0;
  std::string last_file_, last_error_;
  uint64_t memory_bytes_ = 0;
};

// The pcapng file a window becomes (also used by tests): one interface per link type met, nanosecond
// timestamps, the comment in the section header.
struct FlightFrame {
  int64_t ts_ns = 0;
  uint32_t wire_len = 0;
  LinkType link = LinkType::kEthernet;
  std::vector<uint8_t> data;  // the first snap-length bytes
};
absl::Status writeFlightPcapng(const std::string& path, const std::string& interface_name, uint32_t snap_length,
                               const std::string& comment, const std::vector<FlightFrame>& frames,
                               uint64_t* bytes_written);

}  // namespace burstscope
