// libFuzzer target: the capture-file reader (classic pcap through our reader or libpcap, our pcapng reader, gzip
// and zstd input, the merge) and the decoder behind it, host link types included. The input is written to a memory
// file and opened by its /proc path, so the code under test is exactly the one `burstscope analyze` runs. Where our
// classic pcap reader takes the input, libpcap reads it too, and any difference in a record, a count or a warning
// is a finding (the two must agree to the letter: file_reader.h).
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "burstscope/decode.h"
#include "src/capture/pcap/file_reader.h"
#include "src/capture/pcap/pcap_reader.h"

namespace {

class DecodingSink final : public burstscope::FrameSink {
 public:
  void onFrame(const burstscope::Frame& f) override {
    burstscope::PacketRecord r{};
    decoder_.decode(f.data, f.wire_len, &r, f.link);
    // Touch every captured byte: ASan fails if the reader handed out a span longer than its buffer.
    for (uint8_t b : f.data) sum_ += b;
  }
  uint64_t sum_ = 0;

 private:
  burstscope::Decoder decoder_;
};

// Every record, count and warning of one reading, in one string.
std::string readAll(const std::string& path, burstscope::ClassicReader classic) {
  auto r = burstscope::openFileReader(path, classic);
  if (!r.ok()) return "error: " + std::string(r.status().message());
  std::string out;
  burstscope::FileRecord rec;
  while ((*r)->next(&rec)) {
    out += std::to_string(rec.ts_ns) + " " + std::to_string(rec.wire_len) + " " +
           std::to_string(static_cast<int>(rec.link)) + " ";
    out.append(reinterpret_cast<const char*>(rec.data.data()), rec.data.size());
    out += "\n";
  }
  out += std::to_string((*r)->truncatedRecords()) + " " + std::to_string((*r)->badTimestamps()) + "\n";
  for (const std::string& w : (*r)->warnings()) out += w + "\n";
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("pcap_fuzz", 0);
  if (fd < 0) __builtin_trap();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) __builtin_trap();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (burstscope::isPlainClassicPcap({data, size}) &&
      readAll(path, burstscope::ClassicReader::kOwnWherePlain) != readAll(path, burstscope::ClassicReader::kLibpcap)) {
    __builtin_trap();  // our classic pcap reader and libpcap disagree
  }
  auto source = burstscope::openPcapFiles({path});
  if (!source.ok()) return 0;  // one clear error: fine
  DecodingSink sink;
  std::atomic<bool> stop{false};
  (void)(*source)->run(sink, stop);
  return 0;
}
