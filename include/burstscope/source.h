// The one seam between capture backends (pcap files now; DPDK and AF_XDP later) and everything after them.
// A backend only delivers timestamped frames; decoding, rings and windows never know which backend fed them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace burstscope {

struct Frame {
  int64_t ts_ns;                  // nanoseconds since the Unix epoch
  uint32_t wire_len;              // length on the wire (pcap orig_len), FCS excluded
  std::span<const uint8_t> data;  // the captured bytes; valid only during the onFrame call
};

class FrameSink {
 public:
  virtual ~FrameSink() = default;
  virtual void onFrame(const Frame& f) = 0;
};

// What a source itself counted, beside the frames it delivered.
struct SourceStats {
  uint64_t truncated_records = 0;  // e.g. a file cut off mid-record: that record is lost, and counted here
  uint64_t bad_timestamps = 0;     // sub-second field of a second or more (carried), or out of range
  std::string warning;             // the source's own words about a non-fatal read problem, if any
};

class PacketSource {
 public:
  virtual ~PacketSource() = default;
  // Delivers frames to `sink` until the source is exhausted or `stop` becomes true. An error status means
  // the source could not be read at all; a problem after frames were delivered lands in stats().warning.
  virtual absl::Status run(FrameSink& sink, const std::atomic<bool>& stop) = 0;
  virtual SourceStats stats() const = 0;
};

// Reads classic pcap and pcapng files through libpcap, at nanosecond precision, one after another as a
// single capture (e.g. the rotated files of one `tcpdump -C` run). Only Ethernet link types are accepted.
absl::StatusOr<std::unique_ptr<PacketSource>> openPcapFiles(std::vector<std::string> paths);

}  // namespace burstscope
