#include "src/capture/common/link_watch.h"

#include <cstdio>

#include "absl/time/time.h"

namespace burstscope {

std::string utcMillis(int64_t ns) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixNanos(ns), absl::UTCTimeZone());
}

bool noteLinkChange(LinkState& s, bool up, int64_t now_ns, const char* backend, const std::string& port,
                    const char* why) {
  if (s.up == up) return false;
  std::fprintf(stderr, "burstscope: %s port '%s': link %s at %s (%s %.1f s)%s%s\n", backend, port.c_str(),
               up ? "up" : "down", utcMillis(now_ns).c_str(), up ? "down for" : "was up for",
               static_cast<double>(now_ns - s.since_ns) / 1e9, why ? ": " : "", why ? why : "");
  s.up = up;
  s.since_ns = now_ns;
  s.downs += up ? 0 : 1;
  return true;
}

bool QueueStallWatch::look(uint64_t progress, bool waiting) {
  const bool was = stalled_;
  if (progress != last_ || !waiting) {  // progress, or nothing to do
    last_ = progress;
    still_ = 0;
    stalled_ = false;
  } else if (++still_ >= looks_) {
    stalled_ = true;
  }
  return stalled_ != was;
}

void noteQueueStall(LinkState& s, size_t queue, bool stalled, int64_t now_ns, const char* backend,
                    const std::string& port, const char* what) {
  if (s.queue_stalled.size() <= queue) s.queue_stalled.resize(queue + 1, false);
  if (s.queue_stalled[queue] == stalled) return;
  if (stalled) {
    std::fprintf(stderr, "burstscope: %s port '%s': RX queue %zu stalled at %s (%s)\n", backend, port.c_str(), queue,
                 utcMillis(now_ns).c_str(), what);
  } else {
    std::fprintf(stderr, "burstscope: %s port '%s': RX queue %zu resumed at %s\n", backend, port.c_str(), queue,
                 utcMillis(now_ns).c_str());
  }
  s.queue_stalled[queue] = stalled;
  s.stalls += stalled ? 1 : 0;
}

}  // namespace burstscope
