// The flight recorder (src/recorder, docs/flight-recorder.md): a trigger from the real engine writes one file
// holding exactly the frames of its window; later triggers inside it or too soon are counted, not written; the
// disk bounds hold under a trigger storm; a ring too small for the window says so in the file; a producer
// writing while windows are copied out (run under ThreadSanitizer too) never puts a torn frame in a file. The
// files are read back with libpcap, as Wireshark and `analyze` read them. Against a real `run`:
// tests/recorder/check_flight_dpdk.py.
#include "src/recorder/flight_recorder.h"

#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "burstscope/decode.h"
#include "burstscope/window.h"
#include "tests/common/frames.h"

namespace burstscope {
namespace {

namespace fs = std::filesystem;
using testing::FrameBuilder;
using testing::ip4;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;  // 2023-11-14, any wall-clock time

// A UDP frame of `size` bytes whose payload starts with `seq`, so that a test knows which frame it read back.
std::vector<uint8_t> frame(uint32_t seq, size_t size) {
  FrameBuilder b;
  const size_t payload = size - 14 - 20 - 8;
  b.eth(0x0800).ipv4(ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 17, static_cast<uint16_t>(8 + payload));
  b.ports(4000, 5000, static_cast<uint16_t>(8 + payload)).u32(seq).payload(payload - 4);
  return b.bytes;
}

struct Sent {
  int64_t ts_ns;
  uint32_t seq;
  std::vector<uint8_t> bytes;
};

struct ReadFrame {
  int64_t ts_ns;
  uint32_t wire_len;
  std::vector<uint8_t> data;
};

struct ReadFile {
  std::vector<ReadFrame> frames;
  std::string comment;  // the section header's comment, read from the file's bytes
};

ReadFile readBack(const std::string& path) {
  ReadFile out;
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  EXPECT_NE(p, nullptr) << err;
  if (p == nullptr) return out;
  pcap_pkthdr* h;
  const u_char* d;
  while (pcap_next_ex(p, &h, &d) == 1) {
    out.frames.push_back(ReadFrame{static_cast<int64_t>(h->ts.tv_sec) * 1'000'000'000 + h->ts.tv_usec, h->len,
                                   std::vector<uint8_t>(d, d + h->caplen)});
  }
  pcap_close(p);
  // opt_comment (code 1) is the first option of the section header block at offset 24.
  FILE* f = std::fopen(path.c_str(), "rb");
  std::vector<uint8_t> head(65536);
  head.resize(std::fread(head.data(), 1, head.size(), f));
  std::fclose(f);
  uint16_t code, len;
  std::memcpy(&code, head.data() + 24, 2);
  std::memcpy(&len, head.data() + 26, 2);
  if (code == 1) out.comment.assign(reinterpret_cast<const char*>(head.data() + 28), len);
  return out;
}

std::vector<std::string> filesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

class FlightRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("bs-flight-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  FlightRecorderConfig config() const {
    FlightRecorderConfig c;
    c.enabled = true;
    c.directory = dir_;
    c.memory_bytes = 64 << 20;
    c.before_ns = 20'000'000;
    c.after_ns = 10'000'000;
    return c;
  }

