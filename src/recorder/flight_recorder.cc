#include "src/recorder/flight_recorder.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace burstscope {
namespace {

namespace fs = std::filesystem;

int64_t monoNs() { return clockNs(CLOCK_MONOTONIC); }

// 64-bit words of a ring slot: stamp, ts, wire_len | cap_len | link, then the snap length's bytes.
size_t slotWords(uint32_t snap_length) { return 3 + (snap_length + 7) / 8; }

std::string utcText(int64_t ns) {
  return absl::FormatTime("%Y%m%dT%H%M%E9SZ", absl::FromUnixNanos(ns), absl::UTCTimeZone());
}

std::string isoText(int64_t ns) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E9SZ", absl::FromUnixNanos(ns), absl::UTCTimeZone());
}

// A port name as a file-name part: letters, digits, '.', '-' and '_' kept, the rest '_'.
std::string fileNamePart(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    if (!ok) c = '_';
  }
  return out;
}

bool isRecorderFile(const fs::path& p) {
  const std::string n = p.filename().string();
  return n.rfind("burstscope-", 0) == 0 && n.size() > 7 && n.compare(n.size() - 7, 7, ".pcapng") == 0;
}

// pcapng blocks (draft-ietf-opsawg-pcapng), written in the host's byte order as the section header allows.
class BlockWriter {
 public:
  void u16(uint16_t v) { raw(&v, 2); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  void pad() {
    while (buf_.size() % 4 != 0) buf_.push_back(0);
  }
  void option(uint16_t code, const void* p, size_t n) {
    u16(code);
    u16(static_cast<uint16_t>(n));
    raw(p, n);
    pad();
  }
  void option(uint16_t code, const std::string& s) { option(code, s.data(), std::min<size_t>(s.size(), 65535)); }
  void endOptions() { u32(0); }
  // Starts a block of `type`; finish() fills in its length (twice, as the format wants).
  void begin(uint32_t type) {
    start_ = buf_.size();
    u32(type);
    u32(0);
  }
  void finish() {
    const auto len = static_cast<uint32_t>(buf_.size() - start_ + 4);
    std::memcpy(buf_.data() + start_ + 4, &len, 4);
    u32(len);
  }
  std::vector<uint8_t>& bytes() { return buf_; }

 private:
  std::vector<uint8_t> buf_;
  size_t start_ = 0;
};

}  // namespace

const char* flightTriggerName(FlightTrigger t) {
  switch (t) {
    case FlightTrigger::kMicroburst:
      return "microburst";
    case FlightTrigger::kBacklog:
      return "backlog";
    case FlightTrigger::kOnDemand:
      return "on_demand";
    case FlightTrigger::kFanIn:
      return "fan_in";
  }
  return "on_demand";
}

const char* flightResultName(FlightResult r) {
  switch (r) {
    case FlightResult::kWritten:
      return "written";
    case FlightResult::kRateLimited:
      return "rate_limited";
    case FlightResult::kInWindow:
      return "in_window";
    case FlightResult::kFailed:
      return "failed";
  }
  return "failed";
}

