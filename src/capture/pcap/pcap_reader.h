// The capture-file reader behind openPcapCapture (include/burstscope/capture.h): the files' records as
// timestamped frames, merged by time, pushed to a sink. Private to src/capture/pcap, the fuzz target and the
// benchmarks, which read files without the rest of the capture path.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "burstscope/capture.h"
#include "burstscope/decode.h"

namespace burstscope {

struct Frame {
  int64_t ts_ns;                  // nanoseconds since the Unix epoch
  uint32_t wire_len;              // length on the wire (pcap orig_len), FCS excluded
  std::span<const uint8_t> data;  // the captured bytes; valid only during the onFrame call
  LinkType link = LinkType::kEthernet;
};

class FrameSink {
 public:
  virtual ~FrameSink() = default;
  virtual void onFrame(const Frame& f) = 0;
};

class PacketSource {
 public:
  virtual ~PacketSource() = default;
  // Delivers frames to `sink` until the source is exhausted or `stop` becomes true. An error status means
  // the source could not be read at all; a problem after frames were delivered lands in stats().warning.
  virtual absl::Status run(FrameSink& sink, const std::atomic<bool>& stop) = 0;
  virtual SourceStats stats() const = 0;
};

// Reads capture files as one capture merged by time, at nanosecond precision: classic pcap through
// libpcap, pcapng with our own reader (file_reader.h says why), plain, gzip or zstd, "-" for standard input.
// Opening opens and checks every file (its header), so that an unreadable one fails before any work is done.
absl::StatusOr<std::unique_ptr<PacketSource>> openPcapFiles(std::vector<std::string> paths,
                                                            FileReadOptions options = {});

}  // namespace burstscope
