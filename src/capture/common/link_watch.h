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

}  // namespace burstscope
