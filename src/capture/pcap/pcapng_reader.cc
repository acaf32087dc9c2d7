// pcapng (draft-ietf-opsawg-pcapng) records as FileRecords; why our own reader: file_reader.h.
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/capture/pcap/file_reader.h"

namespace burstscope {
namespace {

constexpr uint32_t kSectionHeader = 0x0A0D0D0A;
constexpr uint32_t kInterfaceDescription = 1;
constexpr uint32_t kObsoletePacket = 2;
constexpr uint32_t kSimplePacket = 3;
constexpr uint32_t kEnhancedPacket = 6;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint32_t kMaxBlock = 16u << 20;
constexpr uint16_t kOptEnd = 0, kOptTsresol = 9, kOptTsoffset = 14;

struct Interface {
  LinkType link = LinkType::kUnsupported;
  uint32_t linktype = 0;
  uint32_t snaplen = 0;
  bool binary = false;  // if_tsresol: 2^-exp seconds per unit (else 10^-exp)
  int exp = 6;          // the default resolution is microseconds
  int64_t offset_s = 0;
};

class PcapngReader final : public FileReader {
 public:
  explicit PcapngReader(std::unique_ptr<InputStream> s) : stream_(std::move(s)) {
    stats_.path = stream_->path();
    stats_.format = "pcapng";
    stats_.compression = stream_->compression();
  }