  // A recorder of one port and queue, its writer started.
  static absl::StatusOr<std::unique_ptr<FlightRecorder>> started(const FlightRecorderConfig& c) {
    auto rec = FlightRecorder::create(c, {FlightPortInfo{"mirror0", 10e9, 100'000, 1}});
    if (rec.ok()) (*rec)->start();
    return rec;
  }

  std::string dir_;
};

uint64_t count(const FlightRecorderStats& s, FlightTrigger t, FlightResult r) {
  return s.ports.at(0).triggers[static_cast<int>(t)][static_cast<int>(r)];
}

// Background traffic (1000 B every 1 ms), bursts of 200 frames 0.5 µs apart at the given times, through the tap
// and, decoded, through a real engine on one thread (as the RX thread and the worker would in order).
std::vector<Sent> feed(FlightRecorder& rec, Engine& engine, const std::vector<int64_t>& bursts, int64_t span_ns) {
  std::vector<Sent> sent;
  uint32_t seq = 0;
  for (int64_t t = 0; t < span_ns; t += 1'000'000) sent.push_back(Sent{kT0 + t, seq++, {}});
  for (int64_t b : bursts) {
    for (int i = 0; i < 200; ++i) sent.push_back(Sent{kT0 + b + i * 500, seq++, {}});
  }
  std::stable_sort(sent.begin(), sent.end(), [](const Sent& a, const Sent& b) { return a.ts_ns < b.ts_ns; });
  Decoder decoder;
  FrameTap* tap = rec.tap(0, 0);
  for (Sent& s : sent) {
    s.bytes = frame(s.seq, 1000);
    tap->onFrame(s.bytes, static_cast<uint32_t>(s.bytes.size()), s.ts_ns, LinkType::kEthernet);
    PacketRecord r;
    decoder.decode(s.bytes, static_cast<uint32_t>(s.bytes.size()), &r);
    r.ts_ns = s.ts_ns;
    engine.add(r);
  }
  engine.finish();
  return sent;
}

TEST_F(FlightRecorderTest, MicroburstWritesOneFileWithExactlyItsWindow) {
  FlightRecorderConfig c = config();
  c.microburst_bytes = 100'000;
  c.min_interval_ns = 3'600'000'000'000;
  auto rec = FlightRecorder::create(c, {FlightPortInfo{"mirror0", 10e9, 100'000, 1}});
  ASSERT_TRUE(rec.ok()) << rec.status();
  EngineConfig ec;
  ec.link_capacity_bps = 10e9;
  Engine engine(ec);
  engine.subscribe((*rec)->observer(0));
  // Three bursts: the first triggers; the second falls inside its window (after part); the third is later, but
  // sooner than min-interval.
  const auto sent = feed(**rec, engine, {200'000'000, 205'000'000, 400'000'000}, 600'000'000);
  (*rec)->start();
  ASSERT_TRUE((*rec)->waitIdle(30'000'000'000));
  const FlightRecorderStats s = (*rec)->stats();
  EXPECT_EQ(count(s, FlightTrigger::kMicroburst, FlightResult::kWritten), 1u);
  EXPECT_EQ(count(s, FlightTrigger::kMicroburst, FlightResult::kInWindow), 1u);
  EXPECT_EQ(count(s, FlightTrigger::kMicroburst, FlightResult::kRateLimited), 1u);
  const auto files = filesIn(dir_);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find("burstscope-mirror0-"), std::string::npos);
  EXPECT_NE(files[0].find("-microburst.pcapng"), std::string::npos);

  // The window is the first microburst the engine found, widened by before and after.
  const EngineResult result = engine.result();
  ASSERT_TRUE(result.port.microbursts.has_value());
  ASSERT_GE(result.port.microbursts->events.size(), 1u);
  const Microburst& m = result.port.microbursts->events[0];
  const int64_t from = m.start_ns - c.before_ns, to = m.end_ns + c.after_ns;
  std::vector<const Sent*> want;
  for (const Sent& x : sent) {
    if (x.ts_ns >= from && x.ts_ns <= to) want.push_back(&x);
  }
  const ReadFile got = readBack(files[0]);
  ASSERT_EQ(got.frames.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got.frames[i].ts_ns, want[i]->ts_ns);
    EXPECT_EQ(got.frames[i].wire_len, want[i]->bytes.size());
    ASSERT_EQ(got.frames[i].data.size(), c.snap_length);
    EXPECT_TRUE(std::equal(got.frames[i].data.begin(), got.frames[i].data.end(), want[i]->bytes.begin())) << i;
  }
  EXPECT_NE(got.comment.find("trigger=microburst"), std::string::npos) << got.comment;
  EXPECT_NE(got.comment.find("port=mirror0"), std::string::npos);
  EXPECT_NE(got.comment.find("frames=" + std::to_string(want.size())), std::string::npos) << got.comment;
  EXPECT_EQ(s.ports[0].frames_written, want.size());
  EXPECT_EQ(s.ports[0].frames_torn, 0u);
}

TEST_F(FlightRecorderTest, BacklogAboveTheBufferTriggers) {
  FlightRecorderConfig c = config();
  // At 1 Gbit/s one burst of 200 KB leaves ~175 KB queued; a second one 0.5 ms later piles up ~310 KB.
  c.backlog_bytes = 250'000;
  EngineConfig ec;
  ec.link_capacity_bps = 1e9;
  {
    auto one = FlightRecorder::create(c, {FlightPortInfo{"mirror0", 1e9, 100'000, 1}});
    ASSERT_TRUE(one.ok()) << one.status();
    Engine engine(ec);
    engine.subscribe((*one)->observer(0));
    feed(**one, engine, {100'000'000}, 200'000'000);
    (*one)->start();
    ASSERT_TRUE((*one)->waitIdle(30'000'000'000));
    EXPECT_EQ(count((*one)->stats(), FlightTrigger::kBacklog, FlightResult::kWritten), 0u);
    EXPECT_TRUE(filesIn(dir_).empty());
  }
  auto rec = FlightRecorder::create(c, {FlightPortInfo{"mirror0", 1e9, 100'000, 1}});
  ASSERT_TRUE(rec.ok()) << rec.status();
  Engine engine(ec);
  engine.subscribe((*rec)->observer(0));
  feed(**rec, engine, {100'000'000, 100'500'000}, 200'000'000);
  (*rec)->start();
  ASSERT_TRUE((*rec)->waitIdle(30'000'000'000));
  const FlightRecorderStats s = (*rec)->stats();
  EXPECT_EQ(count(s, FlightTrigger::kBacklog, FlightResult::kWritten), 1u);
  const auto files = filesIn(dir_);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find("-backlog.pcapng"), std::string::npos);
  EXPECT_NE(readBack(files[0]).comment.find("trigger=backlog"), std::string::npos);
}

// Fan-in comes from the training analysis at an interval's close: at or above the threshold, a file of the
// interval widened by before and after; below it, nothing.
TEST_F(FlightRecorderTest, FanInAtTheThresholdWritesTheInterval) {
  FlightRecorderConfig c = config();
  c.fanin_sources = 3;
  c.before_ns = 0;
  c.after_ns = 0;
  auto rec = FlightRecorder::create(c, {FlightPortInfo{"mirror0", 10e9, 100'000, 1}});
  ASSERT_TRUE(rec.ok()) << rec.status();
  for (uint32_t i = 0; i < 30; ++i) {
    const auto f = frame(i, 200);
    (*rec)->tap(0, 0)->onFrame(f, 200, kT0 + int64_t{i} * 100'000'000, LinkType::kEthernet);
  }
  (*rec)->start();
  TrainingReport analysis;
  analysis.destinations.resize(2);
  analysis.destinations[0].host = "10.0.0.3";
  analysis.destinations[0].max_sources = 1;
  analysis.destinations[1].host = "10.0.0.4";
  analysis.destinations[1].max_sources = 2;
  (*rec)->onInterval(0, kT0, kT0 + 1'000'000'000, &analysis);  // below: nothing
  ASSERT_TRUE((*rec)->waitIdle(30'000'000'000));
  EXPECT_TRUE(filesIn(dir_).empty());
  // Two intervals, the analysis at the second's close: the file covers both.
  analysis.destinations[1].max_sources = 3;
  (*rec)->onInterval(0, kT0 + 1'000'000'000, kT0 + 1'500'000'000, nullptr);
  (*rec)->onInterval(0, kT0 + 1'500'000'000, kT0 + 2'000'000'000, &analysis);
  ASSERT_TRUE((*rec)->waitIdle(30'000'000'000));
  const auto files = filesIn(dir_);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find("-fan_in.pcapng"), std::string::npos);
  const ReadFile got = readBack(files[0]);
  ASSERT_EQ(got.frames.size(), 11u);  // the frames at 1.0, 1.1, ..., 2.0 s (the interval's end included)
  EXPECT_EQ(got.frames.front().ts_ns, kT0 + 1'000'000'000);
  EXPECT_NE(got.comment.find("3 sources bursting toward 10.0.0.4"), std::string::npos) << got.comment;
  EXPECT_EQ(count((*rec)->stats(), FlightTrigger::kFanIn, FlightResult::kWritten), 1u);
}

TEST_F(FlightRecorderTest, TriggerStormKeepsTheDiskAndRateBounds) {
  FlightRecorderConfig c = config();
  c.before_ns = 1'000'000;
  c.after_ns = 0;
  c.min_interval_ns = 0;
  c.max_files = 3;
  auto rec = started(c);
  ASSERT_TRUE(rec.ok()) << rec.status();
  FrameTap* tap = (*rec)->tap(0, 0);
  // 40 on-demand triggers, each around a new frame 10 ms after the last: 40 files written, the oldest removed.
  for (uint32_t i = 0; i < 40; ++i) {
    const auto f = frame(i, 200);
    tap->onFrame(f, 200, kT0 + int64_t{i} * 10'000'000, LinkType::kEthernet);
    const auto said = (*rec)->triggerNow();
    ASSERT_EQ(said.size(), 1u);
    EXPECT_NE(said[0].find(".pcapng"), std::string::npos) << said[0];
    ASSERT_TRUE((*rec)->waitIdle(30'000'000'000));
  }
  FlightRecorderStats s = (*rec)->stats();
  EXPECT_EQ(count(s, FlightTrigger::kOnDemand, FlightResult::kWritten), 40u);
  EXPECT_EQ(filesIn(dir_).size(), 3u);
  EXPECT_EQ(s.disk_files, 3u);
  EXPECT_EQ(s.files_deleted, 37u);
  uint64_t on_disk = 0;
  for (const auto& f : filesIn(dir_)) on_disk += fs::file_size(f);
  EXPECT_EQ(s.disk_bytes, on_disk);
  // The newest three are kept, each holding its one frame.
  const auto kept = filesIn(dir_);
  EXPECT_EQ(readBack(kept.back()).frames.size(), 1u);
  // The same trigger again names the same newest frame: inside the last window, not written twice.
  EXPECT_NE((*rec)->triggerNow()[0].find("skipped"), std::string::npos);
  s = (*rec)->stats();
  EXPECT_EQ(count(s, FlightTrigger::kOnDemand, FlightResult::kInWindow), 1u);

  // A storm under a rate limit: one file, every other trigger counted as rate-limited.
  (*rec)->stop();
  fs::remove_all(dir_);
  c.min_interval_ns = 3'600'000'000'000;
  auto limited = FlightRecorder::create(c, {FlightPortInfo{"mirror0", 10e9, 100'000, 1}});
  ASSERT_TRUE(limited.ok()) << limited.status();
  (*limited)->start();
  for (uint32_t i = 0; i < 100; ++i) {
    const auto f = frame(i, 200);
    (*limited)->tap(0, 0)->onFrame(f, 200, kT0 + int64_t{i} * 10'000'000, LinkType::kEthernet);
    (*limited)->triggerNow();
  }
  ASSERT_TRUE((*limited)->waitIdle(30'000'000'000));
  s = (*limited)->stats();
  EXPECT_EQ(count(s, FlightTrigger::kOnDemand, FlightResult::kWritten), 1u);
  EXPECT_EQ(count(s, FlightTrigger::kOnDemand, FlightResult::kRateLimited), 99u);
  EXPECT_EQ(filesIn(dir_).size(), 1u);
}

// The file just written is never the one removed, even when its event time sorts first (a replayed old
// capture, a clock stepped back): an older-looking name of the directory goes instead.
TEST_F(FlightRecorderTest, TheNewestFileIsKeptWhateverItsTime) {
  FlightRecorderConfig c = config();
  c.max_files = 1;
  c.after_ns = 0;
  fs::create_directories(dir_);
  const std::string later = dir_ + "/burstscope-mirror0-20991231T000000.000000000Z-on_demand.pcapng";
  std::ofstream(later) << "x";
  auto rec = started(c);
  ASSERT_TRUE(rec.ok()) << rec.status();
  const auto f = frame(1, 200);
  (*rec)->tap(0, 0)->onFrame(f, 200, kT0, LinkType::kEthernet);  // 2023: sorts before 2099
  const auto said = (*rec)->triggerNow();
  ASSERT_TRUE((*rec)->waitIdle(30'000'000'000));
  const auto files = filesIn(dir_);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0], (*rec)->stats().last_file);
  EXPECT_NE(files[0], later);
  EXPECT_EQ((*rec)->stats().files_deleted, 1u);
}

TEST_F(FlightRecorderTest, DiskBytesBoundRemovesOldestFiles) {
  FlightRecorderConfig c = config();
  c.before_ns = 1'000'000'000;
  c.after_ns = 0;
  c.min_interval_ns = 0;
  c.max_disk_bytes = 1 << 20;
  auto rec = started(c);
  ASSERT_TRUE(rec.ok()) << rec.status();
  // Each file holds up to 2,000 frames of 128 kept bytes (~300 KB); the directory never goes past 1 MiB.
  uint32_t seq = 0;
  for (int k = 0; k < 10; ++k) {
    for (int i = 0; i < 2000; ++i, ++seq) {
      const auto f = frame(seq, 1500);
      (*rec)->tap(0, 0)->onFrame(f, 1500, kT0 + int64_t{seq} * 1'000'000, LinkType::kEthernet);
    }
    (*rec)->triggerNow();
    ASSERT_TRUE((*rec)->waitIdle(30'000'000'000));
    uint64_t on_disk = 0;
    for (const auto& f : filesIn(dir_)) on_disk += fs::file_size(f);
    EXPECT_LE(on_disk, c.max_disk_bytes);
  }
  const FlightRecorderStats s = (*rec)->stats();
  EXPECT_EQ(count(s, FlightTrigger::kOnDemand, FlightResult::kWritten), 10u);
  EXPECT_GT(s.files_deleted, 0u);
  EXPECT_EQ(s.files_deleted + s.disk_files, 10u);
}

TEST_F(FlightRecorderTest, RingSmallerThanTheWindowSaysSo) {
  FlightRecorderConfig c = config();
  c.snap_length = 64;
  c.memory_bytes = 8 * (3 + 8) * 1024;  // exactly 1024 frames
  c.before_ns = 10'000'000'000;
  c.after_ns = 0;
  auto rec = FlightRecorder::create(c, {FlightPortInfo{"mirror0", 10e9, 100'000, 1}});
  ASSERT_TRUE(rec.ok()) << rec.status();
  for (uint32_t i = 0; i < 5000; ++i) {
    const auto f = frame(i, 100);
    (*rec)->tap(0, 0)->onFrame(f, 100, kT0 + int64_t{i} * 1000, LinkType::kEthernet);
  }
  (*rec)->start();
  (*rec)->triggerNow();
  ASSERT_TRUE((*rec)->waitIdle(30'000'000'000));
  const auto files = filesIn(dir_);
  ASSERT_EQ(files.size(), 1u);
  const ReadFile got = readBack(files[0]);
  // The newest 1024 frames, in order; the oldest of them may be taken as under rewrite.
  ASSERT_GE(got.frames.size(), 1023u);
  ASSERT_LE(got.frames.size(), 1024u);
  for (size_t i = 0; i < got.frames.size(); ++i) {
    uint32_t seq;
    std::memcpy(&seq, got.frames[i].data.data() + 42, 4);
    EXPECT_EQ(__builtin_bswap32(seq), 5000 - got.frames.size() + i);
  }
  EXPECT_NE(got.comment.find("held frames from"), std::string::npos) << got.comment;
}

// A producer writing as fast as it can into a small ring while windows reaching back past its oldest frame are
// cut from it: the copy meets the overwriting at the ring's tail, and the frames met there are left out and
// counted, never put in a file torn (each file is a run of consecutive, whole frames). Under ThreadSanitizer
// (scripts/test.sh) this is also the ring's race check.
TEST_F(FlightRecorderTest, ConcurrentProducerNeverPutsATornFrameInAFile) {
  FlightRecorderConfig c = config();
  c.memory_bytes = 8 * (3 + 16) * 4096;  // 4,096 frames of 128 bytes
  c.before_ns = 10'000'000'000;          // every frame the ring holds
  c.after_ns = 0;
  c.min_interval_ns = 0;
  c.max_files = 3;
  auto rec = started(c);
  ASSERT_TRUE(rec.ok()) << rec.status();
  std::atomic<bool> done{false};
  std::atomic<uint32_t> produced{0};
  std::thread producer([&] {
    FrameTap* tap = (*rec)->tap(0, 0);
    for (uint32_t i = 0; !done.load(std::memory_order_relaxed); ++i) {
      auto f = frame(i, 128);
      // Every byte after the sequence number repeats it, so that a frame mixed from two writes shows.
      for (size_t k = 46; k + 4 <= f.size(); k += 4) std::memcpy(f.data() + k, f.data() + 42, 4);
      tap->onFrame(f, 128, kT0 + int64_t{i} * 1000, LinkType::kEthernet);
      produced.store(i + 1, std::memory_order_relaxed);
    }
  });
  // Every file, read back as soon as it is written: a run of consecutive, whole frames.
  size_t checked = 0;
  auto check = [&](const std::string& path) {
    const ReadFile got = readBack(path);
    for (size_t i = 0; i < got.frames.size(); ++i) {
      const auto& d = got.frames[i].data;
      ASSERT_EQ(d.size(), 128u);
      for (size_t k = 46; k + 4 <= d.size(); k += 4) ASSERT_EQ(std::memcmp(d.data() + k, d.data() + 42, 4), 0);
      if (i > 0) {
        uint32_t a, b;
        std::memcpy(&a, got.frames[i - 1].data.data() + 42, 4);
        std::memcpy(&b, d.data() + 42, 4);
        ASSERT_EQ(__builtin_bswap32(b), __builtin_bswap32(a) + 1) << path;
      }
      ++checked;
    }
  };
  // At least 300 windows, each after a new frame (waited for with a bound), and on until a copy has met the
  // producer: on a loaded machine the two threads may take turns on one core and rarely overlap (bounded:
  // 20,000 windows or 60 s).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int windows = 0;
  for (; windows < 20'000 && std::chrono::steady_clock::now() < until; ++windows) {
    if (windows >= 300 && (*rec)->stats().ports[0].frames_torn > 0) break;
    const uint32_t seen = produced.load(std::memory_order_relaxed);
    for (int w = 0; w < 10000 && produced.load(std::memory_order_relaxed) == seen; ++w) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    (*rec)->triggerNow();
    ASSERT_TRUE((*rec)->waitIdle(30'000'000'000));
    check((*rec)->stats().last_file);
    if (::testing::Test::HasFatalFailure()) break;
  }
  done.store(true);
  producer.join();
  (*rec)->stop();
  const uint64_t torn = (*rec)->stats().ports[0].frames_torn;
  std::cout << "frames torn while copying windows: " << torn << ", frames checked: " << checked << " in " << windows
            << " windows\n";
  EXPECT_GT(torn, 0u) << "no copy met the producer in " << windows << " windows";
  EXPECT_GT(checked, 0u);
}

TEST_F(FlightRecorderTest, BadConfigNamesTheKey) {
  FlightRecorderConfig c = config();
  c.snap_length = 10;
  auto r = FlightRecorder::create(c, {FlightPortInfo{"mirror0", 10e9, 100'000, 1}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("flight-recorder.snap-length"), std::string::npos);
  c = config();
  c.memory_bytes = 1000;
  r = FlightRecorder::create(c, {FlightPortInfo{"mirror0", 10e9, 100'000, 4}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("flight-recorder.memory-bytes"), std::string::npos);
  c = config();
  c.directory = "/proc/no-such-place/flight";
  r = FlightRecorder::create(c, {FlightPortInfo{"mirror0", 10e9, 100'000, 1}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("flight-recorder.directory"), std::string::npos);
}

}  // namespace
}  // namespace burstscope