absl::Status writeFlightPcapng(const std::string& path, const std::string& interface_name, uint32_t snap_length,
                               const std::string& comment, const std::vector<FlightFrame>& frames,
                               uint64_t* bytes_written) {
  BlockWriter w;
  // Section header: byte-order magic, version 1.0, section length unknown; the trigger as its comment.
  w.begin(0x0A0D0D0A);
  w.u32(0x1A2B3C4D);
  w.u16(1);
  w.u16(0);
  w.u64(~uint64_t{0});
  w.option(1, comment);                                                               // opt_comment
  w.option(4, std::string("burstscope ") + BURSTSCOPE_VERSION + " flight recorder");  // shb_userappl
  w.endOptions();
  w.finish();
  // One interface per link type met, in order of first use; nanosecond timestamps (if_tsresol 9). A frame of a
  // link type with no LINKTYPE_ value is left out (live capture is all Ethernet).
  std::vector<LinkType> links;
  for (const FlightFrame& f : frames) {
    if (linkTypeToPcap(f.link) && std::find(links.begin(), links.end(), f.link) == links.end()) links.push_back(f.link);
  }
  if (links.empty()) links.push_back(LinkType::kEthernet);
  for (LinkType l : links) {
    w.begin(1);
    w.u16(static_cast<uint16_t>(linkTypeToPcap(l).value_or(1)));
    w.u16(0);
    w.u32(snap_length);
    w.option(2, interface_name);  // if_name
    const uint8_t ns = 9;
    w.option(9, &ns, 1);  // if_tsresol
    w.endOptions();
    w.finish();
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return absl::UnavailableError(absl::StrCat(path, ": cannot be written: ", std::system_category().message(errno)));
  uint64_t total = 0;
  auto flush = [&] {
    out.write(reinterpret_cast<const char*>(w.bytes().data()), static_cast<std::streamsize>(w.bytes().size()));
    total += w.bytes().size();
    w.bytes().clear();
  };
  flush();
  for (const FlightFrame& f : frames) {
    const auto found = std::find(links.begin(), links.end(), f.link);
    if (found == links.end()) continue;
    const auto ifc = static_cast<uint32_t>(found - links.begin());
    const auto ts = static_cast<uint64_t>(f.ts_ns);
    w.begin(6);  // enhanced packet block
    w.u32(ifc);
    w.u32(static_cast<uint32_t>(ts >> 32));
    w.u32(static_cast<uint32_t>(ts));
    w.u32(static_cast<uint32_t>(f.data.size()));
    w.u32(f.wire_len);
    w.raw(f.data.data(), f.data.size());
    w.pad();
    w.finish();
    if (w.bytes().size() >= (size_t{1} << 20)) flush();
  }
  flush();
  out.close();
  if (!out)
    return absl::UnavailableError(absl::StrCat(path, ": write failed: ", std::system_category().message(errno)));
  if (bytes_written) *bytes_written = total;
  return absl::OkStatus();
}

// One capture queue's frames: fixed slots of 64-bit words [stamp, ts, wire_len | cap_len << 32 | link << 48,
// data...], one writer (the queue's producer thread). A slot's stamp is 0 while it is written and its index
// + 1 after; the data words are stored release and read acquire, so a reader that saw any new word sees the
// stamp's reset too (its second stamp read differs from its first): a torn copy is always detected.
struct FlightRecorder::Ring final : FrameTap {
  Ring(size_t capacity, uint32_t snap)
      : words(std::make_unique<std::atomic<uint64_t>[]>(capacity * slotWords(snap))),
        slot_words(slotWords(snap)),
        mask(capacity - 1),
        snap_length(snap) {}

  void onFrame(std::span<const uint8_t> data, uint32_t wire_len, int64_t ts_ns, LinkType link) override {
    std::atomic<uint64_t>* s = &words[(head & mask) * slot_words];
    const size_t n = std::min<size_t>(data.size(), snap_length);
    s[0].store(0, std::memory_order_relaxed);
    s[1].store(static_cast<uint64_t>(ts_ns), std::memory_order_release);
    s[2].store(wire_len | (uint64_t{n} << 32) | (uint64_t{static_cast<uint8_t>(link)} << 48),
               std::memory_order_release);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t v;
      std::memcpy(&v, data.data() + i, 8);
      s[3 + i / 8].store(v, std::memory_order_release);
    }
    if (i < n) {
      uint64_t v = 0;
      std::memcpy(&v, data.data() + i, n - i);
      s[3 + i / 8].store(v, std::memory_order_release);
    }
    s[0].store(head + 1, std::memory_order_release);
    ++head;
    published.store(head, std::memory_order_release);
  }

  // The whole frames with from <= ts <= to, read newest first back to the first one older than `from` by more
  // than kSlackNs (a queue's timestamps may step back a little: a frame just inside the window can come after
  // one just outside it).
  // *torn counts frames overwritten before or while they were read; *covered says the ring still held a frame
  // older than `from` (else the window begins later than asked).
  void copyWindow(int64_t from, int64_t to, std::vector<FlightFrame>* out, uint64_t* torn, bool* covered) const {
    const uint64_t end = published.load(std::memory_order_acquire);
    const uint64_t capacity = mask + 1;
    const uint64_t begin = end > capacity ? end - capacity : 0;
    *covered = begin == 0;  // a ring never filled holds everything since the start
    std::vector<FlightFrame> got;
    for (uint64_t i = end; i-- > begin;) {
      const std::atomic<uint64_t>* s = &words[(i & mask) * slot_words];
      const uint64_t stamp = s[0].load(std::memory_order_acquire);
      if (stamp != i + 1) {  // already overwritten by a newer frame: every older one is gone too
        *torn += 1;
        *covered = false;
        break;
      }
      const auto ts = static_cast<int64_t>(s[1].load(std::memory_order_acquire));
      const uint64_t meta = s[2].load(std::memory_order_acquire);
      FlightFrame f;
      f.ts_ns = ts;
      f.wire_len = static_cast<uint32_t>(meta);
      const size_t n = std::min<size_t>((meta >> 32) & 0xffff, snap_length);
      f.link = static_cast<LinkType>((meta >> 48) & 0xff);
      if (ts >= from && ts <= to) {  // only those are copied
        f.data.resize((n + 7) / 8 * 8);
        for (size_t k = 0; k < f.data.size() / 8; ++k) {
          const uint64_t v = s[3 + k].load(std::memory_order_acquire);
          std::memcpy(f.data.data() + k * 8, &v, 8);
        }
        f.data.resize(n);
      }
      if (s[0].load(std::memory_order_relaxed) != stamp) {
        *torn += 1;
        *covered = false;
        break;
      }
      if (ts < from - kSlackNs) {
        *covered = true;
        break;
      }
      if (ts >= from && ts <= to) got.push_back(std::move(f));
    }
    out->insert(out->end(), std::make_move_iterator(got.rbegin()), std::make_move_iterator(got.rend()));
  }

  // The newest frame's time, or INT64_MIN if none: the slot published last (a whole ring of frames would have to
  // come before it is rewritten).
  int64_t newestTs() const {
    const uint64_t end = published.load(std::memory_order_acquire);
    if (end == 0) return INT64_MIN;
    return static_cast<int64_t>(words[((end - 1) & mask) * slot_words + 1].load(std::memory_order_acquire));
  }

  // The oldest frame's time still held, or INT64_MIN if none (racy by nature: a figure for the metrics).
  int64_t oldestTs() const {
    const uint64_t end = published.load(std::memory_order_acquire);
    if (end == 0) return INT64_MIN;
    const uint64_t capacity = mask + 1;
    const uint64_t i = end > capacity ? end - capacity + 1 : 0;  // +1: the oldest may be under rewrite
    if (i >= end) return INT64_MIN;
    return static_cast<int64_t>(words[(i & mask) * slot_words + 1].load(std::memory_order_acquire));
  }

  static constexpr int64_t kSlackNs = 10'000'000;
  std::unique_ptr<std::atomic<uint64_t>[]> words;
  const size_t slot_words;
  const uint64_t mask;
  const uint32_t snap_length;
  uint64_t head = 0;  // producer's
  alignas(64) std::atomic<uint64_t> published{0};
};

