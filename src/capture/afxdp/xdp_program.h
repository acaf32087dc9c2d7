// The XDP capture program (bpf/capture.bpf.c) as user space sees it: configured through rodata before
// load, attached to one interface through libxdp, its XSKMAP filled with our sockets, its per-CPU verdict
// counters read back summed. Also finds and removes a program left attached by a run that crashed.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/capture_shared.h"
#include "burstscope/capture.h"

struct capture;
struct xdp_program;

namespace burstscope {

enum class XdpMode { kAuto, kNative, kSkb };  // kAuto: native (driver) mode where offered, else generic

const char* xdpModeName(XdpMode m);

// Where the program puts each redirected frame's metadata (bpf/capture_shared.h): the XDP metadata area
// (bpf_xdp_adjust_meta), or in front of the frame itself (bs_capture_head, bpf_xdp_adjust_head) for kernels whose
// verifier refuses that helper to XDP programs. kAuto: the metadata area where the kernel allows it
// (kernelAllowsXdpMetaArea), else in front of the frame.
enum class XdpMetaPlace { kAuto, kMetaArea, kInFrame };

struct XdpProgramConfig {
  bool ip_only = false;         // pass frames that are not IPv4/IPv6 to the kernel, counted as filtered
  uint32_t snaplen = 0;         // cut longer redirected frames to this many bytes (0: never)
  bool nic_timestamps = false;  // the bs_capture_nic variant: device-bound, asks the driver for RX timestamps
  bool bins = true;             // count every frame into 100 µs bins (off only to measure what they cost)
  XdpMetaPlace meta_place = XdpMetaPlace::kAuto;
};

// Whether this kernel lets XDP programs call bpf_xdp_adjust_meta (asked once; a failed probe says yes, and the
// load then says what the kernel refused).
bool kernelAllowsXdpMetaArea();
// Whether a program loaded with `c` writes the metadata in front of the frame: c.meta_place resolved (kAuto through
// kernelAllowsXdpMetaArea). The program's metaInFrame() once loaded; before, for what depends on it (the snap length).
bool metaInFrameFor(const XdpProgramConfig& c);

using XdpCounters = std::array<uint64_t, BS_STAT_COUNT>;

class XdpProgram {
 public:
  ~XdpProgram();
  XdpProgram(const XdpProgram&) = delete;
  XdpProgram& operator=(const XdpProgram&) = delete;

  // Opens and loads the program without attaching it (tests run it through bpf_prog_test_run_opts).
  static absl::StatusOr<std::unique_ptr<XdpProgram>> load(const XdpProgramConfig& config);

  // Opens the program and attaches it to `ifindex` in `mode` (kAuto: native, then generic). A burstscope
  // program already attached (a crashed run) is removed first and reported in `replaced`; another
  // program is an error naming it. The nic_timestamps variant is loaded bound to the device.
  static absl::StatusOr<std::unique_ptr<XdpProgram>> attach(const XdpProgramConfig& config, const std::string& ifname,
                                                            XdpMode mode, std::string* replaced);

  // Removes the program from the interface; idempotent. Counters stay readable.
  void detach();

  // Attaches the loaded program, as it is, to `ifname` (an interface re-created under the name it had): a
  // netlink attach by file descriptor, which needs CAP_NET_ADMIN only, so that it works after set-up dropped
  // the rest. Its maps and counters carry on. Not for the NIC-timestamp variant, bound to its first device.
  absl::Status moveTo(const std::string& ifname);

  int progFd() const;
  int xskMapFd() const;
  XdpCounters counters() const;  // summed over CPUs

  // The kernel's 100 µs bins (SPEC "Overload"). setBinClock keeps the program's CLOCK_REALTIME reckoning:
  // bpf_ktime_get_ns() + offset, offset = CLOCK_REALTIME - CLOCK_MONOTONIC. readBins appends the bins
  // [from, to) (bin numbers: start_ns / BS_BIN_NS) that hold frames, summed over CPUs, and returns how many of
  // the range's slots a later bin had already taken (their frames are lost to the series: read sooner).
  void setBinClock(int64_t realtime_minus_monotonic_ns);
  uint64_t readBins(uint64_t from, uint64_t to, std::vector<KernelBinCount>* out) const;
  // Whether the bins could be mapped into memory (mmap can fail: ENOMEM, a locked-down kernel); if not, why.
  bool hasBins() const { return bin_rings_ != nullptr; }
  const std::string& binsError() const { return bins_error_; }
  XdpMode mode() const { return mode_; }  // as attached
  // Whether redirected frames carry their metadata as their first sizeof(bs_xdp_meta) bytes (bs_capture_head)
  // rather than in the metadata area before them.
  bool metaInFrame() const { return meta_in_frame_; }
  const XdpProgramConfig& config() const { return config_; }

 private:
  XdpProgram() = default;

  capture* skel_ = nullptr;
  xdp_program* prog_ = nullptr;
  int ifindex_ = 0;
  XdpMode mode_ = XdpMode::kAuto;
  XdpProgramConfig config_;
  bool meta_in_frame_ = false;
  bool attached_ = false;
  void mapBins();

  // The program's bins mapped read-only: CPU ids x BS_BIN_SLOTS, CPU by CPU (bpf/capture.bpf.c).
  const bs_bin* bin_rings_ = nullptr;
  size_t bin_rings_bytes_ = 0;
  size_t bin_cpus_ = 0;
  std::string bins_error_;
};

// Names of programs burstscope attaches; a program by one of these names on an interface is ours.
bool isBurstscopeProgramName(const std::string& name);

// How many CPU ids a kernel CPU list such as /sys/devices/system/cpu/possible's ("0-3,8-11": 12) covers: the
// highest id + 1, which is more than the count where ids have holes (bpf_get_smp_processor_id gives ids;
// libbpf_num_possible_cpus counts, and libbpf 1.1 exports no parser of the list itself). 0 when malformed.
size_t cpuIdsOfMask(const std::string& mask);

}  // namespace burstscope
