// The DPDK capture backend: EAL set-up, one RX queue per (port, queue) with RSS, poll-mode RX lcores that
// timestamp every packet and hand it to its queue's QueueProducer (include/burstscope/capture.h). This header is free
// of DPDK includes, so that only dpdk_backend.cc sees DPDK's compiler flags.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "burstscope/capture.h"
#include "burstscope/decode.h"

namespace burstscope {

struct DpdkPortConfig {
  std::string device;  // ethdev name ("net_pcap0", "0000:3b:00.0") or port id ("0")
  uint16_t rx_queues = 1;
  double link_bps = 0;  // capacity of the mirrored link (0: metrics' link speed, resolvePortLinks)
};

enum class TimestampMode { kAuto, kNic, kTsc };

struct DpdkConfig {
  std::vector<std::string> eal_args;  // EAL command line, without the program name
  std::vector<DpdkPortConfig> ports;
  uint32_t mbufs_per_port = 8191;
  uint16_t rx_descriptors = 1024;
  uint16_t burst = 32;
  size_t ring_capacity = size_t{1} << 16;  // records per RX queue
  // kAuto: the NIC's RX timestamp where the port offers RTE_ETH_RX_OFFLOAD_TIMESTAMP, the recorded
  // timestamps of net_pcap, else TSC. kNic fails on a port without it; kTsc always reads the TSC.
  TimestampMode timestamps = TimestampMode::kAuto;
  double tsc_resync_s = 1.0;
  // net_pcap only: deliver at `replay_speed` times the recorded pace (0: as fast as the lcore reads).
  double replay_speed = 0;
  DecoderConfig decoder;
};

// Initialises the EAL (once per process) and the ports. Errors name the port or EAL argument at fault.
absl::StatusOr<std::unique_ptr<CaptureSource>> openDpdk(const DpdkConfig& config);

}  // namespace burstscope
