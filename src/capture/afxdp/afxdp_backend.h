// The AF_XDP capture backend: for a mirror port that stays with the kernel (no DPDK binding, no hugepages).
// Our XDP program (bpf/capture.bpf.c) timestamps each frame, cuts it to the snap length and redirects it
// to the AF_XDP socket of its RX queue; one thread per socket decodes the frames into the same per-queue
// record rings and workers the DPDK backend feeds. The XDP program's verdict counters, each socket's
// XDP_STATISTICS and our ring drops make up the ledger.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "burstscope/capture.h"
#include "burstscope/decode.h"
#include "src/capture/afxdp/xdp_program.h"

namespace burstscope {

struct AfXdpPortConfig {
  std::string interface;
  uint32_t queues = 0;  // RX queues to bind, from 0 (0: all the interface has)
  double link_bps = 0;  // capacity of the mirrored link (0: metrics' link speed, resolvePortLinks)
};

enum class ZeroCopy { kAuto, kOn, kOff };  // kAuto: zero-copy where the driver offers it, else copy
enum class XdpTimestamps { kAuto, kKernel, kNic };

struct AfXdpConfig {
  std::vector<AfXdpPortConfig> ports;
  XdpMode mode = XdpMode::kAuto;
  ZeroCopy zero_copy = ZeroCopy::kAuto;
  // kKernel: bpf_ktime_get_ns() when the XDP program runs, mapped to CLOCK_REALTIME. kNic: the NIC's RX
  // timestamp through the XDP metadata kfunc (native mode; the NIC clock must be synchronised to
  // CLOCK_REALTIME, e.g. by phc2sys). kAuto: kernel (NIC clocks are not assumed synchronised).
  XdpTimestamps timestamps = XdpTimestamps::kAuto;
  // UMEM: 8192 frames of 2 KiB (16 MiB) per socket; frames are cut to the snap length before they land,
  // so 2 KiB frames suffice unless the snap length is raised past 1792 bytes.
  uint32_t frames = 8192;      // UMEM frames per socket
  uint32_t frame_size = 2048;  // bytes per UMEM frame (2048 or 4096)
  uint32_t rx_ring = 4096;     // descriptors in each socket's RX ring (fill ring: 2 x `frames`)
  uint32_t batch = 64;
  // After a partial batch (the ring drained), the RX thread waits this long for frames to gather; 0: never.
  uint32_t coalesce_us = 500;
  uint32_t snaplen = 256;  // bytes of each frame copied to user space (0: all that fits a frame)
  bool ip_only = false;
  double resync_s = 1.0;                   // re-map CLOCK_MONOTONIC to CLOCK_REALTIME this often
  size_t ring_capacity = size_t{1} << 16;  // records per RX queue
  DecoderConfig decoder;
};

// Opens every port: attaches the program, creates and binds the sockets. Errors name the interface and,
// for attach failures, the XDP mode tried.
absl::StatusOr<std::unique_ptr<CaptureSource>> openAfXdp(const AfXdpConfig& config);

}  // namespace burstscope