// A port: its queues' rings, and the triggers its engine raises (an observer on the port's worker).
struct FlightRecorder::Port final : EngineObserver {
  FlightRecorder* recorder = nullptr;
  size_t index = 0;
  FlightPortInfo info;
  std::vector<std::unique_ptr<Ring>> rings;
  // The worker's: a fluid queue at the link speed, at each base bin's end.
  double backlog = 0;
  int64_t last_end_ns = INT64_MIN;
  bool over = false;
  // The control thread's: the start of the first interval since the last training analysis.
  int64_t analysed_from = INT64_MIN;
  // Under recorder->mu_:
  FlightPortStats stats;
  int64_t last_request_mono = INT64_MIN;
  int64_t covered_from = 0, covered_to = -1;  // the window of the newest request

  void onMicroburst(const Microburst& m) override {
    const uint64_t limit = recorder->config_.microburst_bytes;
    if (limit == 0 || m.bytes < limit) return;
    recorder->request(index, FlightTrigger::kMicroburst, m.start_ns, m.end_ns,
                      absl::StrCat("microburst of ", m.bytes, " bytes, peak ", m.peak_bps / 1e9, " Gbit/s"));
  }

  void onBaseBin(int64_t start_ns, uint64_t bytes, uint64_t /*packets*/) override {
    const uint64_t limit = recorder->config_.backlog_bytes;
    if (limit == 0 || info.link_bps <= 0) return;
    const int64_t end = start_ns + info.base_bin_ns;
    if (last_end_ns != INT64_MIN) {
      backlog = std::max(0.0, backlog - info.link_bps / 8 * static_cast<double>(start_ns - last_end_ns) * 1e-9);
    }
    backlog = std::max(
        0.0, backlog + static_cast<double>(bytes) - info.link_bps / 8 * static_cast<double>(info.base_bin_ns) * 1e-9);
    last_end_ns = end;
    const bool now_over = backlog > static_cast<double>(limit);
    if (now_over && !over) {
      recorder->request(index, FlightTrigger::kBacklog, start_ns, end,
                        absl::StrCat("backlog ", static_cast<uint64_t>(backlog), " bytes at ", info.link_bps / 1e9,
                                     " Gbit/s above ", limit));
    }
    over = now_over;
  }

