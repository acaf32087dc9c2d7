// The capture-file reader: pcapng interfaces of several link types and timestamp resolutions, both byte
// orders, the merge of several files by time, duplicate suppression, compressed input and broken files.
// Classic pcap files are written with libpcap itself (pcap_dump), compressed ones with zlib and libzstd.
#include <pcap/pcap.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "src/capture/pcap/file_reader.h"
#include "src/capture/pcap/pcap_reader.h"
#include "tests/common/frames.h"

namespace burstscope {
namespace {

using testing::FrameBuilder;
using testing::ip4;

struct Got {
  int64_t ts;
  uint32_t wire_len;
  std::vector<uint8_t> data;
  LinkType link;
};

struct Collect final : FrameSink {
  std::vector<Got> frames;
  void onFrame(const Frame& f) override {
    frames.push_back({f.ts_ns, f.wire_len, {f.data.begin(), f.data.end()}, f.link});
  }
};

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/bs_reader_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void writeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
}

std::vector<uint8_t> readFile(const std::string& path) {
  std::vector<uint8_t> out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  uint8_t buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

struct Packet {
  int64_t ts_ns;
  std::vector<uint8_t> data;  // Ethernet
};

// A classic nanosecond pcap through libpcap's own writer.
void writePcap(const std::string& path, const std::vector<Packet>& packets, int dlt = DLT_EN10MB) {
  pcap_t* dead = pcap_open_dead_with_tstamp_precision(dlt, 65535, PCAP_TSTAMP_PRECISION_NANO);
  pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
  ASSERT_NE(d, nullptr);
  for (const Packet& p : packets) {
    pcap_pkthdr h{};
    h.ts.tv_sec = p.ts_ns / 1'000'000'000;
    h.ts.tv_usec = p.ts_ns % 1'000'000'000;  // nanoseconds, in a nanosecond file
    h.caplen = h.len = static_cast<uint32_t>(p.data.size());
    pcap_dump(reinterpret_cast<u_char*>(d), &h, p.data.data());
  }
  pcap_dump_close(d);
  pcap_close(dead);
}

// pcapng blocks, in little- or big-endian sections.
class PcapngWriter {
 public:
  explicit PcapngWriter(bool big_endian = false) : be_(big_endian) {}
  PcapngWriter& section() {
    std::vector<uint8_t> body;
    put32(body, 0x1A2B3C4D);
    put16(body, 1);
    put16(body, 0);
    put32(body, 0xFFFFFFFF);
    put32(body, 0xFFFFFFFF);  // section length: not given
    return block(0x0A0D0D0A, body);
  }
  // tsresol: the option's byte (0x80 | n for 2^-n); offset_s: if_tsoffset (0: none).
  PcapngWriter& interface(uint16_t linktype, uint8_t tsresol, int64_t offset_s = 0) {
    std::vector<uint8_t> body;
    put16(body, linktype);
    put16(body, 0);
    put32(body, 0);  // no snap length
    put16(body, 9);
    put16(body, 1);
    body.push_back(tsresol);
    body.insert(body.end(), 3, 0);
    if (offset_s != 0) {
      put16(body, 14);
      put16(body, 8);
      const auto v = static_cast<uint64_t>(offset_s);
      if (be_) {
        put32(body, static_cast<uint32_t>(v >> 32));
        put32(body, static_cast<uint32_t>(v));
      } else {
        put32(body, static_cast<uint32_t>(v));
        put32(body, static_cast<uint32_t>(v >> 32));
      }
    }
    put16(body, 0);
    put16(body, 0);
    return block(1, body);
  }
  PcapngWriter& packet(uint32_t iface, uint64_t units, const std::vector<uint8_t>& data, uint32_t extra_wire = 0) {
    std::vector<uint8_t> body;
    put32(body, iface);
    put32(body, static_cast<uint32_t>(units >> 32));
    put32(body, static_cast<uint32_t>(units));
    put32(body, static_cast<uint32_t>(data.size()));
    put32(body, static_cast<uint32_t>(data.size()) + extra_wire);
    body.insert(body.end(), data.begin(), data.end());
    body.resize((body.size() + 3) & ~size_t{3});
    return block(6, body);
  }
  PcapngWriter& other(uint32_t type, size_t len) { return block(type, std::vector<uint8_t>(len, 0xEE)); }
  std::vector<uint8_t> bytes;

 private:
  PcapngWriter& block(uint32_t type, const std::vector<uint8_t>& body) {
    const auto len = static_cast<uint32_t>(12 + body.size());
    put32(bytes, type);
    put32(bytes, len);
    bytes.insert(bytes.end(), body.begin(), body.end());
    put32(bytes, len);
    return *this;
  }
  void put16(std::vector<uint8_t>& v, uint16_t x) const {
    if (be_) x = __builtin_bswap16(x);
    v.insert(v.end(), reinterpret_cast<uint8_t*>(&x), reinterpret_cast<uint8_t*>(&x) + 2);
  }
  void put32(std::vector<uint8_t>& v, uint32_t x) const {
    if (be_) x = __builtin_bswap32(x);
    v.insert(v.end(), reinterpret_cast<uint8_t*>(&x), reinterpret_cast<uint8_t*>(&x) + 4);
  }
  bool be_;
};

std::vector<uint8_t> tcpFrame(uint8_t src, uint8_t dst, uint16_t ip_id, uint32_t seq, size_t payload = 100) {
  FrameBuilder b;
  b.eth(0x0800).ipv4(ip4(10, 0, 0, src), ip4(10, 0, 0, dst), 6, static_cast<uint16_t>(20 + payload));
  b.bytes[18] = static_cast<uint8_t>(ip_id >> 8);
  b.bytes[19] = static_cast<uint8_t>(ip_id);
  b.tcp(40000, 29500, seq).payload(payload);
  return b.bytes;
}

std::vector<uint8_t> withoutEthernet(const std::vector<uint8_t>& eth, std::vector<uint8_t> header) {
  header.insert(header.end(), eth.begin() + 14, eth.end());
  return header;
}

struct ReadResult {
  std::vector<Got> frames;
  SourceStats stats;
};

ReadResult readAll(std::vector<std::string> paths, FileReadOptions o = {}) {
  ReadResult out;
  auto src = openPcapFiles(std::move(paths), o);
  EXPECT_TRUE(src.ok()) << src.status();
  if (!src.ok()) return out;
  Collect sink;
  std::atomic<bool> stop{false};
  EXPECT_TRUE((*src)->run(sink, stop).ok());
  out.frames = std::move(sink.frames);
  out.stats = (*src)->stats();
  return out;
}

constexpr int64_t kT0 = int64_t{1'795'000'000} * 1'000'000'000;  // 2026-11-18

TEST(FileReaderTest, PcapngInterfacesOfSeveralLinkTypesAndResolutionsInBothByteOrders) {
  TempDir dir;
  const std::vector<uint8_t> eth = tcpFrame(1, 2, 7, 1000);
  const std::vector<uint8_t> sll = withoutEthernet(eth, {0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00});
  const std::vector<uint8_t> raw = withoutEthernet(eth, {});
  for (bool big_endian : {false, true}) {
    SCOPED_TRACE(big_endian ? "big-endian section" : "little-endian section");
    PcapngWriter w(big_endian);
    // Interface 0: Ethernet in ns; 1: cooked v1 in 0.1 ns units, 1000 s later in its offset; 2: raw IP in
    // 2^-20 s units. A name-resolution block and a custom block between packets are skipped.
    w.section().interface(1, 9).interface(113, 10, 1000).interface(101, 0x80 | 20);
    w.packet(0, static_cast<uint64_t>(kT0 + 5), eth);
    w.other(4, 16).packet(1, static_cast<uint64_t>(kT0 - 1000'000'000'000 + 7) * 10 + 3, sll, 500);
    w.other(0x00000BAD, 8).packet(2, (uint64_t{1'795'000'001} << 20) + (uint64_t{1} << 19), raw);
    const std::string path = dir.file(big_endian ? "be.pcapng" : "le.pcapng");
    writeFile(path, w.bytes);
    ReadResult r = readAll({path});
    ASSERT_EQ(r.frames.size(), 3u);
    EXPECT_EQ(r.frames[0].ts, kT0 + 5);
    EXPECT_EQ(r.frames[0].link, LinkType::kEthernet);
    EXPECT_EQ(r.frames[0].data, eth);
    EXPECT_EQ(r.frames[1].ts, kT0 + 7);  // 0.3 ns below a nanosecond: cut, never rounded up
    EXPECT_EQ(r.frames[1].link, LinkType::kLinuxSll);
    EXPECT_EQ(r.frames[1].wire_len, sll.size() + 500);
    EXPECT_EQ(r.frames[2].ts, kT0 + 1'000'000'000 + 500'000'000);
    EXPECT_EQ(r.frames[2].link, LinkType::kRawIp);
    EXPECT_EQ(r.frames[2].data, raw);
    ASSERT_EQ(r.stats.files.size(), 1u);
    EXPECT_EQ(r.stats.files[0].format, "pcapng");
    EXPECT_EQ(r.stats.files[0].link_types, (std::vector<std::string>{"ethernet", "linux_sll", "raw_ip"}));
    EXPECT_EQ(r.stats.files[0].packets, 3u);
    EXPECT_TRUE(r.stats.warnings.empty());
  }
}

TEST(FileReaderTest, BrokenPcapngStopsWithAWarningAndKeepsWhatCameBefore) {
  TempDir dir;
  PcapngWriter w;
  w.section().interface(1, 9);
  for (int i = 0; i < 3; ++i) w.packet(0, static_cast<uint64_t>(kT0 + i), tcpFrame(1, 2, static_cast<uint16_t>(i), 0));
  // Cut inside the last block: two records, one cut off and counted.
  std::vector<uint8_t> cut(w.bytes.begin(), w.bytes.end() - 30);
  writeFile(dir.file("cut.pcapng"), cut);
  ReadResult r = readAll({dir.file("cut.pcapng")});
  EXPECT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.stats.truncated_records, 1u);
  ASSERT_EQ(r.stats.warnings.size(), 1u);
  EXPECT_NE(r.stats.warnings[0].find("cut off"), std::string::npos) << r.stats.warnings[0];
  // A packet of an interface never described, and a block whose trailing length disagrees.
  PcapngWriter bad;
  bad.section().interface(1, 9).packet(0, kT0, tcpFrame(1, 2, 1, 0)).packet(3, kT0, tcpFrame(1, 2, 2, 0));
  writeFile(dir.file("iface.pcapng"), bad.bytes);
  r = readAll({dir.file("iface.pcapng")});
  EXPECT_EQ(r.frames.size(), 1u);
  ASSERT_EQ(r.stats.warnings.size(), 1u);
  EXPECT_NE(r.stats.warnings[0].find("interface 3"), std::string::npos) << r.stats.warnings[0];
  PcapngWriter trail;
  trail.section().interface(1, 9).packet(0, kT0, tcpFrame(1, 2, 1, 0));
  trail.bytes[trail.bytes.size() - 4] ^= 0x40;
  writeFile(dir.file("trail.pcapng"), trail.bytes);
  r = readAll({dir.file("trail.pcapng")});
  EXPECT_EQ(r.frames.size(), 0u);
  EXPECT_EQ(r.stats.warnings.size(), 1u);
  // Refused at open, naming the file: not a capture at all; a first interface of a link type not measured.
  writeFile(dir.file("text.pcap"), {'h', 'e', 'l', 'l', 'o', '\n'});
  auto s = openPcapFiles({dir.file("text.pcap")});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("text.pcap"), std::string::npos);
  PcapngWriter wifi;
  wifi.section().interface(105, 9).packet(0, kT0, tcpFrame(1, 2, 1, 0));
  writeFile(dir.file("wifi.pcapng"), wifi.bytes);
  s = openPcapFiles({dir.file("wifi.pcapng")});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("link type 105"), std::string::npos) << s.status();
  EXPECT_FALSE(openPcapFiles({dir.file("wifi.pcapng"), "-", "-"}).ok());
}

// A few files (merged by a scan of their heads) and more than 16 (merged by a heap).
TEST(FileReaderTest, FilesAreMergedByTimeKeepingEachFilesOwnOrder) {
  for (const int k : {3, 20}) {
    SCOPED_TRACE(std::to_string(k) + " files");
    TempDir dir;
    // k hosts' captures, interleaved, with ties across files; the second file steps back once (kept where
    // it is in its file).
    std::vector<std::vector<Packet>> files(static_cast<size_t>(k));
    for (int i = 0; i < 60 * k; ++i) {
      const int f = (i * 7) % k;
      files[static_cast<size_t>(f)].push_back(
          {kT0 + (i / 2) * 1000, tcpFrame(static_cast<uint8_t>(f + 1), 99, static_cast<uint16_t>(i), 0)});
    }
    std::swap(files[1][10], files[1][11]);
    std::vector<std::string> paths;
    for (size_t f = 0; f < files.size(); ++f) {
      paths.push_back(dir.file("h" + std::to_string(f) + ".pcap"));
      writePcap(paths.back(), files[f]);
    }
    ReadResult r = readAll(paths);
    ASSERT_EQ(r.frames.size(), static_cast<size_t>(60 * k));
    size_t out_of_order = 0;
    std::vector<std::vector<int64_t>> per_file(files.size());
    for (size_t i = 0; i < r.frames.size(); ++i) {
      const size_t f = r.frames[i].data[29] - 1u;  // the source address's last byte
      if (i > 0 && r.frames[i].ts < r.frames[i - 1].ts) ++out_of_order;
      // Equal times: the file given first goes first.
      if (i > 0 && r.frames[i].ts == r.frames[i - 1].ts && f != r.frames[i - 1].data[29] - 1u) {
        EXPECT_GT(f, r.frames[i - 1].data[29] - 1u) << "record " << i;
      }
      per_file[f].push_back(r.frames[i].ts);
    }
    EXPECT_EQ(out_of_order, 1u);  // only the file's own step back
    for (size_t f = 0; f < files.size(); ++f) {
      std::vector<int64_t> want;
      for (const Packet& p : files[f]) want.push_back(p.ts_ns);
      EXPECT_EQ(per_file[f], want) << "file " << f;
      EXPECT_EQ(r.stats.files[f].packets, files[f].size());
      EXPECT_EQ(r.stats.files[f].first_ns, *std::min_element(want.begin(), want.end()));
      EXPECT_EQ(r.stats.files[f].last_ns, *std::max_element(want.begin(), want.end()));
    }
    EXPECT_TRUE(r.stats.overlap);
    EXPECT_TRUE(r.stats.warnings.empty());
  }
}

TEST(FileReaderTest, FilesThatDoNotOverlapInTimeAreMergedAndNamedInAWarning) {
  TempDir dir;
  writePcap(dir.file("a.pcap"), {{kT0, tcpFrame(1, 2, 1, 0)}, {kT0 + 1000, tcpFrame(1, 2, 2, 0)}});
  writePcap(dir.file("b.pcap"), {{kT0 + 500, tcpFrame(3, 2, 1, 0)}});
  writePcap(dir.file("later.pcap"), {{kT0 + 3'600'000'000'000, tcpFrame(4, 2, 1, 0)}});
  ReadResult r = readAll({dir.file("later.pcap"), dir.file("a.pcap"), dir.file("b.pcap")});
  ASSERT_EQ(r.frames.size(), 4u);
  EXPECT_EQ(r.frames.back().ts, kT0 + 3'600'000'000'000);
  EXPECT_FALSE(r.stats.overlap);
  ASSERT_EQ(r.stats.warnings.size(), 1u);
  EXPECT_NE(r.stats.warnings[0].find("later.pcap"), std::string::npos);
  EXPECT_NE(r.stats.warnings[0].find("do not overlap in time"), std::string::npos);
}

TEST(FileReaderTest, DuplicatesFromBothEndsOfALinkAreLeftOutWithinTheWindowOnly) {
  TempDir dir;
  std::vector<Packet> sender, receiver;
  size_t planted = 0;
  for (int i = 0; i < 200; ++i) {
    std::vector<uint8_t> f = tcpFrame(1, 2, static_cast<uint16_t>(i), 1000u * static_cast<uint32_t>(i));
    sender.push_back({kT0 + i * 10'000, f});
    if (i % 3 == 0) {
      // The receiver's copy: 3 us later, TTL one less and another checksum (neither is in the key).
      f[22] -= 1;
      f[24] ^= 0x5A;
      receiver.push_back({kT0 + i * 10'000 + 3'000, f});
      ++planted;
    }
  }
  // Not duplicates: the same key twice in one file (distinct packets of one capture, e.g. duplicate ACKs),
  // the same ports and length but another IP ID, and a true copy outside the window.
  sender.insert(sender.begin() + 2, Packet{sender[1].ts_ns + 1'000, sender[1].data});
  receiver.push_back({kT0 + 5'000, tcpFrame(1, 2, 999, 0)});
  receiver.push_back({kT0 + 20'000 + 50'000, tcpFrame(1, 2, 2, 2000)});
  writePcap(dir.file("sender.pcap"), sender);
  writePcap(dir.file("receiver.pcap"), receiver);
  FileReadOptions o;
  o.dedup_window_ns = 20'000;
  ReadResult r = readAll({dir.file("sender.pcap"), dir.file("receiver.pcap")}, o);
  EXPECT_EQ(r.stats.duplicates_removed, planted);
  EXPECT_EQ(r.frames.size(), sender.size() + 2);
  EXPECT_EQ(r.stats.files[1].packets, receiver.size());  // read, duplicates included
  ReadResult off = readAll({dir.file("sender.pcap"), dir.file("receiver.pcap")});
  EXPECT_EQ(off.stats.duplicates_removed, 0u);
  EXPECT_EQ(off.frames.size(), sender.size() + receiver.size());
}

std::vector<uint8_t> gzipOf(const std::vector<uint8_t>& in) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<uint8_t> out(deflateBound(&z, in.size()) + 64);
  z.next_in = const_cast<uint8_t*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::vector<uint8_t> zstdOf(const std::vector<uint8_t>& in) {
  std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

// Classic pcap bytes written field by field, so that a test can write what no writer would.
class ClassicBytes {
 public:
  ClassicBytes(uint32_t magic, uint32_t snaplen, uint32_t linktype, uint16_t major = 2, uint16_t minor = 4) {
    put32(magic);
    put16(major);
    put16(minor);
    put32(0);  // thiszone
    put32(0);  // sigfigs
    put32(snaplen);
    put32(linktype);
  }
  ClassicBytes& record(uint32_t sec, uint32_t sub, uint32_t caplen, uint32_t len, const std::vector<uint8_t>& data) {
    put32(sec);
    put32(sub);
    put32(caplen);
    put32(len);
    bytes.insert(bytes.end(), data.begin(), data.end());
    return *this;
  }
  std::vector<uint8_t> bytes;

 private:
  void put16(uint16_t v) {
    bytes.push_back(static_cast<uint8_t>(v));
    bytes.push_back(static_cast<uint8_t>(v >> 8));
  }
  void put32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
};

// Everything a reader makes of one file: its records, counts, warnings and stats.
struct ReaderOutput {
  std::vector<Got> records;
  uint64_t truncated = 0, bad_timestamps = 0;
  std::vector<std::string> warnings, link_types;
  std::string format, open_error;
};

ReaderOutput readWith(const std::string& path, ClassicReader classic) {
  ReaderOutput out;
  auto r = openFileReader(path, classic);
  if (!r.ok()) {
    out.open_error = std::string(r.status().message());
    return out;
  }
  FileRecord rec;
  while ((*r)->next(&rec))
    out.records.push_back({rec.ts_ns, rec.wire_len, {rec.data.begin(), rec.data.end()}, rec.link});
  out.truncated = (*r)->truncatedRecords();
  out.bad_timestamps = (*r)->badTimestamps();
  out.warnings = (*r)->warnings();
  out.link_types = (*r)->stats().link_types;
  out.format = (*r)->stats().format;
  return out;
}

// `bytes` read as standard input ("-") from a pipe that a thread fills: the stream path of a pipe, not a file's.
ReaderOutput readThroughStdin(const std::vector<uint8_t>& bytes, ClassicReader classic) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const int saved = dup(STDIN_FILENO);
  dup2(fds[0], STDIN_FILENO);
  close(fds[0]);
  std::thread writer([&] {
    size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t w = write(fds[1], bytes.data() + off, bytes.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    close(fds[1]);
  });
  ReaderOutput out = readWith("-", classic);
  char drain[65536];
  while (read(STDIN_FILENO, drain, sizeof drain) > 0) {  // what a reader that stopped early left in the pipe
  }
  writer.join();
  dup2(saved, STDIN_FILENO);
  close(saved);
  return out;
}

void expectSameOutput(const ReaderOutput& own, const ReaderOutput& lib) {
  EXPECT_EQ(own.open_error, lib.open_error);
  ASSERT_EQ(own.records.size(), lib.records.size());
  for (size_t i = 0; i < own.records.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(own.records[i].ts, lib.records[i].ts);
    EXPECT_EQ(own.records[i].wire_len, lib.records[i].wire_len);
    EXPECT_EQ(own.records[i].data, lib.records[i].data);
    EXPECT_EQ(own.records[i].link, lib.records[i].link);
  }
  EXPECT_EQ(own.truncated, lib.truncated);
  EXPECT_EQ(own.bad_timestamps, lib.bad_timestamps);
  EXPECT_EQ(own.warnings, lib.warnings);
  EXPECT_EQ(own.link_types, lib.link_types);
  EXPECT_EQ(own.format, lib.format);
}

void expectSameAsLibpcap(const std::string& path, const std::vector<uint8_t>& bytes) {
  writeFile(path, bytes);
  expectSameOutput(readWith(path, ClassicReader::kOwnWherePlain), readWith(path, ClassicReader::kLibpcap));
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

// Our reader of plain classic pcap against libpcap on the same bytes: every record, count and warning equal,
// over the format's corners (time fields as libpcap signs them, the snap length's bounds, cuts at every kind
// of place, compressed streams cut off, a pipe) and over 300 files with random bytes changed, half of them in
// record headers.
TEST(FileReaderTest, PlainClassicPcapIsReadExactlyAsLibpcapReadsIt) {
  TempDir dir;
  constexpr uint32_t kUs = 0xA1B2C3D4, kNs = 0xA1B23C4D;
  const std::vector<uint8_t> frame = tcpFrame(1, 2, 7, 1000, 200);
  const uint32_t flen = static_cast<uint32_t>(frame.size());
  std::vector<std::pair<std::string, std::vector<uint8_t>>> cases;
  auto add = [&](const std::string& name, const ClassicBytes& b) { cases.emplace_back(name, b.bytes); };
  for (uint32_t magic : {kUs, kNs}) {
    const std::string m = magic == kUs ? "us-" : "ns-";
    ClassicBytes times(magic, 65535, 1);
    // Ordinary, a sub-second field of a second or more, negative ones (as libpcap reads 32-bit signed fields),
    // the largest second.
    for (uint32_t sec : {1'700'000'000u, 0u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu}) {
      for (uint32_t sub : {0u, 999'999u, 1'000'000u, 999'999'999u, 1'000'000'000u, 0x80000000u, 0xFFFFFFFFu}) {
        times.record(sec, sub, flen, flen + 4, frame);
      }
    }
    add(m + "times", times);
    ClassicBytes lens(magic, 128, 1);
    lens.record(1, 0, 0, 0, {});                            // empty
    lens.record(1, 1, 60, 40, pattern(60, 1));              // caplen over the wire length
    lens.record(1, 2, 128, 9000, pattern(128, 2));          // at the snap length
    lens.record(1, 3, 300, 300, pattern(300, 3));           // over it: the rest dropped
    lens.record(1, 4, 262144, 262144, pattern(262144, 4));  // at libpcap's maximum
    add(m + "lengths", lens);
    // 0 and above INT32_MAX mean the maximum; others are kept, even above it (only the error's words show it).
    for (uint32_t snap : {0u, 1000u, 262144u, 262145u, 4063231u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu}) {
      ClassicBytes b(magic, snap, 1);
      b.record(2, 0, 200'000, 200'000, pattern(200'000, 5)).record(2, 1, flen, flen, frame);
      b.record(2, 2, 262145, 262145, pattern(100, 6));  // over the maximum: reading stops
      add(m + "snap" + std::to_string(snap), b);
    }
    ClassicBytes over(magic, 65535, 1);
    over.record(3, 0, flen, flen, frame).record(3, 1, 262145, 262145, pattern(100, 6));  // over the maximum
    add(m + "over-maximum", over);
    ClassicBytes over_snap(magic, 1000, 1);
    over_snap.record(3, 0, flen, flen, frame).record(3, 1, 262145, 262145, pattern(100, 6));
    add(m + "over-maximum-small-snap", over_snap);
    // Cut off: in a record header, in the data (under and over the snap length, before and after it).
    const ClassicBytes whole = ClassicBytes(magic, 100, 1)
                                   .record(4, 0, flen, flen, frame)
                                   .record(4, 1, 50, 60, pattern(50, 7))
                                   .record(4, 2, 400, 400, pattern(400, 8));
    const size_t first_end = 24 + 16 + flen;
    for (size_t cut : {size_t{24}, first_end + 1, first_end + 15, first_end + 16, first_end + 40, first_end + 66,
                       first_end + 66 + 16 + 50, first_end + 66 + 16 + 99, first_end + 66 + 16 + 100,
                       first_end + 66 + 16 + 399, whole.bytes.size()}) {
      ClassicBytes c = whole;
      c.bytes.resize(cut);
      add(m + "cut" + std::to_string(cut), c);
    }
    // Link types: raw IP as LINKTYPE_RAW and as DLT_RAW, Linux cooked, BSD loopback, an FCS length in the
    // upper bits, and one we do not measure (libpcap reads it, and the reader refuses it at open).
    for (uint32_t lt : {101u, 12u, 113u, 276u, 0u, 108u, 228u, 1u | 0x04000000u | (4u << 28), 105u}) {
      ClassicBytes b(magic, 65535, lt);
      b.record(5, 0, flen - 14, flen - 14, std::vector<uint8_t>(frame.begin() + 14, frame.end()));
      add(m + "link" + std::to_string(lt), b);
    }
    // Many records of changing sizes across many reads, with a few near the maximum among them.
    ClassicBytes many(magic, 0, 1);
    std::mt19937 rng(11);
    for (uint32_t i = 0; i < 6000; ++i) {
      const uint32_t n = i % 997 == 5 ? 250'000 + i : 40 + rng() % 1500;
      many.record(6 + i / 1000, i * 1000, n, n + 10, pattern(n, static_cast<uint8_t>(i)));
    }
    add(m + "many", many);
  }
  // Headers our reader leaves to libpcap: the other byte order, earlier versions, a modified format.
  cases.emplace_back("swapped", std::vector<uint8_t>{0xA1, 0xB2, 0xC3, 0xD4, 0, 2, 0,    4,    0, 0, 0, 0,
                                                     0,    0,    0,    0,    0, 0, 0xFF, 0xFF, 0, 0, 0, 1});
  add("version-2.3", ClassicBytes(kUs, 65535, 1, 2, 3).record(7, 0, 40, flen, pattern(40, 9)));
  add("kuznetzov", ClassicBytes(0xA1B2CD34, 65535, 1).record(7, 0, 40, flen, pattern(48, 9)));
  size_t plain = 0;
  for (const auto& [name, bytes] : cases) {
    SCOPED_TRACE(name);
    plain += isPlainClassicPcap(bytes);
    expectSameAsLibpcap(dir.file(name + ".pcap"), bytes);
    // The same through gzip and zstd, whole and cut off in the middle (the stream's own error, where libpcap's
    // read fails), and through a pipe, whole and cut off mid-record.
    if (name.ends_with("many") || name.ends_with("times") || name.ends_with("lengths")) {
      const std::vector<uint8_t> gz = gzipOf(bytes);
      expectSameAsLibpcap(dir.file(name + ".pcap.gz"), gz);
      expectSameAsLibpcap(dir.file(name + "-cut.pcap.gz"),
                          std::vector<uint8_t>(gz.begin(), gz.begin() + gz.size() / 2));
      const std::vector<uint8_t> zst = zstdOf(bytes);
      expectSameAsLibpcap(dir.file(name + ".pcap.zst"), zst);
      expectSameAsLibpcap(dir.file(name + "-cut.pcap.zst"),
                          std::vector<uint8_t>(zst.begin(), zst.begin() + zst.size() / 2));
      expectSameOutput(readThroughStdin(bytes, ClassicReader::kOwnWherePlain),
                       readThroughStdin(bytes, ClassicReader::kLibpcap));
      const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + bytes.size() * 2 / 3);
      expectSameOutput(readThroughStdin(cut, ClassicReader::kOwnWherePlain),
                       readThroughStdin(cut, ClassicReader::kLibpcap));
    }
  }
  // All but those left to libpcap are read by ours: the three above and the two with a link type we do not
  // measure (libpcap's reader refuses those at open, with the message the tests of analyze check).
  // (The bytes are written little-endian: on a big-endian machine every file is the other byte order's, which
  // libpcap reads, and the comparison holds trivially.)
  if constexpr (std::endian::native == std::endian::little) {
    EXPECT_EQ(plain, cases.size() - 5);
  }

  // Random bytes changed in a real file's records (never its file header, so that our reader takes every one).
  std::vector<size_t> headers;  // where each record header starts
  const std::vector<uint8_t> base = [&] {
    ClassicBytes b(kNs, 2000, 1);
    for (uint32_t i = 0; i < 40; ++i) {
      headers.push_back(b.bytes.size());
      b.record(1'700'000'000 + i, i * 12345, 60 + i * 37, 60 + i * 40, pattern(60 + i * 37, static_cast<uint8_t>(i)));
    }
    return b.bytes;
  }();
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 300; ++trial) {
    SCOPED_TRACE(trial);
    std::vector<uint8_t> b = base;
    const int changes = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < changes; ++k) {
      // Half in a record header (the time, caplen and len fields), half anywhere after the file header.
      const size_t at = rng() % 2 ? headers[rng() % headers.size()] + rng() % 16 : 24 + rng() % (b.size() - 24);
      b[at] = static_cast<uint8_t>(rng());
    }
    if (rng() % 3 == 0) b.resize(24 + rng() % (b.size() - 24));
    if constexpr (std::endian::native == std::endian::little) {
      ASSERT_TRUE(isPlainClassicPcap(b));
    }
    expectSameAsLibpcap(dir.file("random.pcap"), b);
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(FileReaderTest, GzipAndZstdAreFoundFromTheContentAndReadAsThePlainFile) {
  TempDir dir;
  std::vector<Packet> packets;
  for (int i = 0; i < 2000; ++i) packets.push_back({kT0 + i * 777, tcpFrame(1, 2, static_cast<uint16_t>(i), 0, 1400)});
  writePcap(dir.file("plain.pcap"), packets);
  PcapngWriter ng;
  ng.section().interface(1, 9);
  for (const Packet& p : packets) ng.packet(0, static_cast<uint64_t>(p.ts_ns), p.data);
  const std::vector<uint8_t> classic = readFile(dir.file("plain.pcap"));
  const ReadResult want = readAll({dir.file("plain.pcap")});
  ASSERT_EQ(want.frames.size(), packets.size());
  struct Case {
    std::string name, compression;
    std::vector<uint8_t> bytes;
  };
  std::vector<uint8_t> two_members = gzipOf(std::vector<uint8_t>(classic.begin(), classic.begin() + 100'000));
  const std::vector<uint8_t> rest = gzipOf(std::vector<uint8_t>(classic.begin() + 100'000, classic.end()));
  two_members.insert(two_members.end(), rest.begin(), rest.end());
  for (const Case& c : {Case{"a.data", "gzip", gzipOf(classic)}, Case{"b.data", "zstd", zstdOf(classic)},
                        Case{"c.data", "gzip", two_members}, Case{"d.data", "zstd", zstdOf(ng.bytes)}}) {
    SCOPED_TRACE(c.name);
    writeFile(dir.file(c.name), c.bytes);
    ReadResult r = readAll({dir.file(c.name)});
    ASSERT_EQ(r.frames.size(), want.frames.size());
    for (size_t i = 0; i < r.frames.size(); ++i) {
      ASSERT_EQ(r.frames[i].ts, want.frames[i].ts);
      ASSERT_EQ(r.frames[i].data, want.frames[i].data);
    }
    EXPECT_EQ(r.stats.files[0].compression, c.compression);
    EXPECT_TRUE(r.stats.warnings.empty()) << r.stats.warnings[0];
    // Cut in the middle: what came before is read, the cut is a warning, nothing is made up.
    std::vector<uint8_t> cut(c.bytes.begin(), c.bytes.begin() + static_cast<ptrdiff_t>(c.bytes.size() / 2));
    writeFile(dir.file("cut-" + c.name), cut);
    ReadResult part = readAll({dir.file("cut-" + c.name)});
    EXPECT_GT(part.frames.size(), 0u);
    EXPECT_LT(part.frames.size(), want.frames.size());
    ASSERT_EQ(part.stats.warnings.size(), 1u);
    EXPECT_NE(part.stats.warnings[0].find("cut off"), std::string::npos) << part.stats.warnings[0];
  }
  // Compressed bytes that hold no capture: refused at open, naming the file.
  writeFile(dir.file("text.gz"), gzipOf({'h', 'e', 'l', 'l', 'o', '\n'}));
  auto s = openPcapFiles({dir.file("text.gz")});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("text.gz"), std::string::npos);
}

}  // namespace
}  // namespace burstscope
