// One capture file's records, one at a time, for the merge in pcap_source.cc. Private to src/capture/pcap.
//
// Classic pcap in its plain form (µs or ns timestamps in this machine's byte order, version 2.4: what tcpdump,
// dumpcap and libpcap write on x86 and ARM) is read by our own reader (classic_reader.cc), every other form by
// libpcap. libpcap's reader copies each record twice (the kernel's read into stdio's buffer, two freads into
// its own) and makes two library calls per record; ours reads 64 KiB at a time and hands out each record where
// it lies, which reads a file in about 60% of the time (read_bench, bench/README.md). It follows
// libpcap's rules to the letter (its bounds, its truncation and its words for it, the sign of the time fields),
// which the tests and the fuzz target check by reading the same bytes both ways. One difference is left: a read
// error of the disk itself (EIO) is reported in the stream's words ("read error: ..."), not libpcap's ("error
// reading dump file: ..."); reading stops there and the record is counted either way.
//
// pcapng is read by our own block reader (pcapng_reader.cc): libpcap refuses a pcapng file whose interfaces differ in
// link type or snap length ("an interface has a type different from the type of the first interface"), which is exactly
// what a host capture with several interfaces is, and Wireshark's wiretap is not a library with a stable interface. The
// pcapng reader follows draft-ietf-opsawg-pcapng: sections of either byte order, interfaces with their own link type,
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
  // A classic pcap record's time in ns since the epoch, from its seconds and its sub-second field in ns (as
  // libpcap hands them over at nanosecond precision); both readers of the format take it from here.
  int64_t classicTimestamp(int64_t sec, int64_t sub_ns);

  InputFileStats stats_;
  uint64_t truncated_records_ = 0, bad_timestamps_ = 0;
  int64_t last_ts_ = 0;  // the previous record's time: given to a record that has none
  std::vector<std::string> warnings_;
};

// Which reader takes a classic pcap file: ours where its header is the plain form (isPlainClassicPcap),
// else libpcap; or libpcap always (the tests compare the two).
enum class ClassicReader { kOwnWherePlain, kLibpcap };

// Opens one file (or "-"), finds its compression and format from the content, and reads its header (the
// first section and interfaces up to the first packet for pcapng). Errors name the file.
absl::StatusOr<std::unique_ptr<FileReader>> openFileReader(const std::string& path,
                                                           ClassicReader classic = ClassicReader::kOwnWherePlain);

// Classic pcap in its plain form, from classic_reader.cc: the magic of µs or ns timestamps in this machine's
// byte order, version 2.4, a link type we measure. `stream` is positioned at the file's start.
bool isPlainClassicPcap(std::span<const uint8_t> file_header);
absl::StatusOr<std::unique_ptr<FileReader>> openClassicPcapReader(std::unique_ptr<InputStream> stream);

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
