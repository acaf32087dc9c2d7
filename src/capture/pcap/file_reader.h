// One capture file's records, one at a time, for the merge in pcap_source.cc. Private to src/capture/pcap.
//
// Classic pcap is read by libpcap. pcapng is read by our own block reader (pcapng_reader.cc): libpcap
// refuses a pcapng file whose interfaces differ in link type or snap length ("an interface has a type
// different from the type of the first interface"), which is exactly what a host capture with several
// interfaces is, and Wireshark's wiretap is not a library with a stable interface. The pcapng reader
// follows draft-ietf-opsawg-pcapng: sections of either byte order, interfaces with their own link type,
// if_tsresol (decimal and binary) and if_tsoffset; enhanced, simple and obsolete packet blocks; every other
// block skipped. It never reads past a block and bounds a block at 16 MiB (libpcap's limit is the same).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "burstscope/capture.h"
#include "burstscope/decode.h"
#include "src/capture/pcap/input_stream.h"

namespace burstscope {

struct FileRecord {
  int64_t ts_ns = 0;
  uint32_t wire_len = 0;
  std::span<const uint8_t> data;  // valid until the next call of next()
  LinkType link = LinkType::kEthernet;
};

class FileReader {
 public:
  virtual ~FileReader() = default;
  // The next record; false at the end of the file, or where it cannot be read on (a warning says why).
  virtual bool next(FileRecord* r) = 0;

  InputFileStats& stats() { return stats_; }
  uint64_t truncatedRecords() const { return truncated_records_; }
  uint64_t badTimestamps() const { return bad_timestamps_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

 protected:
  void noteLinkType(LinkType t);
  void warn(const std::string& text);  // prefixed with the file's path
  // Counts a bad timestamp (once described in a warning) and returns the time to give the record.
  int64_t badTimestamp(int64_t carried, const std::string& what);

  InputFileStats stats_;
  uint64_t truncated_records_ = 0, bad_timestamps_ = 0;
  int64_t last_ts_ = 0;  // the previous record's time: given to a record that has none
  std::vector<std::string> warnings_;
};

// Opens one file (or "-"), finds its compression and format from the content, and reads its header (the
// first section and interfaces up to the first packet for pcapng). Errors name the file.
absl::StatusOr<std::unique_ptr<FileReader>> openFileReader(const std::string& path);

// pcapng, from pcapng_reader.cc: `stream` is positioned at the file's start.
absl::StatusOr<std::unique_ptr<FileReader>> openPcapngReader(std::unique_ptr<InputStream> stream);

// Nanoseconds since the epoch from seconds and nanoseconds, or -1 when out of range (negative, or beyond
// 2^33 s: the year 2242, a corrupt record).
inline int64_t epochNs(int64_t sec, int64_t nsec) {
  constexpr int64_t kMaxSeconds = int64_t{1} << 33;
  if (sec < 0 || sec >= kMaxSeconds || nsec < 0 || nsec >= 1'000'000'000) return -1;
  return sec * 1'000'000'000 + nsec;
}

}  // namespace burstscope