  int64_t newest() const {
    int64_t t = INT64_MIN;
    for (const auto& r : rings) t = std::max(t, r->newestTs());
    return t;
  }
};

FlightRecorder::FlightRecorder(const FlightRecorderConfig& config, std::vector<FlightPortInfo> ports)
    : config_(config) {
  size_t queues = 0;
  for (const FlightPortInfo& p : ports) queues += p.queues;
  const size_t slot_bytes = 8 * slotWords(config.snap_length);
  const size_t capacity =
      std::bit_floor(std::max<size_t>(config.memory_bytes / slot_bytes / std::max<size_t>(queues, 1), 1));
  for (size_t i = 0; i < ports.size(); ++i) {
    auto p = std::make_unique<Port>();
    p->recorder = this;
    p->index = i;
    p->info = ports[i];
    for (size_t q = 0; q < ports[i].queues; ++q)
      p->rings.push_back(std::make_unique<Ring>(capacity, config.snap_length));
    memory_bytes_ += capacity * slot_bytes * ports[i].queues;
    ports_.push_back(std::move(p));
  }
}

absl::StatusOr<std::unique_ptr<FlightRecorder>> FlightRecorder::create(const FlightRecorderConfig& config,
                                                                       std::vector<FlightPortInfo> ports) {
  auto bad = [](const char* key, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("flight-recorder.", key, ": ", why));
  };
  if (config.directory.empty()) return bad("directory", "must be given");
  if (config.snap_length < 64 || config.snap_length > 65535) return bad("snap-length", "must be 64 to 65535 bytes");
  if (config.before_ns < 0 || config.before_ns > 60'000'000'000) return bad("before", "must be 0 to 60s");
  if (config.after_ns < 0 || config.after_ns > 60'000'000'000) return bad("after", "must be 0 to 60s");
  if (config.min_interval_ns < 0) return bad("min-interval", "must not be negative");
  if (config.max_files < 1) return bad("max-files", "must be at least 1");
  size_t queues = 0;
  for (const FlightPortInfo& p : ports) queues += p.queues;
  if (queues == 0) return absl::InvalidArgumentError("flight recorder: no capture queue to record");
  const uint64_t slot_bytes = 8 * slotWords(config.snap_length);
  const uint64_t least = slot_bytes * 1024 * queues;
  if (config.memory_bytes < least) {
    return bad("memory-bytes", absl::StrCat("too small: at least ", least, " for 1024 frames in each of ", queues,
                                            " capture queues at snap-length ", config.snap_length));
  }
  std::error_code ec;
  fs::create_directories(config.directory, ec);
  if (ec || !fs::is_directory(config.directory)) {
    return bad("directory", absl::StrCat("'", config.directory, "' cannot be made: ", ec.message()));
  }
  return std::unique_ptr<FlightRecorder>(new FlightRecorder(config, std::move(ports)));
}

FlightRecorder::~FlightRecorder() { stop(); }

FrameTap* FlightRecorder::tap(size_t port, size_t queue) { return ports_.at(port)->rings.at(queue).get(); }
EngineObserver* FlightRecorder::observer(size_t port) { return ports_.at(port).get(); }

void FlightRecorder::start() {
  enforceDiskBounds("");  // files of an earlier run count against the bounds too
  writer_ = std::thread([this] { writerLoop(); });
}

void FlightRecorder::stop() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

std::string FlightRecorder::request(size_t port, FlightTrigger trigger, int64_t start_ns, int64_t end_ns,
                                    std::string detail) {
  Port& p = *ports_[port];
  const auto t = static_cast<int>(trigger);
  std::unique_lock<std::mutex> lock(mu_);
  // Already inside the window of the newest file (written or owed): that file holds it.
  if (start_ns >= p.covered_from && end_ns <= p.covered_to) {
    p.stats.triggers[t][static_cast<int>(FlightResult::kInWindow)] += 1;
    return "";
  }
  const int64_t now = monoNs();
  if (p.last_request_mono != INT64_MIN && now - p.last_request_mono < config_.min_interval_ns) {
    p.stats.triggers[t][static_cast<int>(FlightResult::kRateLimited)] += 1;
    return "";
  }
  p.last_request_mono = now;
  p.covered_from = start_ns - config_.before_ns;
  p.covered_to = end_ns + config_.after_ns;
  Request r{port, trigger, start_ns, end_ns, std::move(detail), ""};
  r.path = (fs::path(config_.directory) / absl::StrCat("burstscope-", fileNamePart(p.info.name), "-", utcText(start_ns),
                                                       "-", flightTriggerName(trigger), ".pcapng"))
               .string();
  std::string path = r.path;
  pending_.push_back(std::move(r));
  lock.unlock();
  cv_.notify_all();
  return path;
}

void FlightRecorder::onInterval(size_t port, int64_t start_ns, int64_t end_ns, const TrainingReport* training) {
  Port& p = *ports_.at(port);
  if (p.analysed_from == INT64_MIN) p.analysed_from = start_ns;
  if (training == nullptr) return;
  const int64_t from = std::exchange(p.analysed_from, INT64_MIN);
  const DestinationReport* top = nullptr;
  for (const DestinationReport& d : training->destinations) {
    if (top == nullptr || d.max_sources > top->max_sources) top = &d;
  }
  if (config_.fanin_sources == 0 || top == nullptr || top->max_sources < config_.fanin_sources) return;
  request(port, FlightTrigger::kFanIn, from, end_ns,
          absl::StrCat(top->max_sources, " sources bursting toward ", top->host, " in one 100 us bin"));
}

std::vector<std::string> FlightRecorder::triggerNow() {
  std::vector<std::string> out;
  for (size_t i = 0; i < ports_.size(); ++i) {
    const int64_t t = ports_[i]->newest();
    if (t == INT64_MIN) {
      out.push_back(absl::StrCat(ports_[i]->info.name, ": no frame captured yet"));
      continue;
    }
    std::string path = request(i, FlightTrigger::kOnDemand, t, t, "requested");
    out.push_back(path.empty() ? absl::StrCat(ports_[i]->info.name,
                                              ": skipped (inside the last file's window, or sooner than "
                                              "flight-recorder.min-interval after it)")
                               : absl::StrCat(ports_[i]->info.name, ": ", path));
  }
  return out;
}

void FlightRecorder::writerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_ || !pending_.empty(); });
    if (signalled_.exchange(false, std::memory_order_relaxed)) {
      lock.unlock();
      // A signal has no one to answer, as POST has: what it did goes to the log, a line per port (a file to
      // come, or why none), in one write each so that other threads' lines do not cut into it.
      for (const std::string& line : triggerNow()) {
        const std::string text = absl::StrCat("burstscope run: flight recorder (SIGUSR2): ", line, "\n");
        std::fwrite(text.data(), 1, text.size(), stderr);
      }
      lock.lock();
    }
    if (pending_.empty()) {
      if (stopping_) return;
      continue;
    }
    const Request r = pending_.front();
    writing_ = true;
    lock.unlock();
    // The window's end must have passed on the port before its frames are copied out: wait for a newer frame,
    // for at most the window's after-part plus 2 s of wall time (an idle port sends none), never at a stop.
    const int64_t deadline = monoNs() + config_.after_ns + 2'000'000'000;
    // With several queues, a little past it on the newest: the others' last frames may still be on their way.
    const int64_t want =
        r.end_ns + config_.after_ns + (ports_[r.port]->rings.size() > 1 ? int64_t{50'000'000} : int64_t{0});
    while (ports_[r.port]->newest() < want && monoNs() < deadline) {
      {
        const std::lock_guard<std::mutex> check(mu_);
        if (stopping_) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    write(r);
    lock.lock();
    pending_.pop_front();
    writing_ = false;
    cv_.notify_all();
  }
}

