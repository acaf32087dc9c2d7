#include "src/capture/pcap/input_stream.h"

#include <fcntl.h>
#include <stdio_ext.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "burstscope/status.h"

namespace burstscope {
namespace {

constexpr size_t kInputBuffer = size_t{1} << 20;
// stdio's buffer for libpcap. Its default (4 KiB for a file) costs a read(2) every few dozen records; 1 MiB
// per file made 8 files read at 0.42x of one file's speed (read_bench: the kernel's copies and stdio's no
// longer meet in the cache); 256 KiB keeps 8 files within 0.95-1.1x.
constexpr size_t kStdioBuffer = size_t{256} << 10;
// A plain read at least this large, with nothing buffered, goes straight to the caller's buffer.
constexpr size_t kDirectRead = size_t{64} << 10;

}  // namespace

struct InputStream::Gzip {
  z_stream z{};
  bool ended = false;  // the last member ended exactly where the input did
  ~Gzip() { inflateEnd(&z); }
};

struct InputStream::Zstd {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  size_t last = 0;  // ZSTD_decompressStream's last answer: 0 when a frame ended and all of it was returned
  ~Zstd() { ZSTD_freeDCtx(ctx); }
};

absl::StatusOr<std::unique_ptr<InputStream>> InputStream::open(const std::string& path) {
  std::unique_ptr<InputStream> s(new InputStream(path));
  if (path == "-") {
    s->fd_ = STDIN_FILENO;
  } else {
    s->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (s->fd_ < 0) return errnoStatus(errno, absl::StrCat("cannot read ", path));
    s->owns_fd_ = true;
    struct stat st {};
    if (fstat(s->fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": it is a directory"));
    }
  }
  s->in_.reset(new uint8_t[kInputBuffer]);
  s->in_cap_ = kInputBuffer;
  // Magic numbers: gzip 1f 8b (RFC 1952), zstd 28 b5 2f fd (RFC 8878, a little-endian 0xFD2FB528); a few
  // bytes only (as many as peek() serves: a classic pcap file header), so that a plain file handed to libpcap
  // is not read twice.
  while (s->in_len_ < sizeof(s->head_) && s->fillRaw(sizeof(s->head_) - s->in_len_)) {
  }
  if (!s->error_.empty()) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", s->error_));
  const uint8_t* m = s->in_.get();
  if (s->in_len_ >= 2 && m[0] == 0x1f && m[1] == 0x8b) {
    s->codec_ = Codec::kGzip;
    s->gzip_ = std::make_unique<Gzip>();
    if (inflateInit2(&s->gzip_->z, 15 + 16) != Z_OK) return absl::InternalError("zlib: cannot initialise");
  } else if (s->in_len_ >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) {
    s->codec_ = Codec::kZstd;
    s->zstd_ = std::make_unique<Zstd>();
    if (s->zstd_->ctx == nullptr) return absl::InternalError("libzstd: cannot create a decompression context");
  }
  return s;
}

InputStream::InputStream(std::string path) : path_(std::move(path)) {}

InputStream::~InputStream() {
  if (owns_fd_) ::close(fd_);
}

const char* InputStream::compression() const {
  switch (codec_) {
    case Codec::kGzip:
      return "gzip";
    case Codec::kZstd:
      return "zstd";
    case Codec::kNone:
      break;
  }
  return "none";
}

bool InputStream::fillRaw(size_t most) {
  if (in_eof_ || !error_.empty()) return false;
  if (in_pos_ == in_len_) in_pos_ = in_len_ = 0;
  if (in_len_ == in_cap_ && in_pos_ > 0) {  // full, but with consumed bytes in front: move the rest there
    std::memmove(in_.get(), in_.get() + in_pos_, in_len_ - in_pos_);
    in_len_ -= in_pos_;
    in_pos_ = 0;
  }
  if (in_len_ == in_cap_) return true;  // full: the caller consumes first
  for (;;) {
    const ssize_t got = ::read(fd_, in_.get() + in_len_, std::min(most, in_cap_ - in_len_));
    if (got > 0) {
      in_len_ += static_cast<size_t>(got);
      return true;
    }
    if (got == 0) {
      in_eof_ = true;
      return false;
    }
    if (errno == EINTR) continue;
    error_ = absl::StrCat("read error: ", std::error_code(errno, std::generic_category()).message());
    return false;
  }
}

size_t InputStream::readRaw(uint8_t* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    if (in_pos_ == in_len_ && n - done >= kDirectRead && !in_eof_ && error_.empty()) {
      // Nothing buffered and a large read: straight into the caller's buffer, without a copy through in_.
      const ssize_t got = ::read(fd_, buf + done, n - done);
      if (got > 0) {
        done += static_cast<size_t>(got);
        continue;
      }
      if (got == 0) {
        in_eof_ = true;
        break;
      }
      if (errno == EINTR) continue;
      error_ = absl::StrCat("read error: ", std::error_code(errno, std::generic_category()).message());
      break;
    }
    if (in_pos_ == in_len_ && !fillRaw()) break;
    const size_t take = std::min(n - done, in_len_ - in_pos_);
    std::memcpy(buf + done, in_.get() + in_pos_, take);
    in_pos_ += take;
    done += take;
  }
  return done;
}

