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

}  // namespace burstscope