void FlightRecorder::write(const Request& r) {
  Port& p = *ports_[r.port];
  const int64_t from = r.start_ns - config_.before_ns, to = r.end_ns + config_.after_ns;
  std::vector<FlightFrame> frames;
  uint64_t torn = 0;
  bool all_covered = true;
  for (const auto& ring : p.rings) {
    bool covered = false;
    ring->copyWindow(from, to, &frames, &torn, &covered);
    all_covered &= covered;
  }
  std::stable_sort(frames.begin(), frames.end(),
                   [](const FlightFrame& a, const FlightFrame& b) { return a.ts_ns < b.ts_ns; });
  std::string comment = absl::StrCat(
      "burstscope flight recorder: trigger=", flightTriggerName(r.trigger), " port=", p.info.name,
      " event_start=", isoText(r.start_ns), " event_end=", isoText(r.end_ns), " detail=\"", r.detail,
      "\" window_start=", isoText(from), " window_end=", isoText(to), " frames=", frames.size(), " torn=", torn);
  if (!all_covered && !frames.empty()) {
    absl::StrAppend(&comment, " note=\"the rings held frames from ", isoText(frames.front().ts_ns),
                    " only (flight-recorder.memory-bytes holds less than the window)\"");
  }
  uint64_t bytes = 0;
  const std::string part = r.path + ".part";
  absl::Status st = writeFlightPcapng(part, p.info.name, config_.snap_length, comment, frames, &bytes);
  std::error_code ec;
  if (st.ok()) {
    fs::rename(part, r.path, ec);
    if (ec) st = absl::UnavailableError(absl::StrCat(r.path, ": cannot be renamed into place: ", ec.message()));
  }
  if (!st.ok()) fs::remove(part, ec);
  std::unique_lock<std::mutex> lock(mu_);
  const auto t = static_cast<int>(r.trigger);
  p.stats.frames_torn += torn;
  if (!st.ok()) {
    p.stats.triggers[t][static_cast<int>(FlightResult::kFailed)] += 1;
    last_error_ = std::string(st.message());
    return;
  }
  p.stats.triggers[t][static_cast<int>(FlightResult::kWritten)] += 1;
  p.stats.frames_written += frames.size();
  bytes_written_ += bytes;
  last_file_ = r.path;
  lock.unlock();
  enforceDiskBounds(r.path);  // directory scans and removals never under mu_, which the workers' triggers take
}

