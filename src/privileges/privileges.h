// Least privilege after set-up. Capture set-up needs capabilities (AF_XDP: CAP_BPF, CAP_PERFMON,
// CAP_NET_ADMIN, CAP_NET_RAW, CAP_IPC_LOCK; DPDK: what its devices need, often root); once the sockets,
// UMEMs, ports and the metrics listener exist, the process keeps only what shutting down needs. libcap does
// the work; this only chooses.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace burstscope {

// The capabilities kept after set-up: CAP_NET_ADMIN alone, to detach the XDP program we (or DPDK's
// net_af_xdp) attached; every other capability leaves the permitted, effective, inheritable and ambient
// sets, and the bounding set when CAP_SETPCAP allows. No-op (ok) for a process that holds none.
// Returns the names of what is left in the effective set, e.g. {"cap_net_admin"}.
absl::StatusOr<std::vector<std::string>> dropCapabilitiesAfterSetup();

// The same drop for the calling thread alone: for threads a library started before set-up ended (DPDK's
// lcores, created inside rte_eal_init, where libpsx cannot see them), called as they begin our work.
absl::Status dropThreadCapabilities();

}  // namespace burstscope