  // Reads up to the first packet block, so that a file that is not pcapng, or whose first interface is of
  // a link type we do not measure, is refused at open.
  absl::Status start() {
    if (!readBlock()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read ", stats_.path, ": ", reason_.empty() ? "no pcapng section header" : reason_));
    }
    pending_ = true;
    while (!isPacket(type_)) {
      if (!readBlock()) break;
    }
    if (isPacket(type_) && interfaces_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read ", stats_.path, ": a packet comes before any interface description"));
    }
    if (!interfaces_.empty() && interfaces_[0].link == LinkType::kUnsupported) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot analyse ", stats_.path, ": link type ", interfaces_[0].linktype,
          " is not supported; Ethernet, Linux cooked v1/v2, raw IP and BSD loopback are (docs/analyze.md)"));
    }
    return absl::OkStatus();
  }

  bool next(FileRecord* r) override {
    for (;;) {
      if (pending_) {
        pending_ = false;
      } else if (!readBlock()) {
        return false;
      }
      if (isPacket(type_) && packet(r)) return true;
      if (stopped_) return false;
    }
  }

 private:
  static bool isPacket(uint32_t t) { return t == kEnhancedPacket || t == kSimplePacket || t == kObsoletePacket; }

  uint16_t u16(const uint8_t* p) const {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return swap_ ? static_cast<uint16_t>(__builtin_bswap16(v)) : v;
  }
  uint32_t u32(const uint8_t* p) const {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return swap_ ? __builtin_bswap32(v) : v;
  }

  // Reading stops where the file is broken; the record there is lost, and counted (as libpcap counts a
  // corrupt record of a classic pcap file).
  bool fail(std::string why) {
    if (!stopped_) {
      warn(absl::StrCat(why, " (reading stopped there)"));
      ++truncated_records_;
    }
    if (reason_.empty()) reason_ = std::move(why);
    stopped_ = true;
    type_ = 0;  // no block: nothing of it is read
    return false;
  }

  // The next block into body_ (without its type, length and trailing length); false at the end.
  bool readBlock() {
    if (stopped_) return false;
    uint8_t head[8];
    const size_t got = stream_->read(head, sizeof head);
    if (got == 0 && stream_->error().empty()) {  // the end, between blocks
      if (!stream_->notice().empty()) warn(stream_->notice());
      return false;
    }
    if (got < sizeof head) return cutOff();
    uint32_t raw_type;
    std::memcpy(&raw_type, head, 4);
    if (raw_type == kSectionHeader) {  // the same in both byte orders; the section's order follows it
      uint8_t bom[4];
      if (stream_->read(bom, 4) < 4) return cutOff();
      uint32_t magic;
      std::memcpy(&magic, bom, 4);
      if (magic == kByteOrderMagic) {
        swap_ = false;
      } else if (magic == __builtin_bswap32(kByteOrderMagic)) {
        swap_ = true;
      } else {
        return fail("not a pcapng section header (bad byte-order magic)");
      }
      interfaces_.clear();  // interface numbers start again in every section
      seen_section_ = true;
    } else if (!seen_section_) {
      return fail("not a pcapng file (no section header first)");
    }
    type_ = u32(head);
    const uint32_t len = u32(head + 4);
    if (len < 12 || len % 4 != 0 || len > kMaxBlock) {
      return fail(absl::StrCat("a block of type ", type_, " has an impossible length ", len));
    }
    const size_t header = type_ == kSectionHeader ? 12 : 8;
    if (len < header + 4) return fail("a section header block is too short");
    body_.resize(len - header);  // the rest of the block, its trailing length included
    if (stream_->read(body_.data(), body_.size()) < body_.size()) return cutOff();
    if (u32(body_.data() + body_.size() - 4) != len) {
      return fail(absl::StrCat("a block of type ", type_, " ends with a length other than its own"));
    }
    // The trailing length off by erase, not resize: resize(size() - 4) has a growing branch too, which gcc 12
    // at -O3 with AddressSanitizer cannot prove dead and flags as a memset of SIZE_MAX - 4 bytes
    // (-Wstringop-overflow, a false positive).
    body_.erase(body_.end() - 4, body_.end());
    if (type_ == kInterfaceDescription) return interface();
    return true;
  }

  bool cutOff() { return fail(stream_->error().empty() ? "the file is cut off inside a block" : stream_->error()); }

  bool interface() {
    if (body_.size() < 8) return fail("an interface description block is too short");
    Interface i;
    i.linktype = u16(body_.data());
    i.link = linkTypeFromPcap(i.linktype);
    i.snaplen = u32(body_.data() + 4);
    // Options: code, length, value padded to 4 bytes; opt_endofopt or the block's end closes the list.
    size_t off = 8;
    while (off + 4 <= body_.size()) {
      const uint16_t code = u16(body_.data() + off);
      const uint16_t olen = u16(body_.data() + off + 2);
      off += 4;
      if (code == kOptEnd) break;
      if (olen > body_.size() - off) return fail("an interface option runs past its block");
      const uint8_t* v = body_.data() + off;
      if (code == kOptTsresol && olen >= 1) {
        i.binary = (v[0] & 0x80) != 0;
        i.exp = v[0] & 0x7F;
        if (i.binary ? i.exp > 63 : i.exp > 18) {
          return fail(absl::StrCat("interface ", interfaces_.size(), " has an unusable if_tsresol ", int{v[0]}));
        }
      } else if (code == kOptTsoffset && olen >= 8) {
        const uint64_t lo = u32(v), hi = u32(v + 4);
        // A 64-bit value in the section's byte order: as two 32-bit halves, low first when little-endian.
        i.offset_s = static_cast<int64_t>(swap_ ? (lo << 32 | hi) : (hi << 32 | lo));
      }
      off += (olen + 3u) & ~3u;
    }
    interfaces_.push_back(i);
    noteLinkType(i.link);
    return true;
  }

  // A timestamp in the interface's units to nanoseconds since the epoch; -1 when out of range.
  static int64_t toNs(const Interface& i, uint64_t units) {
    __int128 ns;
    if (i.binary) {
      ns = (static_cast<__int128>(units) * 1'000'000'000) >> i.exp;
    } else if (i.exp <= 9) {
      int64_t mul = 1;
      for (int k = i.exp; k < 9; ++k) mul *= 10;
      ns = static_cast<__int128>(units) * mul;
    } else {
      uint64_t div = 1;
      for (int k = 9; k < i.exp; ++k) div *= 10;
      ns = units / div;
    }
    ns += static_cast<__int128>(i.offset_s) * 1'000'000'000;
    if (ns < 0 || ns >= static_cast<__int128>(1'000'000'000) << 33) return -1;
    return static_cast<int64_t>(ns);
  }

  bool packet(FileRecord* r) {
    const uint8_t* b = body_.data();
    size_t header;
    uint32_t iface, caplen, wire_len;
    bool has_time = true;
    uint64_t units = 0;
    switch (type_) {
      case kEnhancedPacket:
      case kObsoletePacket:  // the same layout, with a 16-bit interface and a 16-bit drop count
        header = 20;
        if (body_.size() < header) return fail("a packet block is too short");
        iface = type_ == kEnhancedPacket ? u32(b) : u16(b);
        units = uint64_t{u32(b + 4)} << 32 | u32(b + 8);
        caplen = u32(b + 12);
        wire_len = u32(b + 16);
        break;
      default:  // simple packet block: interface 0, no timestamp, captured length implied
        header = 4;
        if (body_.size() < header) return fail("a simple packet block is too short");
        iface = 0;
        has_time = false;
        wire_len = u32(b);
        caplen = static_cast<uint32_t>(std::min<size_t>(wire_len, body_.size() - header));
        if (!interfaces_.empty() && interfaces_[0].snaplen != 0) caplen = std::min(caplen, interfaces_[0].snaplen);
        break;
    }
    if (iface >= interfaces_.size()) return fail(absl::StrCat("a packet names interface ", iface, ", never described"));
    if (caplen > body_.size() - header) return fail("a packet's captured length runs past its block");
    const Interface& i = interfaces_[iface];
    int64_t ts = has_time ? toNs(i, units) : -1;
    if (ts < 0) {
      ts = badTimestamp(last_ts_, has_time ? absl::StrCat("a record's timestamp (", units, " units) is out of range")
                                           : std::string("a simple packet block has no timestamp"));
    }
    last_ts_ = ts;
    r->ts_ns = ts;
    r->wire_len = wire_len;
    r->data = {b + header, caplen};
    r->link = i.link;
    return true;
  }

  std::unique_ptr<InputStream> stream_;
  std::vector<uint8_t> body_;
  std::vector<Interface> interfaces_;
  uint32_t type_ = 0;
  bool swap_ = false, seen_section_ = false, stopped_ = false, pending_ = false;
  std::string reason_;  // why reading stopped first
};

}  // namespace

absl::StatusOr<std::unique_ptr<FileReader>> openPcapngReader(std::unique_ptr<InputStream> stream) {
  auto r = std::make_unique<PcapngReader>(std::move(stream));
  if (absl::Status s = r->start(); !s.ok()) return s;
  return r;
}

}  // namespace burstscope