size_t InputStream::readGzip(uint8_t* buf, size_t n) {
  z_stream& z = gzip_->z;
  z.next_out = buf;
  z.avail_out = static_cast<uInt>(std::min<size_t>(n, UINT32_MAX));
  while (z.avail_out > 0 && error_.empty()) {
    if (in_pos_ == in_len_ && !fillRaw()) {
      if (!gzip_->ended && error_.empty()) error_ = "the gzip data is cut off";
      break;
    }
    if (gzip_->ended) {
      // Another member follows (gzip files may be concatenated), or bytes that are not gzip at all.
      if (in_len_ - in_pos_ < 2) fillRaw();  // the magic's second byte, if there is one
      if (in_len_ - in_pos_ < 2 || in_[in_pos_] != 0x1f || in_[in_pos_ + 1] != 0x8b) {
        notice_ = "bytes after the end of the gzip data were ignored";
        in_pos_ = in_len_;
        in_eof_ = true;  // what follows is not ours to read: the end, as `gzip -d` takes it
        break;
      }
      inflateReset(&z);
      gzip_->ended = false;
    }
    z.next_in = in_.get() + in_pos_;
    z.avail_in = static_cast<uInt>(in_len_ - in_pos_);
    const int rc = inflate(&z, Z_NO_FLUSH);
    in_pos_ = in_len_ - z.avail_in;
    if (rc == Z_STREAM_END) {
      gzip_->ended = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      error_ = absl::StrCat("corrupt gzip data (zlib: ", z.msg != nullptr ? z.msg : zError(rc), ")");
    }
  }
  return n - z.avail_out;
}

size_t InputStream::readZstd(uint8_t* buf, size_t n) {
  ZSTD_outBuffer out{buf, n, 0};
  while (out.pos < out.size && error_.empty()) {
    if (in_pos_ == in_len_ && !fillRaw()) {
      if (zstd_->last == 0) break;  // the last frame ended, and all of it was returned: a clean end
      // Without input, libzstd may still hold decoded bytes of the last block: drain them first.
      ZSTD_inBuffer none{nullptr, 0, 0};
      const size_t before = out.pos;
      zstd_->last = ZSTD_decompressStream(zstd_->ctx, &out, &none);
      if (ZSTD_isError(zstd_->last)) {
        error_ = absl::StrCat("corrupt zstd data (", ZSTD_getErrorName(zstd_->last), ")");
      } else if (out.pos == before) {
        if (zstd_->last != 0 && error_.empty()) error_ = "the zstd data is cut off";
        if (zstd_->last == 0) continue;  // drained to the frame's end: the check above ends the loop
        break;
      }
      continue;
    }
    ZSTD_inBuffer in{in_.get() + in_pos_, in_len_ - in_pos_, 0};
    zstd_->last = ZSTD_decompressStream(zstd_->ctx, &out, &in);
    in_pos_ += in.pos;
    if (ZSTD_isError(zstd_->last)) error_ = absl::StrCat("corrupt zstd data (", ZSTD_getErrorName(zstd_->last), ")");
  }
  return out.pos;
}

size_t InputStream::readDecoded(uint8_t* buf, size_t n) {
  switch (codec_) {
    case Codec::kGzip:
      return readGzip(buf, n);
    case Codec::kZstd:
      return readZstd(buf, n);
    case Codec::kNone:
      break;
  }
  return readRaw(buf, n);
}

std::span<const uint8_t> InputStream::peek(size_t n) {
  if (!peeked_) {
    peeked_ = true;
    head_len_ = readDecoded(head_, sizeof head_);
  }
  return {head_, std::min(n, head_len_)};
}

size_t InputStream::read(uint8_t* buf, size_t n) {
  size_t done = 0;
  if (head_pos_ < head_len_) {
    done = std::min(n, head_len_ - head_pos_);
    std::memcpy(buf, head_ + head_pos_, done);
    head_pos_ += done;
  }
  peeked_ = true;  // a read before any peek: nothing to hold back any more
  return done == n ? done : done + readDecoded(buf + done, n - done);
}

FILE* InputStream::toFile() {
  struct stat st {};
  if (codec_ == Codec::kNone && owns_fd_ && fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) &&
      lseek(fd_, 0, SEEK_SET) == 0) {
    // The descriptor itself goes to the FILE (no second one: hundreds of rotated files stay open at once).
    FILE* f = fdopen(fd_, "rb");
    if (f == nullptr) return nullptr;
    owns_fd_ = false;
    stdio_buffer_.reset(new char[kStdioBuffer]);
    std::setvbuf(f, stdio_buffer_.get(), _IOFBF, kStdioBuffer);
    // One thread at a time uses it (libpcap reads the file header on the opening thread, the records on the
    // reading thread, which starts after and is joined before the close): no lock per fread. libpcap makes two freads
    // per record (bench/README.md: analyze --no-training 0.096 -> 0.091 s without the lock).
    __fsetlocking(f, FSETLOCKING_BYCALLER);
    return f;
  }
  cookie_io_functions_t io{};
  io.read = [](void* cookie, char* buf, size_t n) -> ssize_t {
    auto* s = static_cast<InputStream*>(cookie);
    const size_t got = s->read(reinterpret_cast<uint8_t*>(buf), n);
    return got > 0 || s->error_.empty() ? static_cast<ssize_t>(got) : -1;
  };
  io.close = [](void*) { return 0; };  // the stream belongs to its reader, not to the FILE
  FILE* f = fopencookie(this, "rb", io);
  if (f != nullptr) {
    // glibc takes a size only with a buffer: without one it picks its own (8 KiB for a cookie stream).
    stdio_buffer_.reset(new char[kStdioBuffer]);
    std::setvbuf(f, stdio_buffer_.get(), _IOFBF, kStdioBuffer);
    __fsetlocking(f, FSETLOCKING_BYCALLER);  // as above
  }
  return f;
}

}  // namespace burstscope
