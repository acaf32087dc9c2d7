// What the live backends share when they watch a port's link (docs/live-capture.md "Capture faults"): the one
// log line per change, its time format, and the LinkState bookkeeping, so that AF_XDP and DPDK say it alike.
#pragma once

#include <cstdint>
#include <string>

#include "burstscope/capture.h"

namespace burstscope {

// CLOCK_REALTIME ns as UTC to the millisecond: 2026-11-26T20:01:02.123Z.
std::string utcMillis(int64_t ns);

// The link of `backend` port `port` is `up` at `now_ns`: when that is a change, logs it once on stderr
// ("burstscope: af-xdp port 'eth1': link down at 2026-11-26T20:01:02.123Z (was up for 812.4 s)", then ": why" if
// given), sets `s.up` and `s.since_ns`, counts a down, and returns true; otherwise changes nothing.
bool noteLinkChange(LinkState& s, bool up, int64_t now_ns, const char* backend, const std::string& port,
                    const char* why = nullptr);

// An RX queue that stalls: its RX thread or lcore makes no progress while it has work, for `looks` looks in a
// row (1 s of the monitor's looks). AF_XDP: progress is a frame taken, work is frames waiting in the socket's
// RX ring (a queue with nothing waiting is idle, not stalled). DPDK: progress is a poll of the queue, and a
// busy-polling lcore always has work. Kept by the monitor thread, one per queue.
class QueueStallWatch {
 public:
  static constexpr int kLooks = 10;  // at the AF_XDP monitor's 100 ms
  explicit QueueStallWatch(int looks = kLooks) : looks_(looks) {}
  // One look: `progress` a count that grows while the queue is served, `waiting` whether it has work. True when
  // the state changed.
  bool look(uint64_t progress, bool waiting);
  bool stalled() const { return stalled_; }

 private:
  int looks_;
  uint64_t last_ = 0;
  int still_ = 0;  // looks in a row with work and no progress
  bool stalled_ = false;
};

// Queue `queue` of `backend` port `port` stalled (or resumed) at `now_ns`: logs it once on stderr ("burstscope:
// af-xdp port 'eth1': RX queue 0 stalled at ... (frames wait, none taken for 1 s)", `what` in the brackets),
// sets s.queue_stalled and counts a stall.
void noteQueueStall(LinkState& s, size_t queue, bool stalled, int64_t now_ns, const char* backend,
                    const std::string& port, const char* what);

}  // namespace burstscope
