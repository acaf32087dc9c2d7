// The bytes of one capture file: a path or standard input ("-"), plain or compressed with gzip or zstd.
// The compression is found from the first bytes, never from the name; zlib and libzstd decompress as the
// bytes are read (streaming, bounded memory: an input buffer and the decompressor's window), so a pipe
// works as well as a file. Private to src/capture/pcap.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace burstscope {

class InputStream {
 public:
  // Opens `path` ("-": standard input) and reads its first bytes to find the compression.
  static absl::StatusOr<std::unique_ptr<InputStream>> open(const std::string& path);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Reads up to `n` decompressed bytes; fewer only at the end of the stream or where it cannot be read on
  // (error() then says why: a read error, corrupt or cut-off compressed data).
  size_t read(uint8_t* buf, size_t n);
  // The first `n` (at most 24) decompressed bytes, before any read(): what the format is found from.
  std::span<const uint8_t> peek(size_t n);
  // The stream as a stdio FILE for libpcap, owned by the caller (fclose or pcap_close it); the stream must
  // outlive it. A plain regular file is handed over as itself, read from the start, with a 256 KiB buffer.
  FILE* toFile();

  const std::string& path() const { return path_; }
  const char* compression() const;  // "none", "gzip", "zstd"
  const std::string& error() const { return error_; }
  const std::string& notice() const { return notice_; }  // something read past that is not an error

 private:
  enum class Codec { kNone, kGzip, kZstd };
  struct Zstd;
  struct Gzip;
  explicit InputStream(std::string path);
  // More compressed input into in_ (at most `most` bytes); false at its end or on a read error.
  bool fillRaw(size_t most = SIZE_MAX);
  size_t readRaw(uint8_t* buf, size_t n);
  size_t readGzip(uint8_t* buf, size_t n);
  size_t readZstd(uint8_t* buf, size_t n);
  size_t readDecoded(uint8_t* buf, size_t n);

  std::string path_;
  int fd_ = -1;
  bool owns_fd_ = false;
  Codec codec_ = Codec::kNone;
  // Compressed (or plain) input not yet consumed: in_[in_pos_, in_len_). Not zeroed: a plain file handed
  // over by toFile() touches only the few bytes its format was found from.
  std::unique_ptr<uint8_t[]> in_;
  size_t in_cap_ = 0;
  size_t in_pos_ = 0, in_len_ = 0;
  bool in_eof_ = false;
  uint8_t head_[24] = {};  // peeked decompressed bytes (a classic pcap file header), served before anything else
  size_t head_len_ = 0, head_pos_ = 0;
  bool peeked_ = false;
  std::unique_ptr<char[]> stdio_buffer_;  // the FILE's buffer from toFile(): outlives the FILE
  std::unique_ptr<Gzip> gzip_;
  std::unique_ptr<Zstd> zstd_;
  std::string error_, notice_;
};

}  // namespace burstscope
