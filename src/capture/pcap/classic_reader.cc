// Classic pcap records read in place; why our own reader for the common form of the format: file_reader.h.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "src/capture/pcap/file_reader.h"

namespace burstscope {
namespace {

constexpr uint32_t kMicroMagic = 0xA1B2C3D4, kNanoMagic = 0xA1B23C4D;
constexpr size_t kFileHeader = 24, kRecordHeader = 16;
// libpcap's bound on a record of the link types we measure (MAXIMUM_SNAPLEN): a longer one is an error. A header
// snap length of 0 or above INT32_MAX means this; any other is kept as the file's snap length, even above this
// bound (pcap_adjust_snapshot), which only the error's words show.
constexpr uint32_t kMaxSnaplen = 262144;
// Read size. Each read lands at the buffer's front (the rest of the last record moved there first), straight from
// the kernel (InputStream's direct path), and its records are decoded from it soon after. 64 and 256 KiB read the
// same in read_bench, one file and eight merged record by record; 64 KiB keeps less of each file's buffer in use.
constexpr size_t kChunk = size_t{64} << 10;

uint32_t u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

class ClassicPcapReader final : public FileReader {
 public:
  ClassicPcapReader(std::unique_ptr<InputStream> s, bool nano, uint32_t snaplen, LinkType link)
      : stream_(std::move(s)),
        nano_(nano),
        snapshot_(snaplen == 0 || snaplen > INT32_MAX ? kMaxSnaplen : snaplen),
        link_(link),
        cap_(kChunk + kRecordHeader + kMaxSnaplen),
        buf_(new uint8_t[cap_]) {
    stats_.path = stream_->path();
    stats_.format = "pcap";
    stats_.compression = stream_->compression();
    noteLinkType(link_);
  }

  bool skipFileHeader() {
    uint8_t h[kFileHeader];
    return stream_->read(h, sizeof h) == sizeof h;
  }

  bool next(FileRecord* r) override {
    if (done_) return false;
    if (len_ - pos_ < kRecordHeader && !fill(kRecordHeader)) {
      const size_t got = len_ - pos_;
      if (got == 0 && stream_->error().empty()) return end();
      return stop(absl::StrCat("truncated dump file; tried to read ", kRecordHeader, " header bytes, only got ", got));
    }
    const uint8_t* h = buf_.get() + pos_;
    // As libpcap takes them: both time fields are signed 32-bit, and microseconds are scaled to nanoseconds.
    const int64_t sec = static_cast<int32_t>(u32(h));
    const int64_t sub = static_cast<int64_t>(static_cast<int32_t>(u32(h + 4))) * (nano_ ? 1 : 1000);
    const uint32_t caplen = u32(h + 8);
    const uint32_t len = u32(h + 12);
    if (caplen > kMaxSnaplen) {
      return stop(
          caplen > snapshot_
              ? absl::StrCat("invalid packet capture length ", caplen, ", bigger than snaplen of ", snapshot_)
              : absl::StrCat("invalid packet capture length ", caplen, ", bigger than maximum of ", kMaxSnaplen));
    }
    const size_t need = kRecordHeader + caplen;
    if (len_ - pos_ < need && !fill(need)) {
      const size_t got = len_ - pos_ - kRecordHeader;
      // libpcap's words: a record longer than the snap length is read up to it first, then the rest.
      const uint32_t tried = caplen > snapshot_ && got < snapshot_ ? snapshot_ : caplen;
      return stop(absl::StrCat("truncated dump file; tried to read ", tried, " captured bytes, only got ", got));
    }
    r->ts_ns = classicTimestamp(sec, sub);
    r->wire_len = len;
    r->data = {buf_.get() + pos_ + kRecordHeader, std::min(caplen, snapshot_)};  // beyond the snap length: dropped
    r->link = link_;
    pos_ += need;
    return true;
  }

 private:
  // At least `need` bytes from pos_ on in the buffer (the rest of the last record moved to its front first);
  // false at the end of the stream or where it cannot be read on.
  bool fill(size_t need) {
    if (pos_ > 0) {
      std::memmove(buf_.get(), buf_.get() + pos_, len_ - pos_);
      len_ -= pos_;
      pos_ = 0;
    }
    while (len_ < need && !eof_) {
      const size_t got = stream_->read(buf_.get() + len_, std::min(cap_ - len_, std::max(kChunk, need - len_)));
      if (got == 0) eof_ = true;
      len_ += got;
    }
    return len_ >= need;
  }

  // The clean end between records (a stream that ends with an error there goes to stop(), as libpcap's failed
  // read does).
  bool end() {
    done_ = true;
    if (!stream_->notice().empty()) warn(stream_->notice());
    return false;
  }

  // Reading stops here; the record is lost, and counted. A broken compressed stream's own words say more.
  bool stop(const std::string& why) {
    done_ = true;
    ++truncated_records_;
    warn(absl::StrCat(stream_->error().empty() ? why : stream_->error(), " (reading stopped there)"));
    if (!stream_->notice().empty()) warn(stream_->notice());
    return false;
  }

  std::unique_ptr<InputStream> stream_;
  bool nano_;
  uint32_t snapshot_;
  LinkType link_;
  size_t cap_;
  std::unique_ptr<uint8_t[]> buf_;  // the records read and not yet taken: [pos_, len_)
  size_t pos_ = 0, len_ = 0;
  bool eof_ = false, done_ = false;
};

}  // namespace

bool isPlainClassicPcap(std::span<const uint8_t> h) {
  if (h.size() < kFileHeader) return false;
  const uint32_t magic = u32(h.data());
  if (magic != kMicroMagic && magic != kNanoMagic) return false;  // the other byte order, or a modified format
  uint16_t major, minor;
  std::memcpy(&major, h.data() + 4, 2);
  std::memcpy(&minor, h.data() + 6, 2);
  if (major != 2 || minor != 4) return false;  // earlier versions may have caplen and len interchanged
  return linkTypeFromPcap(u32(h.data() + 20) & 0x03FFFFFF) != LinkType::kUnsupported;
}

absl::StatusOr<std::unique_ptr<FileReader>> openClassicPcapReader(std::unique_ptr<InputStream> stream) {
  const std::span<const uint8_t> h = stream->peek(kFileHeader);
  if (!isPlainClassicPcap(h)) return absl::InternalError("not a plain classic pcap file header");
  const bool nano = u32(h.data()) == kNanoMagic;
  const uint32_t snaplen = u32(h.data() + 16);
  // The upper bits of the link type field say whether frames carry an FCS; libpcap ignores them in reading too.
  const LinkType link = linkTypeFromPcap(u32(h.data() + 20) & 0x03FFFFFF);
  auto r = std::make_unique<ClassicPcapReader>(std::move(stream), nano, snaplen, link);
  if (!r->skipFileHeader()) return absl::InternalError("the pcap file header could not be read again");
  return r;
}

}  // namespace burstscope