// The recorder's files in the directory, oldest first (by the event time in their names, then the port); the
// oldest go until both bounds hold, never `keep` (the file just written, which an old capture's replay or a
// clock stepped back would otherwise sort first).
void FlightRecorder::enforceDiskBounds(const std::string& keep) {
  struct File {
    std::string time, path;
    uint64_t size;
  };
  std::vector<File> files;
  std::error_code ec;
  fs::directory_iterator it(config_.directory, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::directory_entry& e = *it;
    std::error_code fe;
    if (!e.is_regular_file(fe) || !isRecorderFile(e.path())) continue;
    const uintmax_t size = e.file_size(fe);
    if (fe) continue;  // gone meanwhile
    // burstscope-<port>-<YYYYmmddTHHMMSS.nnnnnnnnnZ>-<trigger>.pcapng: the time is the 26 characters before the
    // trigger; a name without one sorts first.
    const std::string name = e.path().filename().string();
    const size_t last = name.rfind('-');
    std::string time;
    if (last != std::string::npos && last >= 11 + 26 && name[last - 1] == 'Z' && name[last - 18] == 'T') {
      time = name.substr(last - 26, 26);
    }
    files.push_back(File{time, e.path().string(), static_cast<uint64_t>(size)});
  }
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.time != b.time ? a.time < b.time : a.path < b.path; });
  uint64_t total = 0;
  for (const File& f : files) total += f.size;
  size_t left = files.size(), removed = 0;
  for (const File& f : files) {
    if (left <= config_.max_files && total <= config_.max_disk_bytes) break;
    if (f.path == keep) continue;
    std::error_code re;
    if (fs::remove(f.path, re)) ++removed;
    total -= f.size;
    --left;
  }
  const std::lock_guard<std::mutex> lock(mu_);
  files_deleted_ += removed;
  disk_bytes_ = total;
  disk_files_ = left;
}

FlightRecorderStats FlightRecorder::stats() const {
  FlightRecorderStats s;
  const std::lock_guard<std::mutex> lock(mu_);
  for (const auto& p : ports_) {
    FlightPortStats ps = p->stats;
    ps.name = p->info.name;
    const int64_t newest = p->newest();
    int64_t oldest = INT64_MAX;
    for (const auto& r : p->rings) {
      const int64_t o = r->oldestTs();
      if (o != INT64_MIN) oldest = std::min(oldest, o);
    }
    ps.held_ns = newest != INT64_MIN && oldest != INT64_MAX ? std::max<int64_t>(0, newest - oldest) : 0;
    s.ports.push_back(ps);
  }
  s.bytes_written = bytes_written_;
  s.files_deleted = files_deleted_;
  s.disk_bytes = disk_bytes_;
  s.disk_files = disk_files_;
  s.memory_bytes = memory_bytes_;
  s.last_file = last_file_;
  s.last_error = last_error_;
  return s;
}

bool FlightRecorder::waitIdle(int64_t timeout_ns) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns), [&] { return pending_.empty() && !writing_; });
}

}  // namespace burstscope
